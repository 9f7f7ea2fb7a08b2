// rtf_lm unit tests: exact code sampling, the valid-token filter, text checks, placement
// validation, and the TTS generation logic on a scripted transformer (no libllama model).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "lm-fixtures.h"
#include "models/lm/code-sampler.h"
#include "models/lm/condition.h"
#include "models/lm/llm-engine.h"
#include "models/lm/placement.h"
#include "models/lm/tts-generator.h"
#include "models/lm/tts-weights.h"

using namespace rtf;
using namespace rtf::lm;

namespace {

TEST(CodeRng, MatchesStdUniformRealOnMt19937) {
    for (uint32_t seed : {0u, 42u, 123456u}) {
        std::mt19937 g(seed);
        std::uniform_real_distribution<float> dist(0.0f, 1.0f);
        CodeRng r(seed);
        for (int i = 0; i < 2000; ++i) ASSERT_EQ(r.uniform(), dist(g)) << "seed " << seed << " draw " << i;
        r.reseed(seed);
        std::mt19937 g2(seed);
        EXPECT_EQ(r.uniform(), dist(g2));
    }
}

TEST(CodeSampler, LogitsAreSequentialFloatSums) {
    const int n_codes = 37, d = 19;
    std::vector<float> z(d), head(static_cast<size_t>(d * n_codes)), out(n_codes);
    std::mt19937 g(7);
    std::normal_distribution<float> nd;
    for (auto &v : z) v = nd(g);
    for (auto &v : head) v = nd(g);
    code_logits(z, head.data(), n_codes, out);
    for (int r = 0; r < n_codes; ++r) {
        volatile float s = z[0] * head[static_cast<size_t>(r)];
        for (int j = 1; j < d; ++j) {
            volatile float p = z[static_cast<size_t>(j)] * head[static_cast<size_t>(j * n_codes + r)];
            s = s + p;
        }
        EXPECT_EQ(out[static_cast<size_t>(r)], s) << "code " << r;
    }
}

TEST(CodeSampler, SimplexPicksByCumulativeProbability) {
    // Two classes with logits 0 and 0.8*ln(3): after /0.8 the probabilities are 1/4 and 3/4.
    const float l1 = 0.8f * std::log(3.0f);
    for (auto [u, want] : std::vector<std::pair<float, int>>{{0.0f, 0}, {0.2f, 0}, {0.26f, 1}, {0.99f, 1}}) {
        std::vector<float> l{0.0f, l1};
        EXPECT_EQ(sample_simplex(l, {}, true, u), want) << "u " << u;
    }
    // u above the final cumulative sum (rounding) -> the last class.
    std::vector<float> l{0.0f, 0.0f};
    EXPECT_EQ(sample_simplex(l, {}, true, std::nextafter(1.0f, 0.0f)), 1);
}

TEST(CodeSampler, SimplexPresencePenaltyOnLastEightOnly) {
    // Code 0 dominates; penalised (divided by 1.05) it still dominates but its probability drops.
    auto prob0 = [](std::vector<int32_t> hist, bool first) {
        std::vector<float> l{2.0f, 1.0f, -1.0f};
        sample_simplex(l, hist, first, 0.5f);
        return l[0];
    };
    const float base = prob0({}, false);
    EXPECT_LT(prob0({0}, false), base);
    EXPECT_EQ(prob0({0}, true), base);                          // first code of the turn: no penalty
    EXPECT_EQ(prob0({0, 1, 1, 1, 1, 1, 1, 1, 1}, false),        // 0 is older than the last 8
              prob0({1}, false));
    // Negative logits are multiplied (pushed further down).
    std::vector<float> a{-1.0f, 0.0f}, b{-1.0f, 0.0f};
    sample_simplex(a, std::vector<int32_t>{0}, false, 0.5f);
    sample_simplex(b, std::vector<int32_t>{}, false, 0.5f);
    EXPECT_LT(a[0], b[0]);
}

TEST(CodeSampler, DuplexTopKTopPAndEosMask) {
    std::vector<float> flat(6562, 0.0f);
    for (float u : {0.0f, 0.3f, 0.999f}) {
        auto l = flat;
        const int c = sample_duplex(l, {}, 0, true, u);
        EXPECT_NE(c, 6561);
        EXPECT_LT(c, 25);  // uniform: the 25 kept are the first 25 by stable order
    }
    // A peaked distribution keeps at least 3.
    std::vector<float> l(10, -50.0f);
    l[7] = 50.0f;
    std::vector<int> seen;
    for (float u : {0.0f, 0.9999999f}) {
        auto x = l;
        seen.push_back(sample_duplex(x, {}, 0, false, u));
    }
    EXPECT_EQ(seen[0], 7);
    auto e = l;
    e[9] = 60.0f;  // EOS would win unless forbidden
    EXPECT_EQ(sample_duplex(e, {}, 0, true, 0.1f), 7);
}

TEST(CodeSampler, Argmax) {
    std::vector<float> l{1, 3, 3, -2};
    EXPECT_EQ(argmax_code(l), 1);
}

TEST(Condition, ValidTokenFilter) {
    for (int32_t id : {151667, 151668, 151704, 151705, 151706, 151717, 151718, 151721, 271, 150000, 151687, -1})
        EXPECT_FALSE(is_valid_text_token(id)) << id;
    for (int32_t id : {0, 270, 272, 1000, 149999}) EXPECT_TRUE(is_valid_text_token(id)) << id;
    std::vector<int32_t> ids{5, 271, 7}, oi;
    std::vector<float> h{1, 1, 2, 2, 3, 3}, oh;
    filter_valid(ids, h, 2, oi, oh);
    EXPECT_EQ(oi, (std::vector<int32_t>{5, 7}));
    EXPECT_EQ(oh, (std::vector<float>{1, 1, 3, 3}));
    EXPECT_THROW(filter_valid(ids, std::vector<float>{1, 2}, 2, oi, oh), Error);
}

TEST(Text, EmptyAndInvalidUtf8AreUsageErrors) {
    auto kind = [](const std::string &t) {
        try {
            check_text(t, "the prompt");
        } catch (const Error &e) {
            EXPECT_EQ(e.kind(), ErrorKind::Usage);
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(kind("").find("empty"), std::string::npos);
    EXPECT_NE(kind(" \n\t").find("empty"), std::string::npos);
    for (std::string bad : {"\xff", "ab\xc0\x80", "\xed\xa0\x80", "x\xe2\x82", "\xf4\x90\x80\x80", "\x80"})
        EXPECT_NE(kind(bad).find("UTF-8"), std::string::npos) << "bytes of length " << bad.size();
    EXPECT_EQ(kind("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x99\x82"), "");
}

TEST(Placement, ValidateNamesTheField) {
    ModelPlacement p;
    EXPECT_NO_THROW(p.validate("tts"));
    auto msg = [](ModelPlacement q) {
        try {
            q.validate("tts");
        } catch (const Error &e) {
            EXPECT_EQ(e.kind(), ErrorKind::Usage);
            return std::string(e.what());
        }
        return std::string();
    };
    ModelPlacement a;
    a.flash_attn = "maybe";
    EXPECT_NE(msg(a).find("tts.flash_attn"), std::string::npos);
    ModelPlacement b;
    b.kv_type = "q3";
    EXPECT_NE(msg(b).find("tts.kv_type"), std::string::npos);
    ModelPlacement c;
    c.kv_type = "q8_0";
    c.flash_attn = "off";
    EXPECT_NE(msg(c).find("flash attention"), std::string::npos);
    ModelPlacement d;
    d.n_batch = 8192;
    EXPECT_NE(msg(d).find("tts.n_batch"), std::string::npos);
    ModelPlacement f;
    f.poll = 101;
    EXPECT_NE(msg(f).find("tts.poll"), std::string::npos);
    ModelPlacement e;
    e.device = "NOPE0";
    EXPECT_NE(msg(e).find("NOPE0"), std::string::npos);
    const auto j = p.to_json();
    for (const char *k : {"device", "n_gpu_layers", "mmap", "host_buffer", "extra_bufts", "flash_attn", "kv_type", "n_threads",
                          "n_threads_batch", "cpus", "poll", "n_ctx", "n_batch"})
        EXPECT_TRUE(j.contains(k)) << k;
}

// --- generator on a scripted transformer -----------------------------------------------

// Logits come from a script (one code per sampling step; the scripted code gets +100).
class ScriptedForward final : public TtsForward {
public:
    ScriptedForward(int n_embd, int n_codes, int n_ctx) : z_(static_cast<size_t>(n_embd), 0.0f), l_(static_cast<size_t>(n_codes)), n_ctx_(n_ctx) {}
    std::vector<int> script;
    size_t next = 0;
    int kv = 0;  // KV length
    void clear() override { kv = 0; }
    void decode(const float *, int n, int pos0) override {
        if (pos0 > kv) throw std::runtime_error("gap in positions");
        kv = pos0 + n;
    }
    std::span<const float> hidden() override { return z_; }
    std::span<const float> logits() override {
        std::fill(l_.begin(), l_.end(), 0.0f);
        const int c = next < script.size() ? script[next] : static_cast<int>(l_.size()) - 1;
        ++next;
        l_[static_cast<size_t>(c)] = 100.0f;
        return l_;
    }
    int n_ctx() const override { return n_ctx_; }

private:
    std::vector<float> z_, l_;
    int n_ctx_;
};

class Generator : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        test::TinyTtsSpec s;
        s.n_embd = 16;
        s.n_head = 2;
        s.n_ff = 32;
        s.n_llm = 24;
        const std::string dir = test::temp_dir("unit-tts");
        weights_ = new TtsWeights(test::write_tiny_tts(dir, s), "");
    }
    static void TearDownTestSuite() { delete weights_; }
    static TtsWeights *weights_;

    struct Run {
        std::vector<AudioChunk> chunks;
        std::vector<TtsPrefillEvent> pre;  // rows dropped
        std::vector<std::vector<float>> pre_rows;
        std::vector<TtsStepEvent> steps;
        std::vector<size_t> chunk_at_step;  // steps seen when each on_chunk fired
    };
    static std::vector<int> codes(int n, int start) {
        std::vector<int> v;
        for (int i = 0; i < n; ++i) v.push_back((start + i * 37) % 6561);
        return v;
    }
    static std::vector<int> cat(std::initializer_list<std::vector<int>> parts) {
        std::vector<int> v;
        for (auto &p : parts) v.insert(v.end(), p.begin(), p.end());
        return v;
    }
    Run run(const std::vector<int> &script, const std::vector<std::pair<int, bool>> &msgs, TtsGenOptions o = {},
            int n_ctx = 4096) {
        o.host_logits = false;
        ScriptedForward f(weights_->dims().n_embd, weights_->dims().n_codes, n_ctx);
        f.script = script;
        TtsGenerator g(*weights_, f, o);
        Run r;
        g.set_observer({[&](const TtsPrefillEvent &e) {
                            r.pre.push_back({e.msg, e.phase, e.pos0, {}});
                            r.pre_rows.emplace_back(e.rows.begin(), e.rows.end());
                        },
                        [&](const TtsStepEvent &e) { r.steps.push_back({e.msg, e.phase, e.t, e.n_past, e.code, e.u, {}}); },
                        [&](const AudioChunk &) { r.chunk_at_step.push_back(r.steps.size()); }});
        std::vector<float> hid;
        int id = 1000;
        for (auto [n, last] : msgs) {
            std::vector<int32_t> ids;
            for (int i = 0; i < n; ++i) ids.push_back(id++);
            hid.assign(static_cast<size_t>(n * weights_->dims().n_llm), 0.5f);
            g.feed({ids, hid, last}, r.chunks);
        }
        return r;
    }
};
TtsWeights *Generator::weights_ = nullptr;

TEST_F(Generator, SimplexChunksPhase2AndPositions) {
    const int EOS = 6561;
    // msg0: 30 codes then EOS; msg1 (last): 3 codes, EOS, Phase 2: 20 codes, EOS.
    auto script = cat({codes(30, 1), {EOS}, codes(3, 500), {EOS}, codes(20, 900), {EOS}});
    auto r = run(script, {{10, false}, {4, true}});
    ASSERT_EQ(r.chunks.size(), 4u);
    EXPECT_EQ(r.chunks[0].codes, std::vector<int32_t>(script.begin(), script.begin() + 25));
    EXPECT_EQ(r.chunks[1].codes.size(), 25u);
    EXPECT_EQ(r.chunks[2].codes.size(), 3u);  // 5 + 3 + 20 = 28 -> 25 + 3
    EXPECT_FALSE(r.chunks[2].is_final);
    EXPECT_TRUE(r.chunks[3].codes.empty());
    EXPECT_TRUE(r.chunks[3].is_final);
    // Feeds: cond msg0 (11 rows @0), 30 code rows @11.., cond msg1 (5 rows @41), 3 codes @46..48,
    // text_eos @49, BOS @50, 20 codes @51..70. No EOS feeds, no redundant re-prefill.
    ASSERT_EQ(r.pre.size(), 1u + 30 + 1 + 3 + 2 + 20);
    EXPECT_EQ(r.pre[0].pos0, 0);
    EXPECT_EQ(r.pre_rows[0].size(), 11u * 16);
    EXPECT_EQ(r.pre[31].pos0, 41);
    EXPECT_EQ(r.pre_rows[31].size(), 5u * 16);
    EXPECT_EQ(r.pre[35].pos0, 49);
    EXPECT_EQ(r.pre[35].phase, 2);
    std::vector<float> row(16);
    weights_->text_row(kTextEosRow, row.data());
    EXPECT_EQ(r.pre_rows[35], row);
    weights_->text_row(kAudioBosRow, row.data());
    EXPECT_EQ(r.pre_rows[36], row);
    EXPECT_EQ(std::vector<float>(r.pre_rows[0].end() - 16, r.pre_rows[0].end()), row);  // condition ends with BOS
    weights_->code_row(script[0], row.data());
    EXPECT_EQ(r.pre_rows[1], row);
    EXPECT_EQ(r.pre.back().pos0, 70);
    // The RNG restarts with the seed for every message.
    CodeRng rng(42);
    EXPECT_EQ(r.steps[0].u, rng.uniform());
    EXPECT_EQ(r.steps[31].msg, 1);
    EXPECT_EQ(r.steps[31].u, r.steps[0].u);
    EXPECT_EQ(r.steps[0].n_past, 11);
    // on_chunk streams each chunk as soon as it is complete: the first after the 25th code.
    ASSERT_EQ(r.chunk_at_step.size(), r.chunks.size());
    EXPECT_EQ(r.chunk_at_step[0], 25u);
}

TEST_F(Generator, ReferenceNoopFeeds) {
    const int EOS = 6561;
    TtsGenOptions o;
    o.reference_noop_feeds = true;
    auto r = run(cat({codes(2, 3), {EOS}, codes(1, 4), {EOS}}), {{3, true}}, o);
    // cond, re-prefill of cond @0, 2 codes, text_eos, BOS, 1 code, fed EOS
    ASSERT_EQ(r.pre.size(), 8u);
    EXPECT_EQ(r.pre[1].pos0, 0);
    EXPECT_EQ(r.pre_rows[1], r.pre_rows[0]);
    std::vector<float> row(16);
    weights_->code_row(EOS, row.data());
    EXPECT_EQ(r.pre_rows.back(), row);
}

TEST_F(Generator, FirstCodeOfTurnRestartsAtPositionZero) {
    const int EOS = 6561;
    // msg0 emits nothing (EOS first); msg1's condition is re-prefilled at 0 before its first code.
    auto r = run(cat({{EOS}, codes(2, 9), {EOS}}), {{5, false}, {3, true}});
    ASSERT_GE(r.pre.size(), 3u);
    EXPECT_EQ(r.pre[1].pos0, 6);  // msg1 condition after msg0's 6 rows
    EXPECT_EQ(r.pre[2].pos0, 0);  // restart
    EXPECT_EQ(r.pre_rows[2], r.pre_rows[1]);
    EXPECT_EQ(r.steps[1].n_past, 4);
}

TEST_F(Generator, PhaseCapSkipsPhase2) {
    TtsGenOptions o;
    o.max_codes_per_phase = 7;
    auto r = run(codes(50, 2), {{2, true}}, o);
    ASSERT_EQ(r.chunks.size(), 2u);
    EXPECT_EQ(r.chunks[0].codes.size(), 7u);
    for (const auto &s : r.steps) EXPECT_EQ(s.phase, 1);
}

TEST_F(Generator, EmptyFinalMessageRunsPhase2AfterEos) {
    const int EOS = 6561;
    auto r = run(cat({codes(4, 1), {EOS}, codes(2, 8), {EOS}}), {{3, false}, {0, true}});
    ASSERT_EQ(r.chunks.size(), 2u);
    EXPECT_EQ(r.chunks[0].codes.size(), 6u);
    EXPECT_TRUE(r.chunks[1].is_final);
}

TEST_F(Generator, DuplexCallsEmitTwentySixUnlessEndOfTurn) {
    const int EOS = 6561;
    TtsGenOptions o;
    o.mode = TtsMode::Duplex;
    // EOS is scripted at t=3 of the first call but forbidden there (min_new = 26).
    auto r = run(cat({codes(3, 1), {EOS}, codes(40, 2), codes(5, 3), {EOS}}), {{4, false}, {2, true}}, o);
    ASSERT_EQ(r.chunks.size(), 2u);
    EXPECT_EQ(r.chunks[0].codes.size(), 26u);
    EXPECT_FALSE(r.chunks[0].is_final);
    EXPECT_TRUE(r.chunks[1].is_final);
    EXPECT_LE(r.chunks[1].codes.size(), 26u);
    for (auto c : r.chunks[0].codes) EXPECT_NE(c, EOS);
    // Duplex condition: [c x4, BOS, BOS]; end of turn: [c x2, BOS, text_eos, BOS].
    EXPECT_EQ(r.pre_rows[0].size(), 6u * 16);
    EXPECT_EQ(r.pre[27].pos0, 6 + 26);
    EXPECT_EQ(r.pre_rows[27].size(), 5u * 16);
}

TEST_F(Generator, ContextOverflowIsARuntimeError) {
    try {
        run(codes(100, 1), {{10, true}}, {}, 40);
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Runtime);
        EXPECT_NE(std::string(e.what()).find("TTS context"), std::string::npos);
    }
}

TEST_F(Generator, ConditionWithoutHiddenIsTextRowOnly) {
    ConditionBuilder cb(*weights_, 1);
    std::vector<int32_t> ids{5, 6};
    std::vector<float> out, row(16);
    cb.rows(ids, {}, out);
    weights_->text_row(6, row.data());
    EXPECT_EQ(std::vector<float>(out.begin() + 16, out.end()), row);
    // With hidden rows the projector term is a unit vector added to E_text.
    std::vector<float> h(2 * 24, 0.25f);
    cb.rows(ids, h, out);
    double ss = 0;
    for (int k = 0; k < 16; ++k) ss += std::pow(out[static_cast<size_t>(16 + k)] - row[static_cast<size_t>(k)], 2);
    EXPECT_NEAR(ss, 1.0, 1e-5);
}

}  // namespace

TEST_F(Generator, MinCodesPerTurnMasksEosUntilReached) {
    const int EOS = 6561;
    // The script asks for EOS after 3 codes; with a minimum of 5 the EOS is masked (a sampled
    // code instead), so Phase 1 ends at the first EOS once 5 codes exist.
    TtsGenOptions o;
    o.min_codes_per_turn = 5;
    auto r = run(cat({codes(3, 1), {EOS}, codes(1, 7), {EOS}, {EOS}}), {{2, true}}, o);
    ASSERT_GE(r.steps.size(), 6u);
    EXPECT_NE(r.steps[3].code, EOS);
    EXPECT_EQ(r.steps[5].code, EOS);
    size_t n = 0;
    for (const auto &c : r.chunks) n += c.codes.size();
    EXPECT_EQ(n, 5u);
    // Without the minimum the same script stops after 3 codes.
    auto plain = run(cat({codes(3, 1), {EOS}, {EOS}}), {{2, true}});
    n = 0;
    for (const auto &c : plain.chunks) n += c.codes.size();
    EXPECT_EQ(n, 3u);
}
