// Errors and cancellation in every stage at every point end the run cleanly: one error
// naming the stage (or a cancelled result), every thread joined, no deadlock (a deadlock
// would hang the test until ctest's timeout).
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "core/error.h"
#include "pipeline/pipeline.h"
#include "pipeline/synthetic.h"

using namespace rtf;
using namespace rtf::pipe;

namespace {

enum class Point { begin, first_item, late_item, finish };
enum class Action { throw_std, throw_rtf, cancel, sigint };

const char *name(Point p) {
    switch (p) {
        case Point::begin: return "begin";
        case Point::first_item: return "first_item";
        case Point::late_item: return "late_item";
        case Point::finish: return "finish";
    }
    return "?";
}

// Passes items through (the source emits n), with a small cost, and misbehaves once at `point`.
class FaultyStage : public Stage {
public:
    FaultyStage(std::string n, bool source, bool armed, Point point, Action action, CancelToken *token)
        : Stage({std::move(n), 1, {}, -1, "CPU"}), source_(source), armed_(armed), point_(point), action_(action),
          token_(token) {}
    void begin(StageContext &ctx) override {
        ctx_ = &ctx;
        if (armed_ && point_ == Point::begin) trip();
    }
    void process(Item &&in, Emitter &out) override {
        int n = source_ ? 8 : 1;
        for (int i = 0; i < n; ++i) {
            if (armed_ && ((point_ == Point::first_item && count_ == 0) || (point_ == Point::late_item && count_ == 5)))
                trip();
            ++count_;
            ctx_->sleep_ms(0.2);
            Item o = source_ ? Item{} : std::move(in);
            o.audio_ms = 10;
            out.emit(std::move(o));
        }
    }
    void finish(Emitter &) override {
        if (armed_ && point_ == Point::finish) trip();
    }

private:
    void trip() {
        switch (action_) {
            case Action::throw_std: throw std::runtime_error("boom in " + spec().name);
            case Action::throw_rtf: throw_setup("model file missing for " + spec().name);
            case Action::cancel: token_->cancel(); return;
            case Action::sigint: std::raise(SIGINT); return;
        }
    }
    bool source_, armed_;
    Point point_;
    Action action_;
    CancelToken *token_;
    StageContext *ctx_ = nullptr;
    int count_ = 0;
};

struct Case {
    int stage;
    Point point;
    Schedule schedule;
};

void run_case(const Case &c, Action action) {
    CancelToken token;
    std::vector<std::unique_ptr<FaultyStage>> owned;
    const char *names[] = {"llm", "tts", "t2w"};
    for (int i = 0; i < 3; ++i)
        owned.push_back(std::make_unique<FaultyStage>(names[i], i == 0, i == c.stage, c.point, action, &token));
    std::vector<Stage *> st;
    for (auto &s : owned) st.push_back(s.get());
    PipelineConfig pc;
    pc.schedule = c.schedule;
    pc.depths = {1, 1};
    pc.cancel = &token;
    pc.cancel_poll_ms = 1;
    std::string where = std::string(names[c.stage]) + " at " + name(c.point) + " " + to_string(c.schedule);
    if (action == Action::throw_std || action == Action::throw_rtf) {
        try {
            run_pipeline(st, Item{}, nullptr, pc);
            ADD_FAILURE() << "no error: " << where;
        } catch (const Error &e) {
            std::string msg = e.what();
            EXPECT_NE(msg.find(std::string("stage '") + names[c.stage] + "'"), std::string::npos) << msg;
            EXPECT_EQ(e.kind(), action == Action::throw_rtf ? ErrorKind::Setup : ErrorKind::Runtime) << where;
        }
    } else {
        std::unique_ptr<SigintGuard> guard;
        if (action == Action::sigint) guard = std::make_unique<SigintGuard>(token);
        RunResult r = run_pipeline(st, Item{}, nullptr, pc);
        // Cancelled at finish() of the last stage may come after every chunk: then the run
        // may also complete before the poll sees the token. Otherwise it must say cancelled.
        if (c.point != Point::finish) {
            EXPECT_TRUE(r.cancelled) << where;
        }
        // What reached the sink before the stop is intact: at most the source's 8 items, in
        // order, none twice, each within the run (times from the request).
        ASSERT_LE(r.record.chunks.size(), 8u) << where;
        for (size_t i = 0; i < r.record.chunks.size(); ++i) {
            EXPECT_EQ(r.record.chunks[i].index, static_cast<int64_t>(i)) << where;
            EXPECT_GE(r.record.chunks[i].arrival_ms, 0) << where;
            EXPECT_LE(r.record.chunks[i].arrival_ms, r.record.end_ms) << where;
        }
    }
}

std::vector<Case> all_cases() {
    std::vector<Case> out;
    for (int s = 0; s < 3; ++s)
        for (Point p : {Point::begin, Point::first_item, Point::late_item, Point::finish})
            for (Schedule sc : {Schedule::pipelined, Schedule::lockstep, Schedule::sequential}) out.push_back({s, p, sc});
    return out;
}

}  // namespace

TEST(PipelineErrors, ExceptionInAnyStageAtAnyPointStopsCleanly) {
    for (const Case &c : all_cases()) run_case(c, Action::throw_std);
}

TEST(PipelineErrors, RtfErrorKeepsItsKindAndGetsTheStageName) {
    for (const Case &c : all_cases())
        if (c.schedule == Schedule::pipelined) run_case(c, Action::throw_rtf);
}

TEST(PipelineErrors, CancellationFromAnyStageAtAnyPoint) {
    for (const Case &c : all_cases()) run_case(c, Action::cancel);
}

TEST(PipelineErrors, SigintCancelsThroughTheGuard) {
    run_case({1, Point::late_item, Schedule::pipelined}, Action::sigint);
    run_case({2, Point::first_item, Schedule::lockstep}, Action::sigint);
}

TEST(PipelineErrors, CancelInterruptsLongVirtualSleeps) {
    // Every stage sleeps 1e9 virtual ms; a cancel from outside must still end the run.
    SimulateConfig cfg = SimulateConfig::defaults();
    for (auto &s : cfg.stages) s.cost_ms = 1e9;
    auto owned = cfg.make_stages();
    std::vector<Stage *> st;
    for (auto &s : owned) st.push_back(s.get());
    CancelToken token;
    token.cancel();  // already tripped before the run
    PipelineConfig pc;
    pc.cancel = &token;
    pc.cancel_poll_ms = 1;
    RunResult r = run_pipeline(st, Item{}, nullptr, pc);
    EXPECT_TRUE(r.cancelled);
    EXPECT_TRUE(r.record.chunks.empty());
}

TEST(PipelineErrors, SinkErrorIsReportedAsSink) {
    SimulateConfig cfg = SimulateConfig::defaults();
    for (auto &s : cfg.stages) s.cost_ms = 0;
    cfg.n_chunks = 50;
    auto owned = cfg.make_stages();
    std::vector<Stage *> st;
    for (auto &s : owned) st.push_back(s.get());
    int n = 0;
    try {
        run_pipeline(st, Item{}, [&](const Item &) { if (++n == 3) throw std::runtime_error("disk full"); },
                     PipelineConfig{});
        FAIL();
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Runtime);
        EXPECT_NE(std::string(e.what()).find("stage 'sink' failed: disk full"), std::string::npos) << e.what();
    }
}

namespace {

// A stage blocked in a call that polls nothing (a decode merged with other streams' waits
// for them) until interrupt() wakes it, which then throws as an interrupted engine does.
class BlockingStage : public Stage {
public:
    explicit BlockingStage(std::string n) : Stage({std::move(n), 1, {}, -1, "CPU"}) {}
    void process(Item &&, Emitter &out) override {
        out.emit(Item{});  // one item out, then the blocking call
        std::unique_lock<std::mutex> l(mu_);
        blocked_ = true;
        cv_.notify_all();
        cv_.wait(l, [&] { return woken_; });
        throw Error(ErrorKind::Runtime, "tts: decode cancelled");
    }
    void interrupt() noexcept override {
        std::lock_guard<std::mutex> l(mu_);
        ++interrupts_;
        woken_ = true;
        cv_.notify_all();
    }
    void wait_blocked() {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return blocked_; });
    }
    int interrupts() {
        std::lock_guard<std::mutex> l(mu_);
        return interrupts_;
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool blocked_ = false, woken_ = false;
    int interrupts_ = 0;
};

}  // namespace

TEST(PipelineErrors, CancelInterruptsABlockedStageAndItsThrowIsTheStopNotAFailure) {
    BlockingStage src("source");
    SimulateConfig cfg = SimulateConfig::defaults();
    cfg.stages.resize(1);
    cfg.stages[0].cost_ms = 0;
    auto rest = cfg.make_stages();
    CancelToken token;
    PipelineConfig pc;
    pc.cancel = &token;
    pc.cancel_poll_ms = 1;
    std::thread canceller([&] {
        src.wait_blocked();
        token.cancel();
    });
    RunResult r;
    EXPECT_NO_THROW(r = run_pipeline({&src, rest[0].get()}, Item{}, nullptr, pc));
    canceller.join();
    EXPECT_TRUE(r.cancelled);
    EXPECT_EQ(src.interrupts(), 1);
}

TEST(PipelineErrors, AnotherStagesErrorInterruptsABlockedStageAndIsTheOneReported) {
    BlockingStage src("source");
    FaultyStage bad("bad", false, true, Point::first_item, Action::throw_rtf, nullptr);
    try {
        run_pipeline({&src, &bad}, Item{}, nullptr, PipelineConfig{});
        ADD_FAILURE() << "no error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("stage 'bad'"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find("decode cancelled"), std::string::npos) << e.what();
    }
    EXPECT_EQ(src.interrupts(), 1);
}
