// DecodeBatcher's join / leave / merge logic on a fake backend (labels unit + tsan): no
// libllama, no timing assertions. The fake writes, for every output row, the value
// seq * 1000 + position into the row, so each stream can check it got its own rows back.
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "models/lm/decode-batcher.h"

using namespace rtf;
using namespace rtf::lm;

namespace {

struct Event {
    std::string kind;            // "decode" or "rm"
    std::vector<int> seqs;       // decode: the parts' sequences in order; rm: {seq, pos0}
    std::vector<int> rows;       // decode: the parts' row counts
};

class FakeBackend final : public BatchBackend {
public:
    static constexpr int kEmbd = 4;
    void decode(std::span<const BatchPart> parts) override {
        {
            std::unique_lock<std::mutex> l(mu);
            Event e{"decode", {}, {}};
            for (const auto &p : parts) {
                e.seqs.push_back(p.seq);
                e.rows.push_back(p.req->n);
            }
            log.push_back(e);
            in_decode = true;
            cv.notify_all();
            cv.wait(l, [&] { return !hold; });  // a test may hold a decode open
            in_decode = false;
            if (fail_next) {
                fail_next = false;
                throw std::runtime_error("fake backend failure");
            }
        }
        for (const auto &p : parts) {
            DecodeResult &o = *p.out;
            o.n_out = p.req->all_outputs ? p.req->n : 1;
            o.n_embd = kEmbd;
            o.n_vocab = 0;
            o.embd.assign(static_cast<size_t>(o.n_out) * kEmbd, 0.0f);
            for (int j = 0; j < o.n_out; ++j) {
                const int pos = p.req->pos0 + (p.req->all_outputs ? j : p.req->n - 1);
                for (int k = 0; k < kEmbd; ++k)
                    o.embd[static_cast<size_t>(j) * kEmbd + static_cast<size_t>(k)] = static_cast<float>(p.seq * 1000 + pos);
            }
        }
    }
    void seq_rm(int seq, int pos0) override {
        std::lock_guard<std::mutex> l(mu);
        log.push_back({"rm", {seq, pos0}, {}});
    }
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Event> log;
    bool hold = false, in_decode = false, fail_next = false;
};

struct Fixture {
    FakeBackend *fake = nullptr;
    std::shared_ptr<DecodeBatcher> b;
    explicit Fixture(int n_streams, int max_rows = 512, double gather_ms = 10000) {
        auto f = std::make_unique<FakeBackend>();
        fake = f.get();
        BatcherConfig c;
        c.name = "tts";
        c.n_streams = n_streams;
        c.max_rows = max_rows;
        c.gather_ms = gather_ms;
        c.bound_by_decode_time = false;  // the merge rule alone decides (deterministic here)
        b = std::make_shared<DecodeBatcher>(c, std::move(f));
    }
    std::vector<Event> log() {
        std::lock_guard<std::mutex> l(fake->mu);
        return fake->log;
    }
};

// The scheduler state of thread `tid` of this process as the kernel reports it ('R' running,
// 'S' sleeping: blocked on a futex here, ...), or 0 when it cannot be read (the thread ended).
char thread_state(pid_t tid) {
    std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
    std::string stat;
    if (!f || !std::getline(f, stat)) return 0;
    const auto p = stat.rfind(')');  // "tid (comm) S ...": comm may hold spaces and parentheses
    return p != std::string::npos && p + 2 < stat.size() ? stat[p + 2] : 0;
}

DecodeRequest tokens_req(const std::vector<int32_t> &toks, int pos0, bool all = false) {
    DecodeRequest r;
    r.tokens = toks.data();
    r.n = static_cast<int>(toks.size());
    r.pos0 = pos0;
    r.all_outputs = all;
    r.want_embd = true;
    return r;
}

}  // namespace

TEST(DecodeBatcher, ActiveStreamsMergeIntoOneDecodeAndGetTheirOwnRows) {
    Fixture fx(3);
    std::vector<std::unique_ptr<DecodeBatcher::Stream>> s;
    for (int i = 0; i < 3; ++i) s.push_back(fx.b->join());
    for (auto &x : s) x->set_active(true);
    std::vector<int> streams(3, 0);
    std::vector<float> got(3, -1);
    std::vector<std::thread> th;
    const std::vector<int32_t> one{7};
    for (int i = 0; i < 3; ++i)
        th.emplace_back([&, i] {
            const DecodeResult &r = s[static_cast<size_t>(i)]->decode(tokens_req(one, 10 + i));
            streams[static_cast<size_t>(i)] = r.batch_streams;
            got[static_cast<size_t>(i)] = r.embd_row(0)[0];
        });
    for (auto &t : th) t.join();
    const auto log = fx.log();
    ASSERT_EQ(log.size(), 1u);  // every active stream pending -> exactly one decode
    EXPECT_EQ(log[0].seqs.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(streams[static_cast<size_t>(i)], 3);
        EXPECT_EQ(got[static_cast<size_t>(i)], static_cast<float>(i * 1000 + 10 + i));  // seq i, position 10+i
        EXPECT_EQ(s[static_cast<size_t>(i)]->n_decodes(), 1);
        EXPECT_EQ(s[static_cast<size_t>(i)]->sum_batch(), 3);
    }
    const auto st = fx.b->stats();
    EXPECT_EQ(st.n_decodes, 1);
    EXPECT_EQ(st.n_requests, 3);
    EXPECT_DOUBLE_EQ(st.mean_batch(), 3.0);
    EXPECT_EQ(st.step_count[2], 1);  // one step decode of 3 streams
}

TEST(DecodeBatcher, InactiveStreamIsNotWaitedFor) {
    Fixture fx(2);
    auto a = fx.b->join(), b = fx.b->join();
    b->set_active(false);  // joined, idle: a's decode must not wait for it (gather is 10 s here)
    const std::vector<int32_t> t{1, 2, 3};
    const DecodeResult &r = a->decode(tokens_req(t, 0, /*all=*/true));
    EXPECT_EQ(r.batch_streams, 1);
    ASSERT_EQ(r.n_out, 3);
    EXPECT_EQ(r.embd_row(2)[0], 2.0f);  // seq 0, position 2
}

TEST(DecodeBatcher, RequestsAreWholeAndDecodesStayWithinMaxRows) {
    Fixture fx(3, /*max_rows=*/8);
    std::vector<std::unique_ptr<DecodeBatcher::Stream>> s;
    for (int i = 0; i < 3; ++i) s.push_back(fx.b->join());
    for (auto &x : s) x->set_active(true);
    const std::vector<int32_t> five(5, 1);
    std::vector<std::thread> th;
    for (int i = 0; i < 3; ++i)
        th.emplace_back([&, i] {
            s[static_cast<size_t>(i)]->decode(tokens_req(five, 0));
            s[static_cast<size_t>(i)]->set_active(false);  // done: the others need not wait for it
        });
    for (auto &t : th) t.join();
    int total = 0;
    for (const auto &e : fx.log()) {
        int rows = 0;
        for (int n : e.rows) {
            EXPECT_EQ(n, 5);  // never split
            rows += n;
        }
        EXPECT_LE(rows, 8);
        total += rows;
    }
    EXPECT_EQ(total, 15);
    const std::vector<int32_t> nine(9, 1);
    try {
        s[0]->decode(tokens_req(nine, 0));
        FAIL() << "a request over max_rows must be refused";
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Usage);
        EXPECT_NE(std::string(e.what()).find("9 rows"), std::string::npos) << e.what();
    }
}

TEST(DecodeBatcher, JoinBeyondTheSequencesIsRefusedAndLeaveFreesTheLowest) {
    Fixture fx(2);
    auto a = fx.b->join();
    auto b = fx.b->join();
    EXPECT_EQ(a->seq(), 0);
    EXPECT_EQ(b->seq(), 1);
    EXPECT_THROW(fx.b->join(), Error);
    a.reset();
    const auto log = fx.log();
    ASSERT_FALSE(log.empty());
    EXPECT_EQ(log.back().kind, "rm");  // leaving cleared sequence 0 entirely
    EXPECT_EQ(log.back().seqs, (std::vector<int>{0, 0}));
    auto c = fx.b->join();
    EXPECT_EQ(c->seq(), 0);
    EXPECT_EQ(fx.b->n_joined(), 2);
}

// The race this is named for: a stream leaving (its destructor clears its sequence) while a
// decode of another stream runs. The interleaving is forced, not hoped for: a's decode is held
// open in the fake backend until the leaving thread has either cleared its sequence (the bug:
// a seq_rm inside a running decode) or is blocked waiting for the decode (observed from the
// kernel's view of that thread: sleeping, stably, after it began to leave); only then is the
// decode let go. Nothing here is a timing guess that a slow machine could fail: the waits are
// for states, bounded only against a hang.
TEST(DecodeBatcher, StreamLeavingMidBatchWaitsForTheDecodeAndOthersGoOn) {
    if (!std::filesystem::exists("/proc/self/task"))
        GTEST_SKIP() << "no /proc/self/task: the leaving thread cannot be seen blocked, so the race cannot be forced";
    Fixture fx(2);
    auto a = fx.b->join();
    auto b = fx.b->join();
    {
        std::lock_guard<std::mutex> l(fx.fake->mu);
        fx.fake->hold = true;
    }
    const std::vector<int32_t> one{1};
    float got = -1;
    std::thread ta([&] { got = a->decode(tokens_req(one, 4)).embd_row(0)[0]; });
    {
        std::unique_lock<std::mutex> l(fx.fake->mu);
        fx.fake->cv.wait(l, [&] { return fx.fake->in_decode; });  // a's decode is running (held)
    }
    std::atomic<bool> left{false};
    std::atomic<pid_t> leaver{0};
    std::thread tb([&] {
        leaver = static_cast<pid_t>(::syscall(SYS_gettid));
        b.reset();  // leaves while a's decode runs
        left = true;
    });
    // Wait (a's decode still held) until the leaving thread has cleared its sequence or left
    // (the bug), or sits blocked inside the leave. Bounded at 60 s against a hang.
    const auto t0 = std::chrono::steady_clock::now();
    int blocked_polls = 0;
    bool rm_during_decode = false;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
        {
            std::lock_guard<std::mutex> l(fx.fake->mu);
            rm_during_decode = fx.fake->log.size() > 1;
        }
        if (rm_during_decode || left) break;
        const pid_t tid = leaver;
        blocked_polls = tid != 0 && thread_state(tid) == 'S' ? blocked_polls + 1 : 0;
        if (blocked_polls >= 5) break;  // asleep on 5 polls over >= 50 ms: blocked, not passing through
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // The leave must not have cleared anything, nor returned, while the decode runs.
    EXPECT_FALSE(rm_during_decode) << "the leaving stream cleared its sequence inside a running decode";
    EXPECT_FALSE(left) << "the leave returned while a decode of another stream was running";
    EXPECT_GE(blocked_polls, 5) << "the leaving thread was never seen blocked in the leave (the race was not exercised)";
    {
        std::lock_guard<std::mutex> l(fx.fake->mu);
        fx.fake->hold = false;
    }
    fx.fake->cv.notify_all();
    ta.join();
    tb.join();
    EXPECT_TRUE(left);
    EXPECT_EQ(got, 4.0f);
    const auto log = fx.log();
    ASSERT_EQ(log.size(), 2u);
    EXPECT_EQ(log[0].kind, "decode");
    EXPECT_EQ(log[1].kind, "rm");  // the clear came after the running decode, not inside it
    EXPECT_EQ(log[1].seqs[0], 1);
    // a goes on alone
    EXPECT_EQ(a->decode(tokens_req(one, 5)).batch_streams, 1);
}

TEST(DecodeBatcher, AFailedDecodeReachesEveryStreamInItNamingTheStage) {
    Fixture fx(2);
    auto a = fx.b->join();
    auto b = fx.b->join();
    a->set_active(true);
    b->set_active(true);
    {
        std::lock_guard<std::mutex> l(fx.fake->mu);
        fx.fake->fail_next = true;
    }
    const std::vector<int32_t> one{1};
    std::vector<std::string> errors(2);
    std::vector<std::thread> th;
    DecodeBatcher::Stream *ss[2] = {a.get(), b.get()};
    for (int i = 0; i < 2; ++i)
        th.emplace_back([&, i] {
            try {
                ss[i]->decode(tokens_req(one, 0));
            } catch (const Error &e) {
                EXPECT_EQ(e.kind(), ErrorKind::Runtime);
                errors[static_cast<size_t>(i)] = e.what();
            }
        });
    for (auto &t : th) t.join();
    ASSERT_EQ(fx.log().size(), 1u);  // one merged decode failed ...
    for (const auto &e : errors) {  // ... and both of its streams heard of it
        EXPECT_EQ(e.rfind("tts: ", 0), 0u) << e;
        EXPECT_NE(e.find("fake backend failure"), std::string::npos) << e;
    }
    // the batcher goes on
    b->set_active(false);
    EXPECT_EQ(a->decode(tokens_req(one, 0)).embd_row(0)[0], 0.0f);
}

TEST(DecodeBatcher, CancelReleasesAPendingRequestUntilResume) {
    Fixture fx(2);
    auto a = fx.b->join();
    auto b = fx.b->join();
    a->set_active(true);
    b->set_active(true);  // b never submits: a's request waits for it (gather 10 s)
    const std::vector<int32_t> one{1};
    std::string error;
    std::thread ta([&] {
        try {
            a->decode(tokens_req(one, 0));
        } catch (const Error &e) {
            error = e.what();
        }
    });
    a->cancel();  // before or after a's request is queued: either way it must not run
    ta.join();
    EXPECT_NE(error.find("tts: decode cancelled"), std::string::npos) << error;
    EXPECT_THROW(a->decode(tokens_req(one, 0)), Error);  // sticky until resume()
    b->set_active(false);
    a->resume();
    EXPECT_EQ(a->decode(tokens_req(one, 3)).embd_row(0)[0], 3.0f);
    for (const auto &e : fx.log()) EXPECT_EQ(e.seqs.size(), 1u);  // the cancelled request never ran
    EXPECT_EQ(fx.b->stats().n_decodes, 1);
}

TEST(DecodeBatcher, ManyStreamsJoinLeaveAndDecodeConcurrently) {
    // Stress for TSan: streams join, decode a few steps and leave, from many threads.
    FakeBackend *fake = nullptr;
    auto f = std::make_unique<FakeBackend>();
    fake = f.get();
    BatcherConfig c;
    c.name = "llm";
    c.n_streams = 4;
    c.gather_ms = 1;
    auto b = std::make_shared<DecodeBatcher>(c, std::move(f));
    std::atomic<int> bad{0};
    std::vector<std::thread> th;
    for (int t = 0; t < 4; ++t)
        th.emplace_back([&] {
            for (int round = 0; round < 5; ++round) {
                auto s = b->join();
                s->set_active(true);
                for (int pos = 0; pos < 8; ++pos) {
                    const std::vector<int32_t> one{pos};
                    const float v = s->decode(tokens_req(one, pos)).embd_row(0)[0];
                    if (v != static_cast<float>(s->seq() * 1000 + pos)) ++bad;
                }
                s->set_active(false);
            }
        });
    for (auto &x : th) x.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(b->stats().n_requests, 4 * 5 * 8);
    EXPECT_EQ(b->n_joined(), 0);
    (void)fake;
}
