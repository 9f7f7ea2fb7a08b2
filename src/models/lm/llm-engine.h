#pragma once
// LlmEngine: the speak path's LLM stage on upstream libllama (docs/minicpmo45.md §2.2, §3.1, §3.2).
// Prompt in; reply tokens out in steps of `llm_step` valid tokens, each token paired with
// the hidden state the TTS needs: the final-norm (output_norm) row at the token's own
// position, read from libllama's embeddings output of the very decode that feeds the token
// (no second pass: that decode also yields the logits for the next token).
//
//   LlmConfig cfg;  cfg.model_path = kit + "/MiniCPM-o-4_5-Q4_K_M.gguf";
//   LlmEngine llm(cfg);
//   llm.start("Tell me a story.");            // prefill (timed separately)
//   while (true) { LlmStep s = llm.next_step(); tts.feed(s); if (s.is_last) break; }
//
// Batched (decode-batcher.h): given a batcher, the engine is one sequence of the batcher's
// shared context and its decodes merge with other engines'; same API, own sampler and prompt
// cache (kept per sequence), no context of its own. docs/serve.md "Batching" has the numerics.
//
// Thread-safety: one thread drives an engine at a time. Steps own their data.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/lm/placement.h"

namespace rtf::lm {

class DecodeBatcher;

struct LlmConfig {
    std::string model_path;        // Qwen3 GGUF (required)
    ModelPlacement placement;      // n_ctx 4096 by default
    int llm_step = 10;             // valid tokens per step (reference 10)
    int max_tokens = 0;            // reply tokens (specials included) per start(); 0 = until a stop or the context is full
    bool greedy = false;           // argmax (equivalence checks); else temperature/top-k/top-p/min-p + seeded dist
    float temperature = 0.8f;      // reference defaults (llama.cpp common_params)
    int top_k = 40;
    float top_p = 0.95f;
    float min_p = 0.05f;
    uint32_t seed = 42;            // sampler seed; the chain is re-created on every start()
    std::string system_prompt;     // "" = no system turn
    bool chat_template = true;     // wrap the prompt in the simplex template (docs/minicpmo45.md §3.2); false = raw text
    // Text mode's user turn (start_text): "echo" = the text itself (the reply repeats the
    // user's words; the prefill grows with the text), "fixed" = kFixedTextTurn, the same for
    // every text, so the whole template is a cached prefix and only the reply is computed.
    // The reply's hidden states depend on the turn: "fixed" changes the math.
    std::string text_turn = "echo";
    // Keep the KV of the last prompt and reuse its longest common prefix with the next one
    // (system turn, template, a fixed text turn). Same math; off = clear the cache per reply.
    bool prompt_cache = true;

    void validate() const;         // throws rtf::Error(Usage) naming the field
    nlohmann::json to_json() const;
};

// One step: up to llm_step valid tokens (docs/minicpmo45.md §3.1 filter) and their hidden rows.
struct LlmStep {
    std::vector<int32_t> token_ids;  // valid tokens, in order
    std::vector<float> hidden;       // token_ids.size() x n_embd, row-major, F32
    int n_embd = 0;
    int n_tokens = 0;                // reply tokens consumed by this step (filtered ones included)
    std::string text;                // text of those tokens (specials not rendered)
    bool is_last = false;            // the reply ended with this step
    std::string stop;                // when is_last: "eos", "max_tokens", "context" or "text_end"
};

// The user turn of text mode's "fixed" text_turn.
inline constexpr const char *kFixedTextTurn = "Read the following text aloud.";

struct LlmTimings {
    int n_prompt = 0;       // tokens prefilled (text mode: template + the forced text)
    int n_prompt_cached = 0;  // of those, reused from the prompt cache (not decoded)
    double prefill_ms = 0;  // llama_decode time of the prompt (text mode: and of the forced
                            // text, computed a step at a time as next_step() asks for it)
    int n_decoded = 0;      // single-token decodes (one per reply token)
    double decode_ms = 0;   // llama_decode time of those
    double sample_ms = 0;   // sampler time
    double load_ms = 0;
    bool batched = false;     // decodes merged with other streams' (decode-batcher.h)
    double mean_batch = 1;    // batched: mean streams per decode this reply took part in
    nlohmann::json to_json() const;
};

// Throws rtf::Error(Usage) naming `what` if `text` is empty/blank or not valid UTF-8 (with
// the byte offset of the first bad byte).
void check_text(std::string_view text, const std::string &what);

class LlmEngine {
public:
    // Loads; throws rtf::Error(Setup). With `batcher` (made by make_llama_batcher on the same
    // file): joins it as one sequence instead of creating a context.
    explicit LlmEngine(const LlmConfig &cfg, std::shared_ptr<DecodeBatcher> batcher = nullptr);
    ~LlmEngine();
    LlmEngine(const LlmEngine &) = delete;
    LlmEngine &operator=(const LlmEngine &) = delete;

    // New reply to `prompt` (KV cleared, sampler re-seeded, prompt prefilled). Throws
    // rtf::Error(Usage) for empty/invalid text and "prompt of N tokens exceeds context C".
    void start(const std::string &prompt);
    // Text-only input: `text` is forced as the reply (no sampling): one batched pass over
    // the template, then each next_step() computes its step's hidden states in one batched
    // pass (so the first step does not wait for the whole text).
    void start_text(const std::string &text);
    // The tokens start_text(text) decodes under user turn `turn` ("echo" | "fixed", whatever
    // this engine's text_turn): the template with that turn, then the reply (the text);
    // *reply_at = where the reply begins. What `rtf lm-fidelity --text-turn` compares.
    std::vector<int32_t> text_mode_tokens(const std::string &text, const std::string &turn, size_t *reply_at) const;
    // One throw-away prompt pass and decode, to pay first-touch costs at load (speak's
    // load_engines calls it). Then, with prompt_cache, prefills the part of the template every
    // reply shares (system turn and user-turn header; text mode "fixed": the whole template),
    // so the first reply already reuses it.
    void warm();
    // Batched engines only (no-ops otherwise): interrupt_decode() makes a decode waiting to be
    // merged with other streams' throw "decode cancelled" now, and every later one, until
    // resume_decode() (decode-batcher.h's cancel/resume) — so a cancelled utterance leaves the
    // batch at its next step instead of after the merged decode it waits for. Thread-safe.
    void interrupt_decode();
    void resume_decode();
    // Next step; after a step with is_last, call start() again. Throws Usage if not started.
    LlmStep next_step();
    // Runs next_step() until is_last or until `on_step` returns false.
    void generate(const std::function<bool(const LlmStep &)> &on_step);
    bool done() const;
    bool batched() const;

    LlmTimings timings() const {
        LlmTimings t = timings_;
        t.batched = batched();
        t.mean_batch = mean_batch();
        return t;
    }
    const LlmConfig &config() const { return cfg_; }
    int n_embd() const;
    // Bytes its decodes handed a device and read back so far (llama-runtime.h's
    // decode_io_bytes); -1 on the CPU or batched (a merged decode serves several streams).
    int64_t device_io_bytes() const;
    int n_ctx() const;
    std::vector<int32_t> tokenize(const std::string &text, bool parse_special) const;
    std::string piece(int32_t token) const;
    // Id of a special token by its text ("<|tts_eos|>"), -1 if the vocabulary lacks it.
    int32_t special_id(const std::string &text) const;

private:
    void forced_compute(size_t upto);  // hidden rows of the forced reply up to token `upto`
    void reset_timings();              // per reply; load_ms stays
    double mean_batch() const;
    struct Impl;
    std::unique_ptr<Impl> p_;
    LlmConfig cfg_;
    LlmTimings timings_;
};

}  // namespace rtf::lm
