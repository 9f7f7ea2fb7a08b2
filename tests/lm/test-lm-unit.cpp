// rtf_lm unit tests: exact code sampling, the valid-token filter, text checks, placement
// validation, and the TTS generation logic on a scripted transformer (no libllama model).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "lm-fixtures.h"
#include "models/lm/code-sampler.h"
#include "models/lm/condition.h"
#include "models/lm/llm-engine.h"
#include "models/lm/llama-runtime.h"
#include "models/lm/placement.h"
#include "models/lm/tts-duplex.h"
#include "models/lm/tts-engine.h"
#include "models/lm/tts-generator.h"
#include "models/lm/tts-weights.h"
#include "models/lm/weight-fidelity.h"

using namespace rtf;
using namespace rtf::lm;

namespace {

// ggml's AMX buffer type crashes in the pinned release (issue 29 §1b): never chosen by
// default, only with RTF_GGML_AMX=1; without it, nothing changes.
TEST(LlamaRuntime, AmxBufferTypeIsOptIn) {
    EXPECT_TRUE(use_extra_bufts(true, false, nullptr));
    EXPECT_FALSE(use_extra_bufts(true, true, nullptr));
    EXPECT_FALSE(use_extra_bufts(true, true, "0"));
    EXPECT_TRUE(use_extra_bufts(true, true, "1"));
    EXPECT_FALSE(use_extra_bufts(false, true, "1"));
    EXPECT_FALSE(use_extra_bufts(false, false, nullptr));
}

// Our build of the pinned release has no AMX code (scripts/fetch-llama.sh), on any CPU.
TEST(LlamaRuntime, PinnedBuildHasNoAmxBufferType) {
    if (std::getenv("RTF_LLAMA_CPP_DIR")) GTEST_SKIP() << "libllama from RTF_LLAMA_CPP_DIR, not our pinned build";
    EXPECT_FALSE(amx_buffer_type_present());
}

// What an offloaded decode hands libllama and reads back (the LM stages' llm.copy_kib /
// tts.copy_kib in the profile): token ids or embedding rows and positions in, per output row the
// logits and (with embeddings on) the hidden row out; no logits flags = the last row only.
TEST(LlamaRuntime, DecodeIoBytesCountsInputsAndOutputRows) {
    llama_batch toks = llama_batch_init(8, 0, 1);
    toks.n_tokens = 5;
    for (int i = 0; i < 5; ++i) toks.logits[i] = i == 4;
    // 5 ids + 5 positions in; one row of 100 logits (+ 16 hidden floats with embeddings) out
    EXPECT_EQ(rtf::lm::decode_io_bytes(toks, 16, 16, 100, false), 5u * 4 + 5u * 4 + 100u * 4);
    EXPECT_EQ(rtf::lm::decode_io_bytes(toks, 16, 16, 100, true), 5u * 4 + 5u * 4 + 116u * 4);
    for (int i = 0; i < 5; ++i) toks.logits[i] = 1;  // every row an output
    EXPECT_EQ(rtf::lm::decode_io_bytes(toks, 16, 16, 100, true), 5u * 4 + 5u * 4 + 5u * 116u * 4);
    int8_t *flags = toks.logits;
    toks.logits = nullptr;  // libllama's default: the last row
    EXPECT_EQ(rtf::lm::decode_io_bytes(toks, 16, 16, 100, false), 5u * 4 + 5u * 4 + 100u * 4);
    toks.logits = flags;
    llama_batch_free(toks);
    llama_batch rows = llama_batch_init(4, 12, 1);  // embedding rows of 12 floats in
    rows.n_tokens = 3;
    for (int i = 0; i < 3; ++i) rows.logits[i] = i == 2;
    EXPECT_EQ(rtf::lm::decode_io_bytes(rows, 12, 20, 50, true), 3u * 12 * 4 + 3u * 4 + (50u + 20u) * 4);
    rows.n_tokens = 0;
    EXPECT_EQ(rtf::lm::decode_io_bytes(rows, 12, 20, 50, true), 0u);
    llama_batch_free(rows);
}

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

// Lead chunks (Token2Wav's first window and ramp): the turn's first hand-offs have their
// sizes, then chunk_codes; the same codes in the same order; a new turn starts them again;
// a size outside 1..chunk_codes is a usage error.
TEST_F(Generator, LeadChunksThenFullChunks) {
    const int EOS = 6561;
    auto script = cat({codes(60, 1), {EOS}});
    TtsGenOptions o;
    o.lead_chunk_codes = {5, 9, 17};
    auto r = run(script, {{10, true}}, o);
    std::vector<size_t> sizes;
    std::vector<int32_t> all;
    for (const auto &c : r.chunks) {
        sizes.push_back(c.codes.size());
        all.insert(all.end(), c.codes.begin(), c.codes.end());
    }
    EXPECT_EQ(sizes, (std::vector<size_t>{5, 9, 17, 25, 4, 0}));  // 60 = 5 + 9 + 17 + 25 + 4; then the final flush
    EXPECT_EQ(all, std::vector<int32_t>(script.begin(), script.begin() + 60));
    ASSERT_GE(r.chunk_at_step.size(), 3u);
    EXPECT_EQ(r.chunk_at_step[0], 5u);  // handed on the moment the 5th code is out
    EXPECT_EQ(r.chunk_at_step[1], 14u);
    ScriptedForward f(weights_->dims().n_embd, weights_->dims().n_codes, 4096);
    TtsGenOptions bad;
    bad.lead_chunk_codes = {5, 0};
    EXPECT_THROW(TtsGenerator(*weights_, f, bad), rtf::Error);
    bad.lead_chunk_codes = {26};
    EXPECT_THROW(TtsGenerator(*weights_, f, bad), rtf::Error);
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

// --- duplex TTS stage (variant D; spec §2.7, §2.8; tts-duplex.h) ---------------------------

namespace {

// Logits with probabilities p (after the sampler's division by 0.8), the rest ~0.
std::vector<float> logits_for(const std::vector<double> &p, size_t n = 6562) {
    std::vector<float> l(n, -200.0f);
    for (size_t i = 0; i < p.size(); ++i) l[i] = static_cast<float>(std::log(p[i]) * 0.8);
    return l;
}

TEST(DuplexSampler, KeepRuleTopPTopKAndMinimumThree) {
    DuplexKept k;
    // top-p: cumulative 0.4, 0.6, 0.75 (< 0.85: keep one more), 0.87 -> 4 kept.
    auto l = logits_for({0.4, 0.2, 0.15, 0.12, 0.08, 0.05});
    sample_duplex(l, {}, 0, false, 0.5f, &k);
    EXPECT_EQ(k.idx, (std::vector<int32_t>{0, 1, 2, 3}));
    float sum = 0;
    for (float p : k.p) sum += p;
    EXPECT_NEAR(sum, 1.0f, 1e-6f);
    EXPECT_NEAR(k.p[0], 0.4f / 0.87f, 1e-5f);  // renormalised over the kept ones
    // At least 3 even when the first already covers 0.85.
    l = logits_for({0.98, 0.01, 0.005, 0.004});
    sample_duplex(l, {}, 0, false, 0.5f, &k);
    EXPECT_EQ(k.idx, (std::vector<int32_t>{0, 1, 2}));
    // At most 25 when 25 candidates cover less than 0.85 (flat): ties keep index order.
    std::vector<float> flat(6562, 0.0f);
    sample_duplex(flat, {}, 0, false, 0.5f, &k);
    ASSERT_EQ(k.idx.size(), 25u);
    for (int i = 0; i < 25; ++i) EXPECT_EQ(k.idx[static_cast<size_t>(i)], i);
    // Sorted by probability, whatever the index order; u picks along that order.
    l = logits_for({0.1, 0.2, 0.7});
    EXPECT_EQ(sample_duplex(l, {}, 0, false, 0.0f, &k), 2);
    EXPECT_EQ(k.idx, (std::vector<int32_t>{2, 1, 0}));
    l = logits_for({0.1, 0.2, 0.7});
    EXPECT_EQ(sample_duplex(l, {}, 0, false, 0.75f), 1);  // 0.7 < 0.75 <= 0.9
    l = logits_for({0.1, 0.2, 0.7});
    EXPECT_EQ(sample_duplex(l, {}, 0, false, 0.95f), 0);
}

TEST(DuplexSampler, EosMaskedOnlyWhenForbidden) {
    std::vector<double> p(6562, 1e-9);
    p[6561] = 0.9;  // EOS dominates
    p[3] = 0.05;
    auto l = logits_for(p);
    DuplexKept k;
    EXPECT_EQ(sample_duplex(l, {}, 5, false, 0.1f, &k), 6561);
    l = logits_for(p);
    const int c = sample_duplex(l, {}, 5, true, 0.1f, &k);
    EXPECT_EQ(c, 3);
    for (int32_t i : k.idx) EXPECT_NE(i, 6561);
}

TEST(DuplexSampler, RepetitionPenaltyCountsTheLast16CodesOfTheCall) {
    // Codes 1 (positive logit), 2 (negative) and 3 (positive) equal otherwise.
    auto base = [] {
        std::vector<float> l(6562, -200.0f);
        l[0] = 1.0f;
        l[1] = 1.0f;
        l[2] = -1.0f;
        l[3] = 1.0f;
        l[4] = -1.0f;
        return l;
    };
    // Call history (oldest first): code 3 four times, then 16 codes: 1 x3, 2 x2, 5 x11.
    std::vector<int32_t> hist{3, 3, 3, 3, 1, 1, 1, 2, 2};
    for (int i = 0; i < 11; ++i) hist.push_back(5);
    ASSERT_EQ(hist.size(), 20u);
    auto l = base();
    sample_duplex(l, hist, 20, false, 0.5f);  // l now holds the probabilities
    const double t = 0.8;
    // Code 3 is outside the window: unpenalised, like code 0.
    EXPECT_FLOAT_EQ(l[3], l[0]);
    // Positive logit divided by 1.05^3, negative multiplied by 1.05^2.
    EXPECT_NEAR(std::log(l[0] / l[1]), 1.0 / t - 1.0 / t / std::pow(1.05, 3), 1e-5);
    EXPECT_NEAR(std::log(l[4] / l[2]), -1.0 / t + 1.0 / t * 1.05 * 1.05, 1e-5);
    // t == 0 (first code of the call) applies no penalty at all.
    l = base();
    sample_duplex(l, hist, 0, false, 0.5f);
    EXPECT_FLOAT_EQ(l[1], l[0]);
    EXPECT_FLOAT_EQ(l[2], l[4]);
}

struct DMsg {
    int n;
    bool llm_finish, eot;
};

class DuplexGenerator : public Generator {
protected:
    Run drun(const std::vector<int> &script, const std::vector<DMsg> &msgs, TtsGenOptions o = {}) {
        o.mode = TtsMode::Duplex;
        o.host_logits = false;
        f_ = std::make_unique<ScriptedForward>(weights_->dims().n_embd, weights_->dims().n_codes, 4096);
        f_->script = script;
        TtsGenerator g(*weights_, *f_, o);
        Run r;
        in_turn_.clear();
        pos_.clear();
        g.set_observer({[&](const TtsPrefillEvent &e) {
                            r.pre.push_back({e.msg, e.phase, e.pos0, {}});
                            r.pre_rows.emplace_back(e.rows.begin(), e.rows.end());
                        },
                        [&](const TtsStepEvent &e) {
                            TtsStepEvent s{e.msg, e.phase, e.t, e.n_past, e.code, e.u, {}};
                            s.eos_masked = e.eos_masked;
                            s.n_hist = e.n_hist;
                            r.steps.push_back(s);
                        },
                        nullptr});
        int id = 1000;
        std::vector<float> hid;
        for (const auto &m : msgs) {
            std::vector<int32_t> ids;
            for (int i = 0; i < m.n; ++i) ids.push_back(id++);
            hid.assign(static_cast<size_t>(m.n * weights_->dims().n_llm), 0.5f);
            g.feed({ids, hid, m.eot, m.llm_finish}, r.chunks);
            in_turn_.push_back(g.in_turn());
            pos_.push_back(g.position());
        }
        return r;
    }
    static size_t rows(const std::vector<float> &v) { return v.size() / 16; }
    std::unique_ptr<ScriptedForward> f_;
    std::vector<bool> in_turn_;
    std::vector<int> pos_;
};

TEST_F(DuplexGenerator, NonFinalCallsEmitExactly26WithEosMasked) {
    const int EOS = 6561;
    // The transformer asks for EOS at every step of the first call: masked, 26 codes anyway.
    auto r = drun(std::vector<int>(26, EOS), {{4, false, false}});
    ASSERT_EQ(r.chunks.size(), 1u);
    EXPECT_EQ(r.chunks[0].codes.size(), 26u);
    EXPECT_TRUE(r.chunks[0].is_chunk_end);
    EXPECT_FALSE(r.chunks[0].is_final);
    ASSERT_EQ(r.steps.size(), 26u);
    for (size_t t = 0; t < 26; ++t) {
        EXPECT_TRUE(r.steps[t].eos_masked);
        EXPECT_NE(r.steps[t].code, EOS);
        EXPECT_EQ(r.steps[t].n_hist, static_cast<int>(t));  // the call's own codes only
    }
    // Condition [c x4, BOS, BOS] at 0, then every code fed (including the 26th): position 32.
    EXPECT_EQ(rows(r.pre_rows[0]), 6u);
    EXPECT_EQ(pos_[0], 6 + 26);
    EXPECT_TRUE(in_turn_[0]);
    // An end-of-turn call may stop at EOS (min_new 0) and is_final.
    auto e = drun(cat({codes(2, 7), {EOS}}), {{3, true, true}});
    ASSERT_EQ(e.chunks.size(), 1u);
    EXPECT_EQ(e.chunks[0].codes.size(), 2u);
    EXPECT_TRUE(e.chunks[0].is_final);
    EXPECT_FALSE(e.chunks[0].is_chunk_end);
    EXPECT_FALSE(e.steps[0].eos_masked);
    EXPECT_EQ(rows(e.pre_rows[0]), 3u + 3u);  // [c x3, BOS, text_eos, BOS]
    EXPECT_FALSE(in_turn_[0]);
}

TEST_F(DuplexGenerator, PositionsContinueAcrossCallsAndHistoryIsPerCall) {
    auto r = drun(codes(60, 3), {{4, false, false}, {2, false, false}});
    ASSERT_EQ(r.pre.size(), 2u + 52u);
    EXPECT_EQ(r.pre[27].pos0, 6 + 26);   // second condition after 6 + 26
    EXPECT_EQ(rows(r.pre_rows[27]), 4u);  // [c x2, BOS, BOS]
    EXPECT_EQ(r.steps[26].t, 0);
    EXPECT_EQ(r.steps[26].n_hist, 0);  // repetition history restarts per call
    // The RNG restarts per call: same draws at the same t.
    EXPECT_EQ(r.steps[26].u, r.steps[0].u);
    EXPECT_EQ(r.steps[30].u, r.steps[4].u);
}

TEST_F(DuplexGenerator, MessageFlagsMakeTheReferenceGroups) {
    const int EOS = 6561;
    // chunk A: text, text + llm_finish (empty chunk end follows); a finish without text (only
    // the chunk end); a message without text or flags (nothing); chunk B ends the turn.
    auto r = drun(cat({codes(52, 1), codes(1, 9), {EOS}}),
                  {{3, false, false}, {2, true, false}, {0, true, false}, {0, false, false}, {1, true, true}});
    ASSERT_EQ(r.chunks.size(), 5u);
    EXPECT_EQ(r.chunks[0].codes.size(), 26u);
    EXPECT_EQ(r.chunks[1].codes.size(), 26u);
    EXPECT_TRUE(r.chunks[2].codes.empty() && r.chunks[2].is_chunk_end && !r.chunks[2].is_final);
    EXPECT_TRUE(r.chunks[3].codes.empty() && r.chunks[3].is_chunk_end);
    EXPECT_EQ(r.chunks[4].codes.size(), 1u);
    EXPECT_TRUE(r.chunks[4].is_final);
    EXPECT_EQ(in_turn_, (std::vector<bool>{true, true, true, true, false}));
    // The text-less messages decoded nothing: 3 conditions, 26 + 26 + 1 codes (+ no EOS feed).
    size_t conds = 0;
    for (const auto &p : r.pre_rows) conds += rows(p) > 1;
    EXPECT_EQ(conds, 3u);
}

TEST_F(DuplexGenerator, EndOfTurnWithoutTextFlushesOnceOnTextEosAndBos) {
    const int EOS = 6561;
    // Text, then an end of turn without text: flush call on [text_eos, BOS].
    auto r = drun(cat({codes(26, 1), codes(2, 5), {EOS}}), {{2, false, false}, {0, true, true}});
    ASSERT_EQ(r.chunks.size(), 2u);
    EXPECT_EQ(r.chunks[1].codes.size(), 2u);
    EXPECT_TRUE(r.chunks[1].is_final);
    EXPECT_EQ(rows(r.pre_rows[27]), 2u);
    EXPECT_EQ(r.pre[27].pos0, 4 + 26);
    // After an end-of-turn call with codes, a second text-less end of turn generates nothing.
    auto s = drun(cat({codes(2, 5), {EOS}}), {{2, true, true}, {0, true, true}});
    EXPECT_EQ(s.chunks.size(), 1u);
    // An end-of-turn call that emits nothing is followed by an empty final marker.
    auto z = drun({EOS}, {{2, true, true}});
    ASSERT_EQ(z.chunks.size(), 2u);
    EXPECT_TRUE(z.chunks[0].codes.empty() && z.chunks[0].is_final);
    EXPECT_TRUE(z.chunks[1].codes.empty() && z.chunks[1].is_final);
}

TEST_F(DuplexGenerator, EndOfTurnWithoutLlmFinishKeepsTheTurnAndFeedsEos) {
    const int EOS = 6561;
    // EOS at t=0 of an end-of-turn call without llm_finish: fed (the KV is kept), no codes;
    // the next call is then the turn's first code: re-prefilled at position 0.
    auto r = drun(cat({{EOS}, codes(26, 4)}), {{2, false, true}, {3, false, false}});
    EXPECT_TRUE(in_turn_[0]);
    EXPECT_EQ(pos_[0], 5 + 1);           // [c c BOS text_eos BOS] + the EOS row
    ASSERT_GE(r.pre.size(), 4u);
    EXPECT_EQ(r.pre[2].pos0, 6);         // the second condition at the running position...
    EXPECT_EQ(r.pre[3].pos0, 0);         // ...then again at 0 for the turn's first code
    EXPECT_EQ(rows(r.pre_rows[3]), 5u);
    EXPECT_EQ(pos_[1], 5 + 26);
}

TEST_F(DuplexGenerator, NewTurnStartsAtPositionZero) {
    const int EOS = 6561;
    auto r = drun(cat({codes(1, 2), {EOS}, codes(26, 3)}), {{2, true, true}, {2, false, false}});
    ASSERT_EQ(r.chunks.size(), 2u);
    // Second turn: condition at 0 again.
    size_t second = 0;
    for (size_t i = 1; i < r.pre.size(); ++i)
        if (rows(r.pre_rows[i]) > 1) second = i;
    EXPECT_EQ(r.pre[second].pos0, 0);
    EXPECT_EQ(pos_[1], 4 + 26);
}

// The observer's message label counts over the utterance, not the turn: a duplex session's
// second speak turn goes on 2, 3 (the reference's call counter keeps counting), and only
// begin_utterance() starts again at 0 (issue 29 §3.4).
TEST_F(DuplexGenerator, MessageLabelCountsAcrossTurnsUntilANewUtterance) {
    const int EOS = 6561;
    TtsGenOptions o;
    o.mode = TtsMode::Duplex;
    o.host_logits = false;
    ScriptedForward f(weights_->dims().n_embd, weights_->dims().n_codes, 4096);
    // turn 0: one non-final call (26 codes), one end-of-turn call (1 code, EOS); turn 1: the same
    f.script = cat({codes(26, 1), codes(1, 2), {EOS}, codes(26, 3), codes(1, 4), {EOS}, codes(26, 5)});
    TtsGenerator g(*weights_, f, o);
    std::vector<int> pre_msg, step_msg;
    g.set_observer({[&](const TtsPrefillEvent &e) { pre_msg.push_back(e.msg); },
                    [&](const TtsStepEvent &e) { step_msg.push_back(e.msg); }, nullptr});
    std::vector<int32_t> ids{1000, 1001};
    std::vector<float> hid(2 * static_cast<size_t>(weights_->dims().n_llm), 0.5f);
    std::vector<AudioChunk> out;
    std::vector<int> first_step_msg;  // the label of each call's first step
    auto call = [&](bool eot) {
        const size_t k = step_msg.size();
        g.feed({ids, hid, eot, eot}, out);
        ASSERT_GT(step_msg.size(), k);
        first_step_msg.push_back(step_msg[k]);
        for (size_t i = k; i < step_msg.size(); ++i) EXPECT_EQ(step_msg[i], step_msg[k]) << "one label per call";
    };
    call(false);
    call(true);
    EXPECT_FALSE(g.in_turn());
    call(false);  // a new turn starts here: positions restart, the label does not
    EXPECT_EQ(pre_msg.back(), 2);
    call(true);
    EXPECT_EQ(first_step_msg, (std::vector<int>{0, 1, 2, 3}));
    // A new utterance (a new session) counts from 0 again.
    g.begin_utterance();
    call(false);
    EXPECT_EQ(first_step_msg.back(), 0);
    EXPECT_EQ(pre_msg.back(), 0);
}

TEST(DuplexBatch, MergesUpToTheFirstEndOfTurn) {
    std::vector<int32_t> a{1, 2}, b{3}, c{4, 5, 6};
    std::vector<float> ha(2 * 3, 1.0f), hb(3, 2.0f), hc(3 * 3, 3.0f);
    std::vector<TtsInput> q{{a, ha, false, false}, {b, hb, true, true}, {c, hc, false, false}};
    DuplexBatch out;
    EXPECT_EQ(merge_duplex_batch(q, 3, out), 2u);
    EXPECT_EQ(out.ids, (std::vector<int32_t>{1, 2, 3}));
    EXPECT_EQ(out.hidden.size(), 9u);
    EXPECT_EQ(out.hidden[6], 2.0f);
    EXPECT_TRUE(out.llm_finish && out.end_of_turn);
    EXPECT_EQ(merge_duplex_batch(std::span<const TtsInput>(q).subspan(2), 3, out), 1u);
    EXPECT_EQ(out.ids.size(), 3u);
    EXPECT_FALSE(out.llm_finish || out.end_of_turn);
    // Flags of text-less messages still count; text-only and hidden input do not mix.
    std::vector<TtsInput> f{{{}, {}, false, true}, {a, ha, false, false}};
    EXPECT_EQ(merge_duplex_batch(f, 3, out), 2u);
    EXPECT_TRUE(out.llm_finish);
    std::vector<TtsInput> mix{{a, ha, false, false}, {b, {}, false, false}};
    EXPECT_THROW(merge_duplex_batch(mix, 3, out), Error);
    std::vector<TtsInput> bad{{a, hb, false, false}};
    EXPECT_THROW(merge_duplex_batch(bad, 3, out), Error);
}

TEST(DuplexConfig, DuplexCodesIsValidated) {
    TtsConfig c;
    c.model_path = "x.gguf";
    for (int n : {0, 28}) {
        c.duplex_codes = n;
        try {
            c.validate();
            FAIL() << n;
        } catch (const Error &e) {
            EXPECT_EQ(e.kind(), ErrorKind::Usage);
            EXPECT_NE(std::string(e.what()).find("duplex_codes"), std::string::npos);
        }
    }
    c.duplex_codes = 26;
    EXPECT_NO_THROW(c.validate());
    EXPECT_EQ(c.to_json().at("duplex_codes"), 26);
}

// The fidelity statistics (weight-fidelity.h) against closed forms: KL of two Bernoulli
// distributions, top-1 agreement, hidden SNR; identical inputs give 0 nats and an infinite SNR.
TEST(WeightFidelity, AccumulatorMatchesClosedForms) {
    FidelityAccumulator same;
    same.add({0.25, 0.75}, {0.25, 0.75});
    const float h[3] = {1, -2, 3};
    same.add_hidden(h, h, 3);
    auto s = same.result();
    EXPECT_EQ(s.kl_mean, 0.0);
    EXPECT_EQ(s.top1_pct, 100.0);
    EXPECT_TRUE(std::isinf(s.hidden_snr_db));
    EXPECT_TRUE(s.passes());

    FidelityAccumulator acc;
    acc.add({0.9, 0.1}, {0.6, 0.4});   // same top-1
    acc.add({0.6, 0.4}, {0.3, 0.7});   // top-1 flips
    const double kl1 = 0.9 * std::log(0.9 / 0.6) + 0.1 * std::log(0.1 / 0.4);
    const double kl2 = 0.6 * std::log(0.6 / 0.3) + 0.4 * std::log(0.4 / 0.7);
    const float r[2] = {3, 4}, q[2] = {3, 3};  // signal 25, error 1
    acc.add_hidden(r, q, 2);
    auto f = acc.result();
    EXPECT_EQ(f.positions, 2);
    EXPECT_NEAR(f.kl_mean, (kl1 + kl2) / 2, 1e-12);
    EXPECT_NEAR(f.kl_max, std::max(kl1, kl2), 1e-12);
    EXPECT_EQ(f.top1_pct, 50.0);
    EXPECT_NEAR(f.hidden_snr_db, 10 * std::log10(25.0), 1e-9);
    EXPECT_FALSE(f.passes());
    EXPECT_EQ(f.to_json().at("passes"), false);

    EXPECT_THROW(FidelityAccumulator().result(), Error);
    EXPECT_THROW(acc.add({1.0}, {0.5, 0.5}), Error);
    const float lg[3] = {0, std::log(2.f), std::log(4.f)};
    auto p = softmax_at(lg, 3, 1.0);
    EXPECT_NEAR(p[0], 1.0 / 7, 1e-7);
    EXPECT_NEAR(p[2], 4.0 / 7, 1e-7);
}

}  // namespace
