// rtf_lm model tests: tiny GGUF fixtures through libllama (LLM engine and TTS engine).
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include <llama.h>

#include "core/error.h"
#include "lm-fixtures.h"
#include "models/lm/code-sampler.h"
#include "models/lm/derived-tts-model.h"
#include "models/lm/llama-runtime.h"
#include "models/lm/llm-engine.h"
#include "models/lm/tts-engine.h"
#include "models/lm/weight-fidelity.h"

using namespace rtf;
using namespace rtf::lm;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::function<void()> &f, ErrorKind *kind = nullptr) {
    try {
        f();
    } catch (const Error &e) {
        if (kind) *kind = e.kind();
        return e.what();
    }
    return "";
}

class Llm : public ::testing::Test {
protected:
    static void SetUpTestSuite() { path_ = new std::string(test::write_tiny_qwen3(test::temp_dir("llm") + "/tiny-qwen3.gguf")); }
    static void TearDownTestSuite() { delete path_; }
    static LlmConfig config() {
        LlmConfig c;
        c.model_path = *path_;
        c.placement.n_threads = 1;
        c.placement.n_ctx = 512;
        c.max_tokens = 25;
        return c;
    }
    static std::string *path_;
};
std::string *Llm::path_ = nullptr;

TEST_F(Llm, StepsCarryValidTokensAndHiddenRows) {
    auto c = config();
    c.greedy = true;
    LlmEngine llm(c);
    EXPECT_EQ(llm.n_embd(), 64);
    llm.start("Hello, who are you?");
    int total = 0;
    std::vector<LlmStep> steps;
    llm.generate([&](const LlmStep &s) { steps.push_back(s); return true; });
    ASSERT_FALSE(steps.empty());
    for (const auto &s : steps) {
        total += s.n_tokens;
        EXPECT_LE(s.token_ids.size(), 10u);
        EXPECT_EQ(s.hidden.size(), s.token_ids.size() * 64);
        for (auto id : s.token_ids) EXPECT_LT(id, 150000);
        for (float v : s.hidden) ASSERT_TRUE(std::isfinite(v));
    }
    EXPECT_TRUE(steps.back().is_last);
    EXPECT_EQ(steps.back().stop, "max_tokens");
    EXPECT_EQ(total, 25);
    const auto t = llm.timings();
    EXPECT_GT(t.n_prompt, 5);
    EXPECT_EQ(t.n_decoded, 25);
    EXPECT_GT(t.prefill_ms, 0);
    EXPECT_GT(t.decode_ms, 0);
    EXPECT_TRUE(llm.done());
    EXPECT_THROW(llm.next_step(), Error);
}

TEST_F(Llm, SeededSamplingIsReproducible) {
    auto c = config();
    c.temperature = 1.5f;
    LlmEngine llm(c);
    auto run = [&] {
        llm.start("Tell me a story.");
        std::vector<int32_t> ids;
        std::vector<float> h;
        llm.generate([&](const LlmStep &s) {
            ids.insert(ids.end(), s.token_ids.begin(), s.token_ids.end());
            h.insert(h.end(), s.hidden.begin(), s.hidden.end());
            return true;
        });
        return std::make_pair(ids, h);
    };
    auto a = run(), b = run();
    EXPECT_EQ(a.first, b.first);
    EXPECT_EQ(a.second, b.second);
}

// The hidden row of a reply token is the final-norm state at that token's own position:
// the same as a batched pass over prompt + reply with outputs at the reply positions.
TEST_F(Llm, HiddenIsTheTokensOwnPosition) {
    auto c = config();
    c.greedy = true;
    c.chat_template = false;
    c.max_tokens = 12;
    LlmEngine llm(c);
    const std::string prompt = "The quick brown fox";
    llm.start(prompt);
    std::vector<int32_t> ids;
    std::vector<float> h;
    int n_tokens = 0;
    llm.generate([&](const LlmStep &s) {
        n_tokens += s.n_tokens;
        ids.insert(ids.end(), s.token_ids.begin(), s.token_ids.end());
        h.insert(h.end(), s.hidden.begin(), s.hidden.end());
        return true;
    });
    if (static_cast<int>(ids.size()) != n_tokens) GTEST_SKIP() << "reply contains filtered tokens";
    auto toks = llm.tokenize(prompt, false);
    const size_t n_prompt = toks.size();
    toks.insert(toks.end(), ids.begin(), ids.end());
    ModelPlacement pl = c.placement;
    LlamaInstance inst = load_llama(c.model_path, pl, true, "check");
    llama_batch b = llama_batch_init(static_cast<int>(toks.size()), 0, 1);
    b.n_tokens = static_cast<int>(toks.size());
    for (size_t i = 0; i < toks.size(); ++i) {
        b.token[i] = toks[i];
        b.pos[i] = static_cast<int>(i);
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = i >= n_prompt;
    }
    ASSERT_EQ(llama_decode(inst.ctx.get(), b), 0);
    float worst = 0;
    for (size_t k = 0; k < ids.size(); ++k) {
        const float *e = llama_get_embeddings_ith(inst.ctx.get(), static_cast<int>(n_prompt + k));
        ASSERT_NE(e, nullptr);
        for (int j = 0; j < 64; ++j) worst = std::max(worst, std::fabs(e[j] - h[k * 64 + static_cast<size_t>(j)]));
    }
    llama_batch_free(b);
    EXPECT_LT(worst, 2e-2f);
}

// --llm-cpus pins the compute threads: ggml's threadpool (strict placement, one CPU per
// thread) binds each of them, the calling thread (thread 0) included, to its CPU of the
// set. Checked on the thread that ran the decode: its affinity is the set's first CPU.
TEST_F(Llm, PinnedThreadpoolRuns) {
    cpu_set_t all;
    CPU_ZERO(&all);
    ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
    std::vector<int> allowed;
    for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &all)) allowed.push_back(i);
    if (allowed.size() < 2) GTEST_SKIP() << "needs 2 CPUs (ggml applies no affinity to a 1-thread compute)";
    auto c = config();
    c.placement.cpus = {allowed[1], allowed[0]};  // sorted by the pool: thread 0 -> the lower id
    c.placement.n_threads = c.placement.n_threads_batch = 0;  // = the set's size
    c.placement.poll = 0;
    c.max_tokens = 3;
    int n = 0;
    cpu_set_t after;
    CPU_ZERO(&after);
    std::thread t([&] {
        LlmEngine llm(c);
        EXPECT_EQ(c.placement.threads(), 2);
        llm.start("Hi");
        llm.generate([&](const LlmStep &s) { n += s.n_tokens; return true; });
        sched_getaffinity(0, sizeof after, &after);
    });
    t.join();
    EXPECT_EQ(n, 3);
    EXPECT_EQ(CPU_COUNT(&after), 1) << "the decoding thread was not pinned";
    EXPECT_TRUE(CPU_ISSET(allowed[0], &after) || CPU_ISSET(allowed[1], &after));
}

TEST_F(Llm, TextModeSlicesTheForcedReply) {
    auto c = config();
    c.llm_step = 4;
    LlmEngine llm(c);
    llm.start_text("One two three four five six seven eight nine ten eleven.");
    std::vector<LlmStep> steps;
    llm.generate([&](const LlmStep &s) { steps.push_back(s); return true; });
    ASSERT_GE(steps.size(), 3u);
    for (size_t i = 0; i + 1 < steps.size(); ++i) EXPECT_EQ(steps[i].token_ids.size(), 4u);
    EXPECT_EQ(steps.back().stop, "text_end");
    EXPECT_EQ(llm.timings().n_decoded, 0);
    std::string text;
    for (auto &s : steps) text += s.text;
    EXPECT_EQ(text, "One two three four five six seven eight nine ten eleven.");
}

namespace {
// Every hidden row of a text-mode reply, and the engine's timings after it.
std::pair<std::vector<float>, LlmTimings> text_reply(LlmEngine &llm, const std::string &text) {
    llm.start_text(text);
    std::vector<float> h;
    llm.generate([&](const LlmStep &s) {
        h.insert(h.end(), s.hidden.begin(), s.hidden.end());
        return true;
    });
    return {h, llm.timings()};
}
}  // namespace

// The prompt cache reuses the KV of a common prefix; the reply's hidden rows must be those of
// a full prefill (row-independent kernels: bit-exact on the CPU backend).
TEST_F(Llm, PromptCacheKeepsTheMath) {
    auto c = config();
    c.system_prompt = "You are a helpful assistant.";
    const std::string text = "One two three four five six seven eight nine ten eleven.";
    c.prompt_cache = false;
    LlmEngine plain(c);
    plain.warm();
    const auto want = text_reply(plain, text);
    EXPECT_EQ(want.second.n_prompt_cached, 0);
    c.prompt_cache = true;
    LlmEngine cached(c);
    cached.warm();  // prefills the system turn and the user-turn header
    const auto first = text_reply(cached, "Something else entirely.");
    EXPECT_GT(first.second.n_prompt_cached, 5) << "the system turn was not reused";
    const auto got = text_reply(cached, text);
    EXPECT_GT(got.second.n_prompt_cached, first.second.n_prompt_cached - 1);
    EXPECT_EQ(got.second.n_prompt, want.second.n_prompt);
    ASSERT_EQ(got.first.size(), want.first.size());
    EXPECT_EQ(got.first, want.first);
    // prompt mode after text mode: the cached text-mode prompt must not leak into it
    c.greedy = true;
    LlmEngine g1(c), g2(c);
    g2.warm();
    text_reply(g2, text);
    auto reply = [](LlmEngine &e) {
        e.start("Tell me a story.");
        std::vector<int32_t> ids;
        e.generate([&](const LlmStep &s) {
            ids.insert(ids.end(), s.token_ids.begin(), s.token_ids.end());
            return true;
        });
        return ids;
    };
    EXPECT_EQ(reply(g1), reply(g2));
}

// text_turn "fixed": the whole template is prefilled by warm(), a reply decodes only its text.
TEST_F(Llm, FixedTextTurnComputesOnlyTheReply) {
    auto c = config();
    c.text_turn = "fixed";
    LlmEngine llm(c);
    llm.warm();
    const std::string text = "One two three four five six seven eight nine ten eleven.";
    const auto r = text_reply(llm, text);
    const int n_reply = static_cast<int>(llm.tokenize(text, false).size());
    EXPECT_EQ(r.second.n_prompt_cached, r.second.n_prompt - n_reply);
    // the same text again: the same rows (nothing of the last reply stays in the cache)
    EXPECT_EQ(text_reply(llm, text).first, r.first);
    // another user turn, other hidden states: this knob changes the math
    c.text_turn = "echo";
    LlmEngine echo(c);
    echo.warm();
    const auto e = text_reply(echo, text);
    ASSERT_EQ(e.first.size(), r.first.size());
    EXPECT_NE(e.first, r.first);
    c.text_turn = "bogus";
    ErrorKind k{};
    EXPECT_EQ(error_of([&] { LlmEngine bad(c); }, &k).rfind("text-turn: ", 0), 0u);
    EXPECT_EQ(k, ErrorKind::Usage);
}

TEST_F(Llm, ClearErrors) {
    auto c = config();
    c.placement.n_ctx = 32;
    c.placement.n_batch = 32;
    LlmEngine llm(c);
    ErrorKind k{};
    EXPECT_NE(error_of([&] { llm.start(""); }, &k).find("empty"), std::string::npos);
    EXPECT_EQ(k, ErrorKind::Usage);
    EXPECT_NE(error_of([&] { llm.start("bad \xff byte"); }, &k).find("UTF-8"), std::string::npos);
    std::string longp;
    for (int i = 0; i < llm.n_ctx() + 10; ++i) longp += "word ";
    const std::string m = error_of([&] { llm.start(longp); }, &k);
    EXPECT_NE(m.find("exceeds context " + std::to_string(llm.n_ctx())), std::string::npos) << m;
    EXPECT_EQ(k, ErrorKind::Usage);
    EXPECT_NE(error_of([&] { llm.start_text(longp); }, &k).find("exceeds context"), std::string::npos);
    auto bad = config();
    bad.model_path = "/nonexistent/model.gguf";
    EXPECT_NE(error_of([&] { LlmEngine x(bad); }, &k).find("/nonexistent/model.gguf"), std::string::npos);
    EXPECT_EQ(k, ErrorKind::Setup);
}

// --- TTS ------------------------------------------------------------------------------

class Tts : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new std::string(test::temp_dir("tts"));
        test::write_tiny_tts(*dir_, {});
    }
    static void TearDownTestSuite() { delete dir_; }
    static TtsConfig config() {
        TtsConfig c;
        c.model_path = *dir_ + "/tts/MiniCPM-o-4_5-tts-F16.gguf";
        c.placement.n_threads = 1;
        c.max_codes_per_phase = 60;  // twins rarely say EOS; keep the work bounded
        return c;
    }
    static std::vector<AudioChunk> speak(TtsEngine &tts, unsigned seed, int n_msgs) {
        std::vector<AudioChunk> all;
        std::mt19937 g(seed);
        std::normal_distribution<float> nd;
        for (int m = 0; m < n_msgs; ++m) {
            std::vector<int32_t> ids;
            for (int i = 0; i < 10; ++i) ids.push_back(1000 + static_cast<int32_t>(g() % 140000));
            std::vector<float> h(ids.size() * 128);
            for (auto &v : h) v = nd(g);
            auto c = tts.feed(TtsInput{ids, h, m == n_msgs - 1});
            all.insert(all.end(), c.begin(), c.end());
        }
        return all;
    }
    static std::string *dir_;
};
std::string *Tts::dir_ = nullptr;

TEST_F(Tts, DerivedModelIsCachedNextToTheKit) {
    TtsEngine a(config());
    EXPECT_EQ(fs::path(a.derived_model_path()).parent_path(), fs::path(*dir_) / ".rtf-cache");
    struct stat s1 {}, s2 {};
    ASSERT_EQ(::stat(a.derived_model_path().c_str(), &s1), 0);
    TtsEngine b(config());
    EXPECT_EQ(a.derived_model_path(), b.derived_model_path());
    ASSERT_EQ(::stat(b.derived_model_path().c_str(), &s2), 0);
    EXPECT_EQ(s1.st_mtim.tv_nsec, s2.st_mtim.tv_nsec);  // reused, not rewritten
    EXPECT_EQ(a.dims().n_embd, 64);
    EXPECT_EQ(a.dims().n_codes, 6562);
    EXPECT_EQ(a.dims().n_llm, 128);
}

TEST_F(Tts, SimplexChunksAreTwentyFiveCodesThenFinal) {
    TtsEngine tts(config());
    auto chunks = speak(tts, 5, 3);
    ASSERT_GE(chunks.size(), 2u);
    EXPECT_TRUE(chunks.back().is_final);
    EXPECT_TRUE(chunks.back().codes.empty());
    size_t total = 0;
    for (size_t i = 0; i + 1 < chunks.size(); ++i) {
        EXPECT_FALSE(chunks[i].is_final);
        if (i + 2 < chunks.size()) {
            EXPECT_EQ(chunks[i].codes.size(), 25u);
        }
        for (auto c : chunks[i].codes) EXPECT_LT(c, 6561);
        total += chunks[i].codes.size();
    }
    const auto t = tts.timings();
    EXPECT_EQ(static_cast<size_t>(t.n_codes), total);
    EXPECT_GT(total, 0u);
    EXPECT_EQ(t.n_prefill_calls, 3);
    EXPECT_EQ(t.n_prefill_rows, 33);
    EXPECT_GT(t.decode_ms, 0);
    // Same seed, same codes; the engine starts a new utterance after the final step.
    auto again = speak(tts, 5, 3);
    ASSERT_EQ(again.size(), chunks.size());
    for (size_t i = 0; i < chunks.size(); ++i) EXPECT_EQ(again[i].codes, chunks[i].codes);
}

TEST_F(Tts, HostAndBackendLogitsAgreeClosely) {
    TtsEngine tts(config());
    std::vector<float> rows(3 * 64, 0.1f);
    tts.forward().clear();
    tts.forward().decode(rows.data(), 3, 0);
    auto z = tts.forward().hidden();
    auto bl = tts.forward().logits();
    ASSERT_EQ(bl.size(), 6562u);
    std::vector<float> hl(6562);
    code_logits(z, tts.weights().head(), 6562, hl);
    float worst = 0;
    for (size_t i = 0; i < hl.size(); ++i) worst = std::max(worst, std::fabs(hl[i] - bl[i]));
    EXPECT_LT(worst, 1e-4f);
}

TEST_F(Tts, DuplexAndFinishWork) {
    auto c = config();
    c.mode = TtsMode::Duplex;
    TtsEngine tts(c);
    std::vector<int32_t> ids{1000, 2000, 3000};
    std::vector<float> h(3 * 128, 0.3f);
    auto a = tts.feed(TtsInput{ids, h, false});
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].codes.size(), 26u);
    EXPECT_TRUE(a[0].is_chunk_end);
    // finish() = end of turn with llm_finish and no text: a flush call on [text_eos, BOS]; if
    // it emits nothing, an empty final marker follows its (empty) final chunk.
    auto b = tts.finish();
    ASSERT_FALSE(b.empty());
    ASSERT_LE(b.size(), 2u);
    for (const auto &chunk : b) EXPECT_TRUE(chunk.is_final);
    EXPECT_TRUE(tts.finish().empty());
}

TEST_F(Tts, DuplexFeedQueuedMergesUpToTheEndOfTurn) {
    auto c = config();
    c.mode = TtsMode::Duplex;
    TtsEngine tts(c);
    std::vector<int32_t> a{1000, 2000}, b{3000}, d{4000, 5000};
    std::vector<float> ha(2 * 128, 0.3f), hb(128, -0.2f), hd(2 * 128, 0.1f);
    // Queued together, [a] and [b, llm_finish] form one batch: one call of 26 codes, then the
    // empty chunk end of llm_finish.
    std::vector<TtsInput> q{{a, ha, false, false}, {b, hb, false, true}};
    auto out = tts.feed_queued(q);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].codes.size(), 26u);
    EXPECT_TRUE(out[0].is_chunk_end);
    EXPECT_TRUE(out[1].codes.empty() && out[1].is_chunk_end);
    // A batch ends at the first end of turn: [d, end of turn] closes the turn, [a] starts the next.
    std::vector<TtsInput> r{{d, hd, true, true}, {a, ha, false, false}};
    out = tts.feed_queued(r);
    ASSERT_GE(out.size(), 2u);
    EXPECT_TRUE(out[out.size() - 2].is_final);
    EXPECT_EQ(out.back().codes.size(), 26u);
    EXPECT_TRUE(out.back().is_chunk_end);
    EXPECT_FALSE(tts.finish().empty());  // the second turn is open
    // Simplex engines have no queued input.
    TtsEngine simplex(config());
    EXPECT_THROW(simplex.feed_queued(q), rtf::Error);
}

TEST_F(Tts, ProjectorFallsBackToTheTtsFilesCopy) {
    const std::string d = test::temp_dir("tts-noproj");
    test::TinyTtsSpec s;
    s.projector_file = false;
    test::write_tiny_tts(d, s);
    TtsConfig c = config();
    c.model_path = d + "/tts/MiniCPM-o-4_5-tts-F16.gguf";
    TtsEngine a(c);
    EXPECT_NE(a.weights().projector_source().find("projector_semantic"), std::string::npos);
    // Same values as the projector file: same codes as the kit with the file.
    TtsEngine b(config());
    auto ca = speak(a, 9, 2), cb = speak(b, 9, 2);
    ASSERT_EQ(ca.size(), cb.size());
    for (size_t i = 0; i < ca.size(); ++i) EXPECT_EQ(ca[i].codes, cb[i].codes);
}

TEST_F(Tts, MissingOrMisshapedTensorsAreSetupErrors) {
    for (auto [skip, bad, want] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"emb_code.0.weight", "", "missing tensor 'emb_code.0.weight'"},
             {"head_code.0.weight", "", "missing tensor 'head_code.0.weight'"},
             {"", "head_code.0.weight", "'head_code.0.weight' has shape [6563, 64], expected [6562, 64]"},
             {"blk.1.ffn_up.weight", "", "blk.1.ffn_up.weight"},
             {"", "blk.0.attn_q.weight", "blk.0.attn_q.weight"}}) {
        const std::string d = test::temp_dir("tts-bad");
        test::TinyTtsSpec s;
        s.skip_tensor = skip;
        s.bad_shape_tensor = bad;
        test::write_tiny_tts(d, s);
        TtsConfig c = config();
        c.model_path = d + "/tts/MiniCPM-o-4_5-tts-F16.gguf";
        ErrorKind k{};
        const std::string m = error_of([&] { TtsEngine t(c); }, &k);
        EXPECT_NE(m.find(want), std::string::npos) << "got: " << m;
        EXPECT_EQ(k, ErrorKind::Setup) << m;
    }
    TtsConfig c = config();
    c.model_path = "/nonexistent/tts.gguf";
    ErrorKind k{};
    EXPECT_NE(error_of([&] { TtsEngine t(c); }, &k).find("/nonexistent/tts.gguf"), std::string::npos);
    EXPECT_EQ(k, ErrorKind::Setup);
}

TEST_F(Tts, TruncatedFileFailsNamingTheFirstCutTensor) {
    const std::string d = test::temp_dir("tts-cut");
    test::write_tiny_tts(d, {});
    TtsConfig c = config();
    c.model_path = d + "/tts/MiniCPM-o-4_5-tts-F16.gguf";
    // Cut the file in the middle of its data: the engine must refuse it before reading any
    // tensor, and name the first tensor (in file order) that lost bytes.
    const auto size = fs::file_size(c.model_path);
    fs::resize_file(c.model_path, size / 2);
    ErrorKind k{};
    const std::string m = error_of([&] { TtsEngine t(c); }, &k);
    EXPECT_EQ(k, ErrorKind::Setup) << m;
    EXPECT_NE(m.find(c.model_path + ": truncated"), std::string::npos) << m;
    EXPECT_NE(m.find("' is cut off"), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(size / 2)), std::string::npos) << m;
}

}  // namespace

// Issue 30 §2: `rtf lm-fidelity`'s numbers, on tiny fixtures: a converted type is compared
// position by position with the file's own weights; the figures are sane and name both files.
TEST_F(Llm, WeightTypeFidelityComparesTheConvertedFile) {
    LlmFidelityConfig c;
    c.model_path = *path_;
    c.placement.n_threads = c.placement.n_threads_batch = 1;
    c.placement.weight_type = "q8_0";
    c.max_tokens = 48;
    const WeightFidelity f = llm_weight_fidelity(c);
    EXPECT_EQ(f.stage, "llm");
    EXPECT_GT(f.positions, 1);
    EXPECT_LE(f.positions, 48);
    EXPECT_GE(f.kl_mean, 0.0);
    EXPECT_GT(f.kl_max, 0.0);  // q8_0 rounds the weights: some position must move
    EXPECT_LE(f.kl_p99, f.kl_max);
    EXPECT_GE(f.top1_pct, 0.0);
    EXPECT_LE(f.top1_pct, 100.0);
    EXPECT_TRUE(std::isfinite(f.hidden_snr_db));
    EXPECT_NE(f.reference_file, f.type_file);
    EXPECT_NE(f.type_file.find(".q8_0."), std::string::npos) << f.type_file;
    // The reference priced against itself is refused, naming the flag.
    c.placement.weight_type = "file";
    ErrorKind k{};
    EXPECT_EQ(error_of([&] { llm_weight_fidelity(c); }, &k).rfind("weight-type: ", 0), 0u);
    EXPECT_EQ(k, ErrorKind::Usage);
}

TEST_F(Tts, WeightTypeFidelityComparesTheConvertedFile) {
    TtsFidelityConfig c;
    c.model_path = config().model_path;
    c.placement.n_threads = c.placement.n_threads_batch = 1;
    c.placement.weight_type = "q8_0";
    c.n_codes = 24;
    const WeightFidelity f = tts_weight_fidelity(c);
    EXPECT_EQ(f.stage, "tts");
    EXPECT_EQ(f.positions, 24);
    EXPECT_GE(f.kl_mean, 0.0);
    EXPECT_GT(f.kl_max, 0.0);
    EXPECT_TRUE(std::isfinite(f.hidden_snr_db));
    EXPECT_NE(f.type_file.find(".q8_0."), std::string::npos) << f.type_file;
    EXPECT_FLOAT_EQ(f.temperature, kCodeTemperature);
}
