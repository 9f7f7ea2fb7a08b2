// Golden check of the TTS stage against the reference runtime's dumps
// (shared/golden/minicpmo45-tts, README "What counts as a match", criteria 1-6).
// Needs the full-shape twin made by shared/tools/tts_twin.py (see tests/lm/tts-golden.sh).
// Label: slow. Figures are printed as "GOLDEN ..." lines.
#include <gtest/gtest.h>

#include "golden-files.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "models/lm/code-sampler.h"
#include "models/lm/condition.h"
#include "models/lm/tts-engine.h"

using namespace rtf::lm;
namespace fs = std::filesystem;

namespace {

using rtf::test::Reader;
using rtf::test::slurp;
std::string twin_dir() { return rtf::test::tts_twin_dir(); }
std::string golden_dir() { return rtf::test::golden_dir("minicpmo45-tts"); }

struct Recv { int msg, fin; std::vector<int32_t> ids; std::vector<float> hid; };
struct Prefill { int msg, phase, pos0, n; std::vector<float> rows; };
struct Step { int msg, phase, t, n_past, code; float u; std::vector<float> z; };
struct Codes { int msg, fin; std::vector<int32_t> codes; };

struct Golden {
    std::vector<Recv> recv;
    std::vector<Prefill> pre;
    std::vector<Step> steps;
    std::vector<Codes> codes;
    std::vector<std::pair<std::vector<int32_t>, bool>> t2w;  // groups handed to T2W
    int d = 0, d_llm = 0;
};

Golden load_golden(int d) {
    Golden g;
    g.d = d;
    const auto recv = slurp(golden_dir() + "/tts_recv.bin");
    for (Reader r{recv}; !r.done();) {
        Recv m;
        m.msg = r.i32(); m.fin = r.i32(); const int n = r.i32(); g.d_llm = r.i32();
        m.ids = r.vec<int32_t>(static_cast<size_t>(n));
        m.hid = r.vec<float>(static_cast<size_t>(n * g.d_llm));
        g.recv.push_back(std::move(m));
    }
    const auto pre = slurp(golden_dir() + "/tts_prefill.bin");
    for (Reader r{pre}; !r.done();) {
        Prefill p;
        p.msg = r.i32(); p.phase = r.i32(); p.n = r.i32(); p.pos0 = r.i32();
        p.rows = r.vec<float>(static_cast<size_t>(p.n * d));
        g.pre.push_back(std::move(p));
    }
    const auto st = slurp(golden_dir() + "/tts_steps.bin");
    for (Reader r{st}; !r.done();) {
        Step s;
        s.msg = r.i32(); s.phase = r.i32(); s.t = r.i32(); s.n_past = r.i32(); s.code = r.i32(); s.u = r.f32();
        s.z = r.vec<float>(static_cast<size_t>(d));
        g.steps.push_back(std::move(s));
    }
    const auto cd = slurp(golden_dir() + "/tts_codes.bin");
    for (Reader r{cd}; !r.done();) {
        Codes c;
        c.msg = r.i32(); c.fin = r.i32(); const int n = r.i32();
        c.codes = r.vec<int32_t>(static_cast<size_t>(n));
        g.codes.push_back(std::move(c));
    }
    std::ifstream t(golden_dir() + "/t2w_in.txt");
    for (std::string line; std::getline(t, line);) {
        const bool fin = line.find("is_final=1") != std::string::npos;
        std::istringstream ss(line.substr(line.find(':') + 1));
        std::vector<int32_t> c;
        for (int32_t v; ss >> v;) c.push_back(v);
        g.t2w.emplace_back(std::move(c), fin);
    }
    return g;
}

float max_abs_diff(const float *a, const float *b, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
    return m;
}

// Replays recorded hidden states instead of running the transformer; records what is fed.
class ReplayForward final : public TtsForward {
public:
    explicit ReplayForward(const Golden &g) : g_(g) {}
    void clear() override {}
    void decode(const float *, int, int) override {}
    std::span<const float> hidden() override {
        if (next_ >= g_.steps.size()) throw std::runtime_error("replay: more sampling steps than the golden run");
        return g_.steps[next_++].z;
    }
    int n_ctx() const override { return 4096; }
    size_t used() const { return next_; }

private:
    const Golden &g_;
    size_t next_ = 0;
};

class TtsGolden : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        const std::string tts = twin_dir() + "/tts/MiniCPM-o-4_5-tts-F16.gguf";
        if (!fs::exists(tts)) return;
        TtsConfig c;
        c.model_path = tts;
        c.placement.n_threads = 2;
        c.reference_noop_feeds = true;
        c.host_logits = true;
        engine_ = new TtsEngine(c);
        golden_ = new Golden(load_golden(engine_->dims().n_embd));
    }
    static void TearDownTestSuite() {
        delete engine_;
        delete golden_;
        engine_ = nullptr;
        golden_ = nullptr;
    }
    void SetUp() override {
        if (!engine_)
            FAIL() << "full-shape TTS twin not found in " << twin_dir() << "; make it with: GGUF_PY=<llama.cpp>/gguf-py "
                   << "/usr/bin/python3 " << RTF_SHARED_DIR << "/tools/tts_twin.py " << twin_dir()
                   << "  (or run tests/lm/tts-golden.sh)";
    }
    static TtsEngine *engine_;
    static Golden *golden_;
};
TtsEngine *TtsGolden::engine_ = nullptr;
Golden *TtsGolden::golden_ = nullptr;

// Criterion 1: received pairs equal the twin's input; the filter keeps 24 of 25.
TEST_F(TtsGolden, C1_ReceivedPairsAndFilter) {
    const Golden &g = *golden_;
    ASSERT_EQ(g.recv.size(), 3u);
    size_t kept = 0, total = 0;
    for (const auto &m : g.recv) {
        const std::string base = twin_dir() + "/input/msg" + std::to_string(m.msg);
        const auto ids = slurp(base + ".ids.i32"), hid = slurp(base + ".hid.f32");
        ASSERT_EQ(ids.size(), m.ids.size() * 4);
        EXPECT_EQ(0, std::memcmp(ids.data(), m.ids.data(), ids.size())) << "msg" << m.msg;
        ASSERT_EQ(hid.size(), m.hid.size() * 4);
        EXPECT_EQ(0, std::memcmp(hid.data(), m.hid.data(), hid.size())) << "msg" << m.msg;
        std::vector<int32_t> fi;
        std::vector<float> fh;
        filter_valid(m.ids, m.hid, g.d_llm, fi, fh);
        kept += fi.size();
        total += m.ids.size();
    }
    EXPECT_EQ(kept, 24u);
    EXPECT_EQ(total, 25u);
    std::printf("GOLDEN c1 received pairs: %zu, kept by the filter: %zu\n", total, kept);
}

// Criterion 2: condition rows (first prefill of each message, BOS row included) within 1e-5.
TEST_F(TtsGolden, C2_ConditionRows) {
    const Golden &g = *golden_;
    const int d = g.d;
    float worst = 0;
    int bit_exact = 0;
    for (const auto &m : g.recv) {
        std::vector<int32_t> fi;
        std::vector<float> fh, rows;
        filter_valid(m.ids, m.hid, g.d_llm, fi, fh);
        ConditionBuilder cb(engine_->weights(), 2);
        cb.rows(fi, fh, rows);
        std::vector<float> bos(static_cast<size_t>(d));
        engine_->weights().text_row(kAudioBosRow, bos.data());
        rows.insert(rows.end(), bos.begin(), bos.end());
        const Prefill *first = nullptr;
        for (const auto &p : g.pre) if (p.msg == m.msg) { first = &p; break; }
        ASSERT_TRUE(first);
        ASSERT_EQ(first->rows.size(), rows.size()) << "msg" << m.msg;
        const float e = max_abs_diff(first->rows.data(), rows.data(), rows.size());
        EXPECT_LE(e, 1e-5f) << "msg" << m.msg;
        bit_exact += std::memcmp(first->rows.data(), rows.data(), rows.size() * 4) == 0;
        worst = std::max(worst, e);
    }
    std::printf("GOLDEN c2 condition rows: max|d| = %.3e (limit 1e-5), bit-exact messages: %d of 3\n", worst, bit_exact);
}

// Criteria 3 and 6 on the recorded hidden states: our generator, fed the golden z, must feed
// exactly the recorded rows at the recorded positions, emit the recorded codes and group them
// as the reference did.
void replay(const Golden &g, const TtsWeights &w, bool noop_feeds, std::vector<Prefill> &fed,
            std::map<int, std::vector<int32_t>> &codes, std::vector<AudioChunk> &chunks, size_t &steps_used) {
    ReplayForward fwd(g);
    TtsGenOptions o;
    o.seed = 42;
    o.reference_noop_feeds = noop_feeds;
    TtsGenerator gen(w, fwd, o);
    gen.set_observer({[&](const TtsPrefillEvent &e) {
                          fed.push_back({e.msg, e.phase, e.pos0, static_cast<int>(e.rows.size() / static_cast<size_t>(g.d)),
                                         std::vector<float>(e.rows.begin(), e.rows.end())});
                      },
                      [&](const TtsStepEvent &e) {
                          if (e.code != w.dims().n_codes - 1) codes[e.msg].push_back(e.code);
                      },
                      nullptr});
    for (const auto &m : g.recv) gen.feed({m.ids, m.hid, m.fin != 0}, chunks);
    steps_used = fwd.used();
}

TEST_F(TtsGolden, C3_C6_FedRowsCodesAndGrouping) {
    const Golden &g = *golden_;
    std::vector<Prefill> fed;
    std::map<int, std::vector<int32_t>> codes;
    std::vector<AudioChunk> chunks;
    size_t used = 0;
    replay(g, engine_->weights(), /*noop_feeds=*/true, fed, codes, chunks, used);
    EXPECT_EQ(used, g.steps.size());
    ASSERT_EQ(fed.size(), g.pre.size()) << "number of prefill calls";
    int row_mismatch = 0;
    for (size_t i = 0; i < fed.size(); ++i) {
        const auto &a = fed[i], &b = g.pre[i];
        EXPECT_EQ(a.msg, b.msg) << "record " << i;
        EXPECT_EQ(a.pos0, b.pos0) << "record " << i;
        ASSERT_EQ(a.rows.size(), b.rows.size()) << "record " << i;
        if (b.n == 1) {
            row_mismatch += std::memcmp(a.rows.data(), b.rows.data(), a.rows.size() * 4) != 0;  // bit-exact
        } else {
            row_mismatch += max_abs_diff(a.rows.data(), b.rows.data(), a.rows.size()) > 1e-5f;
        }
    }
    EXPECT_EQ(row_mismatch, 0);
    int code_mismatch = 0;
    for (const auto &c : g.codes) {
        const auto &ours = codes[c.msg];
        for (size_t i = 0; i < std::max(ours.size(), c.codes.size()); ++i)
            code_mismatch += i >= ours.size() || i >= c.codes.size() || ours[i] != c.codes[i];
    }
    EXPECT_EQ(code_mismatch, 0);
    ASSERT_EQ(chunks.size(), g.t2w.size());
    int group_mismatch = 0;
    for (size_t i = 0; i < chunks.size(); ++i)
        group_mismatch += chunks[i].codes != g.t2w[i].first || chunks[i].is_final != g.t2w[i].second;
    EXPECT_EQ(group_mismatch, 0);
    std::printf("GOLDEN c3 fed rows: %zu records, %d mismatches (1-row records bit-exact, conditions <= 1e-5)\n",
                fed.size(), row_mismatch);
    std::printf("GOLDEN c6 codes (replayed z): %d mismatches over %zu messages; T2W groups: %zu, %d mismatches\n",
                code_mismatch, g.codes.size(), chunks.size(), group_mismatch);

    // Without the two result-free decodes the feed sequence is the golden one minus them.
    std::vector<Prefill> fed2;
    std::map<int, std::vector<int32_t>> codes2;
    std::vector<AudioChunk> chunks2;
    replay(g, engine_->weights(), /*noop_feeds=*/false, fed2, codes2, chunks2, used);
    EXPECT_EQ(fed2.size() + 2, g.pre.size());
    EXPECT_EQ(codes2, codes);
    EXPECT_EQ(chunks2.size(), chunks.size());
}

// Criterion 4: teacher-forced on the recorded rows, our final-norm hidden matches z (<= 1e-2).
TEST_F(TtsGolden, C4_HiddenStatesTeacherForced) {
    const Golden &g = *golden_;
    TtsForward &fwd = engine_->forward();
    fwd.clear();
    size_t k = 0;
    float worst = 0, zmax = 0;
    int exact = 0;
    for (const auto &p : g.pre) {
        fwd.decode(p.rows.data(), p.n, p.pos0);
        while (k < g.steps.size() && g.steps[k].n_past == p.pos0 + p.n) {
            auto z = fwd.hidden();
            const float e = max_abs_diff(z.data(), g.steps[k].z.data(), z.size());
            worst = std::max(worst, e);
            exact += e == 0.0f;
            for (float v : g.steps[k].z) zmax = std::max(zmax, std::fabs(v));
            ++k;
        }
    }
    EXPECT_EQ(k, g.steps.size()) << "steps matched to a prefill";
    EXPECT_LE(worst, 1e-2f);
    std::printf("GOLDEN c4 hidden z: %zu steps, max|d| = %.3e (limit 1e-2, max|z| = %.2f), bit-exact steps: %d\n", k,
                worst, zmax, exact);
}

// Criterion 5: u draws and codes from (z, head_code, u) by variant S, all steps exactly.
TEST_F(TtsGolden, C5_Sampler) {
    const Golden &g = *golden_;
    const auto &w = engine_->weights();
    std::vector<float> l(static_cast<size_t>(w.dims().n_codes));
    std::vector<int32_t> hist;
    int bad_u = 0, bad_code = 0, prev_msg = -1;
    CodeRng rng(42);
    for (const auto &s : g.steps) {
        if (s.msg != prev_msg) rng.reseed(42);
        prev_msg = s.msg;
        bad_u += rng.uniform() != s.u;
        code_logits(s.z, w.head(), w.dims().n_codes, l);
        const int c = sample_simplex(l, hist, hist.empty(), s.u);
        bad_code += c != s.code;
        if (s.code != w.dims().n_codes - 1) hist.push_back(s.code);
    }
    EXPECT_EQ(bad_u, 0);
    EXPECT_EQ(bad_code, 0);
    std::printf("GOLDEN c5 sampler: %zu steps, u mismatches %d, code mismatches %d\n", g.steps.size(), bad_u, bad_code);
}

// Free-running (criterion 6 end to end, the code half of 7): the engine on the real
// transformer from the received messages. Exact codes need bit-identical z (README); the
// figures are printed, and equality is required when criterion 4 was bit-exact.
void free_run(TtsEngine &engine, const Golden &g, const char *label);

TEST_F(TtsGolden, FreeRunning) { free_run(*engine_, *golden_, "host logits"); }

TEST_F(TtsGolden, FreeRunningBackendLogits) {
    TtsConfig c = engine_->config();
    c.host_logits = false;
    c.reference_noop_feeds = false;
    TtsEngine e(c);
    free_run(e, *golden_, "backend logits");
}

void free_run(TtsEngine &engine, const Golden &g, const char *label) {
    TtsEngine *engine_ = &engine;
    std::map<int, std::vector<int32_t>> codes;
    std::vector<AudioChunk> chunks;
    std::vector<float> zs;
    std::vector<int> our_steps;
    engine_->set_observer({nullptr, [&](const TtsStepEvent &e) {
                               if (e.code != engine_->dims().n_codes - 1) codes[e.msg].push_back(e.code);
                               zs.insert(zs.end(), e.z.begin(), e.z.end());
                               our_steps.push_back(e.code);
                           },
                           nullptr});
    engine_->begin_utterance();
    const auto t0 = engine_->timings();
    for (const auto &m : g.recv) {
        auto c = engine_->feed(TtsInput{m.ids, m.hid, m.fin != 0});
        chunks.insert(chunks.end(), c.begin(), c.end());
    }
    engine_->set_observer({});
    const auto t1 = engine_->timings();
    int mism = 0;
    size_t n = 0;
    for (const auto &c : g.codes) {
        const auto &ours = codes[c.msg];
        n += c.codes.size();
        for (size_t i = 0; i < std::max(ours.size(), c.codes.size()); ++i)
            mism += i >= ours.size() || i >= c.codes.size() || ours[i] != c.codes[i];
    }
    bool z_exact = zs.size() == g.steps.size() * static_cast<size_t>(g.d);
    for (size_t i = 0; z_exact && i < g.steps.size(); ++i) {
        z_exact = std::memcmp(zs.data() + i * static_cast<size_t>(g.d), g.steps[i].z.data(), static_cast<size_t>(g.d) * 4) == 0;
    }
    // Where the free run leaves the golden path, and how close z was until then.
    size_t first_diff = g.steps.size();
    float zdiff = 0;
    for (size_t i = 0; i < g.steps.size() && i < our_steps.size(); ++i) {
        zdiff = std::max(zdiff, max_abs_diff(zs.data() + i * static_cast<size_t>(g.d), g.steps[i].z.data(), static_cast<size_t>(g.d)));
        if (our_steps[i] != g.steps[i].code) { first_diff = i; break; }
    }
    std::printf("GOLDEN free-running [%s]: first differing step %zu (msg %d phase %d t %d), max|dz| up to it %.3e\n", label,
                first_diff, first_diff < g.steps.size() ? g.steps[first_diff].msg : -1, first_diff < g.steps.size() ? g.steps[first_diff].phase : -1,
                first_diff < g.steps.size() ? g.steps[first_diff].t : -1, zdiff);
    std::printf("GOLDEN free-running [%s]: %d code mismatches of %zu golden codes, %zu chunks (golden %zu), z bit-exact: %s\n",
                label, mism, n, chunks.size(), g.t2w.size(), z_exact ? "yes" : "no");
    std::printf("GOLDEN free-running [%s] timings: prefill %.1f ms / %lld rows, decode %.1f ms / %lld (%.2f ms/step), sample %.1f ms\n",
                label, t1.prefill_ms - t0.prefill_ms, static_cast<long long>(t1.n_prefill_rows - t0.n_prefill_rows),
                t1.decode_ms - t0.decode_ms, static_cast<long long>(t1.n_decode - t0.n_decode),
                (t1.decode_ms - t0.decode_ms) / static_cast<double>(std::max<int64_t>(1, t1.n_decode - t0.n_decode)),
                t1.sample_ms - t0.sample_ms);
    if (z_exact && engine.config().host_logits) {
        EXPECT_EQ(mism, 0);
    }
}

}  // namespace
