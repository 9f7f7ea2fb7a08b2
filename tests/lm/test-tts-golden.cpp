// Golden check of the TTS stage against the reference runtime's dumps
// (shared/golden/minicpmo45-tts, README "What counts as a match", criteria 1-6).
// Needs the full-shape twin made by shared/tools/tts_twin.py (see tests/lm/tts-golden.sh).
// Label: slow. Figures are printed as "GOLDEN ..." lines.
#include <gtest/gtest.h>

#include "free-run-check.h"
#include "golden-files.h"

#include <algorithm>
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
#include "models/lm/weight-fidelity.h"

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
// transformer from the received messages. Once one code differs the two runs decode
// different sequences, so the comparison covers the steps up to and including the first
// differing code ("compared"), where it asserts:
//   - z within the teacher-forced tolerance (1e-2, criterion 4) on every compared step, the
//     diverging one included: a larger error is a bug whatever the codes do;
//   - the draw u bit-equal to the reference's (it depends on the seed and the step only);
//   - the logits the sampler saw within 0.05 of the reference's (head_code over the golden z,
//     the reference's sequential float32 sum): head_code ~ N(0, 0.05^2) over 768 dims, so the
//     1e-2 z tolerance moves a logit by ~0.015 for uncorrelated errors; a wrong head, class
//     order or step moves them by O(1);
//   - the code is the one the sampler gives on those logits with the reference's u and code
//     history (variant S, exactly), so a divergence is one the logits explain;
//   - the code equal to the reference's while the sampler's logits have been bit-equal to the
//     reference's on every step so far (free-run-check.h, applied to the logits: same logits,
//     u and history give the same code). With host logits that is "while z is bit-exact"
//     (they are the reference's function of z); backend logits are summed in another order,
//     never bit-equal, so there a near-tie may flip (one golden draw lies 6.6e-7 from a class
//     boundary) and the agreement is printed, with the decision margin at the diverging step.
struct FreeRunTrace {
    std::vector<float> z, logits, u;
    std::vector<int> codes;  // every step's code, EOS included
};

void free_run(TtsEngine &engine, const Golden &g, const char *label);

TEST_F(TtsGolden, FreeRunning) { free_run(*engine_, *golden_, "host logits"); }

TEST_F(TtsGolden, FreeRunningBackendLogits) {
    TtsConfig c = engine_->config();
    c.host_logits = false;
    c.reference_noop_feeds = false;
    TtsEngine e(c);
    free_run(e, *golden_, "backend logits");
}

// Probabilities after variant S's temperature and penalty, and the cumulative sums around
// `code` (float32, sequential, as the sampler sums them): [before, at].
std::pair<float, float> cumulative_around(std::vector<float> l, const std::vector<int32_t> &hist, int code, float u) {
    sample_simplex(l, hist, hist.empty(), u);  // leaves the probabilities in l
    float cum = 0.0f, before = 0.0f;
    for (int i = 0; i <= code && i < static_cast<int>(l.size()); ++i) {
        before = cum;
        cum += l[static_cast<size_t>(i)];
    }
    return {before, cum};
}

void free_run(TtsEngine &engine, const Golden &g, const char *label) {
    TtsEngine *engine_ = &engine;
    const auto &w = engine.weights();
    const int n_codes = w.dims().n_codes;
    const size_t d = static_cast<size_t>(g.d), nc = static_cast<size_t>(n_codes);
    std::map<int, std::vector<int32_t>> codes;
    std::vector<AudioChunk> chunks;
    FreeRunTrace tr;
    engine_->set_observer({nullptr, [&](const TtsStepEvent &e) {
                               if (e.code != n_codes - 1) codes[e.msg].push_back(e.code);
                               tr.z.insert(tr.z.end(), e.z.begin(), e.z.end());
                               tr.logits.insert(tr.logits.end(), e.logits.begin(), e.logits.end());
                               tr.u.push_back(e.u);
                               tr.codes.push_back(e.code);
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
    ASSERT_EQ(tr.z.size(), tr.codes.size() * d);
    ASSERT_EQ(tr.logits.size(), tr.codes.size() * nc) << "the observer did not get the sampler's logits";
    // The reference's logits: head_code over the golden z in its sequential float32 order.
    std::vector<float> gold_logits(g.steps.size() * nc);
    for (size_t i = 0; i < g.steps.size(); ++i)
        code_logits(g.steps[i].z, w.head(), n_codes, std::span<float>(gold_logits.data() + i * nc, nc));

    // Codes required to agree while the logits have been bit-equal (free-run-check.h's rule,
    // with the logits as the compared state); the logits within 0.05 on every compared step.
    const auto v = rtf::test::judge_free_run(tr.codes.size(), g.steps.size(), nc, 0.05f, [&](size_t i) {
        return rtf::test::FreeRunStep{tr.logits.data() + i * nc, gold_logits.data() + i * nc, tr.codes[i], g.steps[i].code};
    });
    EXPECT_TRUE(v.failure.empty()) << label << ", logits: " << v.failure;
    // z, u and the sampler's own decision on the compared steps (the history is the
    // reference's, equal to ours on every compared step; one turn, so it is never cleared).
    float max_dz = 0;
    bool z_exact = true;
    int bad_u = 0, inconsistent = 0;
    std::vector<int32_t> hist;
    for (size_t i = 0; i < v.compared; ++i) {
        const float *zo = tr.z.data() + i * d, *zg = g.steps[i].z.data();
        const float dz = max_abs_diff(zo, zg, d);
        max_dz = std::max(max_dz, dz);
        z_exact = z_exact && std::memcmp(zo, zg, d * sizeof(float)) == 0;
        EXPECT_LE(dz, 1e-2f) << label << ": step " << i << " z off by " << dz;
        bad_u += tr.u[i] != g.steps[i].u;
        std::vector<float> l(tr.logits.begin() + static_cast<std::ptrdiff_t>(i * nc),
                             tr.logits.begin() + static_cast<std::ptrdiff_t>((i + 1) * nc));
        inconsistent += sample_simplex(l, hist, hist.empty(), g.steps[i].u) != tr.codes[i];
        if (g.steps[i].code != n_codes - 1) hist.push_back(g.steps[i].code);
    }
    EXPECT_EQ(bad_u, 0) << label << ": draws differ from the reference's";
    EXPECT_EQ(inconsistent, 0) << label << ": codes that the sampler would not give on the logits it saw";
    if (v.first_diff < g.steps.size() && v.first_diff < tr.codes.size()) {
        // Why it diverged: how far the reference's draw was from its class boundaries, and how
        // far our logits were from the reference's there.
        std::vector<int32_t> h;
        for (size_t i = 0; i < v.first_diff; ++i)
            if (g.steps[i].code != n_codes - 1) h.push_back(g.steps[i].code);
        const size_t k = v.first_diff;
        const std::vector<float> lg(gold_logits.begin() + static_cast<std::ptrdiff_t>(k * nc),
                                    gold_logits.begin() + static_cast<std::ptrdiff_t>((k + 1) * nc));
        const auto [before, at] = cumulative_around(lg, h, g.steps[k].code, g.steps[k].u);
        std::printf("GOLDEN free-running [%s]: diverged at step %zu (msg %d phase %d t %d): code %d vs %d, u %.9g "
                    "in [%.9g, %.9g] (margin %.3g), max|dlogit| there %.3g\n",
                    label, k, g.steps[k].msg, g.steps[k].phase, g.steps[k].t, tr.codes[k], g.steps[k].code,
                    static_cast<double>(g.steps[k].u), static_cast<double>(before), static_cast<double>(at),
                    std::min(static_cast<double>(g.steps[k].u - before), static_cast<double>(at - g.steps[k].u)),
                    static_cast<double>(max_abs_diff(tr.logits.data() + k * nc, lg.data(), nc)));
    }
    int mism = 0;
    size_t n = 0;
    for (const auto &c : g.codes) {
        const auto &ours = codes[c.msg];
        n += c.codes.size();
        for (size_t i = 0; i < std::max(ours.size(), c.codes.size()); ++i)
            mism += i >= ours.size() || i >= c.codes.size() || ours[i] != c.codes[i];
    }
    std::printf("GOLDEN free-running [%s]: %zu of %zu steps agree before the first difference; compared %zu: max|dz| "
                "%.3e (limit 1e-2, bit-exact: %s), max|dlogit| %.3e (limit 0.05, bit-exact: %s, so codes %s)\n",
                label, v.agreeing, g.steps.size(), v.compared, max_dz, z_exact ? "yes" : "no", v.max_dz,
                v.z_exact ? "yes" : "no", v.z_exact ? "required to agree" : "only printed");
    std::printf("GOLDEN free-running [%s]: %d code mismatches of %zu golden codes, %zu chunks (golden %zu)\n", label, mism, n,
                chunks.size(), g.t2w.size());
    std::printf("GOLDEN free-running [%s] timings: prefill %.1f ms / %lld rows, decode %.1f ms / %lld (%.2f ms/step), sample %.1f ms\n",
                label, t1.prefill_ms - t0.prefill_ms, static_cast<long long>(t1.n_prefill_rows - t0.n_prefill_rows),
                t1.decode_ms - t0.decode_ms, static_cast<long long>(t1.n_decode - t0.n_decode),
                (t1.decode_ms - t0.decode_ms) / static_cast<double>(std::max<int64_t>(1, t1.n_decode - t0.n_decode)),
                t1.sample_ms - t0.sample_ms);
}

// Issue 30 §2: what a load-time weight type costs in fidelity, priced as llama.cpp's
// perplexity tool prices a quantization (--kl-divergence), on the golden's teacher-forced
// inputs: per step, KL(p_ref || p_type) of the code distribution the sampler draws from
// (softmax of logits / temperature; logits from z and the host head, which no weight type
// touches) against the reference's own z, and whether the most likely code agrees. Printed
// as "GOLDEN c8" lines. Asserted: the profile's line for a math-changing LM choice (mean KL
// <= 0.01 nats, top-1 agreement >= 98 %) for q8_0; q4_k_m is printed, and must only be
// finite and no closer than q8_0 (its bytes are fewer). Twin weights: twin-only evidence.
TEST_F(TtsGolden, C8_WeightTypeFidelity) {
    const Golden &g = *golden_;
    const auto &w = engine_->weights();
    const int nc = w.dims().n_codes;
    auto dist = [&](const std::vector<float> &z) {
        std::vector<float> l(static_cast<size_t>(nc));
        code_logits(z, w.head(), nc, l);
        return softmax_at(l.data(), l.size(), kCodeTemperature);
    };
    double q8_mean = 0;
    for (const std::string type : {"q8_0", "q4_k_m"}) {
        TtsConfig c = engine_->config();
        c.placement.weight_type = type;
        TtsEngine e(c);
        TtsForward &fwd = e.forward();
        fwd.clear();
        FidelityAccumulator acc;  // weight-fidelity.h: the statistics `rtf lm-fidelity` prints
        size_t k = 0;
        for (const auto &pre : g.pre) {
            fwd.decode(pre.rows.data(), pre.n, pre.pos0);
            while (k < g.steps.size() && g.steps[k].n_past == pre.pos0 + pre.n) {
                auto zq = fwd.hidden();
                acc.add(dist(g.steps[k].z), dist(std::vector<float>(zq.begin(), zq.end())));
                ++k;
            }
        }
        ASSERT_EQ(k, g.steps.size());
        const WeightFidelity f = acc.result();
        const double mean = f.kl_mean, agree = f.top1_pct;
        std::printf("GOLDEN c8 tts weight type %s vs the reference (F16), %zu teacher-forced steps: KL mean %.3g nats, "
                    "p99 %.3g, max %.3g; top-1 agreement %.1f %% (lines: mean <= 0.01, top-1 >= 98 %%; twin weights)\n",
                    type.c_str(), k, mean, f.kl_p99, f.kl_max, agree);
        EXPECT_TRUE(std::isfinite(mean));
        if (type == "q8_0") {
            q8_mean = mean;
            EXPECT_LE(mean, 0.01);
            EXPECT_GE(agree, 98.0);
        } else {
            EXPECT_GE(mean, q8_mean);
        }
    }
}

}  // namespace
