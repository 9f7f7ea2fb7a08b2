#pragma once
// DuplexLlm: the LLM's side of a duplex session (docs/minicpmo45.md §7.2-7.3) on libllama.
// Once per input frame: prefill the frame's embedding rows, decide listen or speak, on
// speak generate up to 26 text tokens with the hidden rows the TTS conditions on, then
// evaluate `</unit>`. The manual:
//
//   DuplexLlmConfig cfg;  cfg.model_path = kit.llm;
//   DuplexLlm llm(cfg);
//   llm.begin_session();                                   // KV cleared, sampler seeded
//   for (frame i) {
//       DuplexFrameResult r = llm.frame(apm_rows, n_rows, std::nullopt,   // or forced true/false
//                                       [&](DuplexMessage &&m) { tts_queue.push(m); });
//   }
//   if (auto m = llm.end_session()) tts_queue.push(*m);    // closes a turn still speaking
//
// Per frame:
//  1. Prefill, one llama_decode with embedding rows: the rows of `<unit>` read from the GGUF's
//     token_embd.weight (the reference's fused path: the token rows dequantised with ggml's
//     type traits), then the frame's audio rows (10 per 1 s). A vocabulary without a single
//     `<unit>` token (the twins': their tokenizer is Qwen2's plus the spec's named ids, and
//     `<unit>`'s id is an open question of the spec) gets the rows of the tokens the text
//     "<unit>" splits into; `unit_tokens()` says which.
//  2. force_listen: the first `force_listen_count` frames of a session decide nothing (no
//     decode, listen), as the reference does.
//  3. Decision: one token sampled from the prefill's last logits after the logit edits
//     (listen += 2 (listen_prob_scale - 1), <|tts_pad|> = -inf, <|turn_eos|> divided or
//     multiplied by length_penalty). `<|listen|>` = listen; anything else = speak (a sampled
//     `<|speak|>` is filtered from the text like every special; another token is the first
//     text token). A forced decision (`forced` set: a schedule on twins, whose sampled
//     decision is noise) feeds `<|speak|>` / `<|listen|>` instead of the sampled token.
//     The decision token enters the KV cache either way.
//  4. Speak: sample and feed one token at a time. The frame ends on `<|listen|>`,
//     `<|chunk_eos|>` or `<|chunk_tts_eos|>` (fed to the KV, not text), or once
//     `max_speak_tokens` (26) valid tokens are out (`text_cap` when set: twins), after which
//     `<|chunk_eos|>` is fed.
//     `<|turn_eos|>` / `<|tts_eos|>` / end-of-generation tokens set end_of_turn but do not end
//     the frame. A forced speak frame masks every token that would end the frame or the turn
//     and ends after forced_speak_tokens valid tokens (then `<|chunk_eos|>` is fed): a
//     schedule's turns have the length it says, each frame the same text.
//     Valid tokens (condition.h's filter) go to the TTS in messages of `step_size` (10);
//     the frame's last message carries llm_finish (and end_of_turn when the turn ended).
//  5. A listen right after a speaking frame ends the TTS turn: one message with no text,
//     llm_finish and end_of_turn (tts-duplex.h).
//  6. `</unit>` (its tokens) is evaluated at the end of every frame, force_listen ones too.
// Context (the reference's kv_cache_slide_window, which duplex uses: llama.cpp-omni
// tools/omni/omni.cpp at 0788f99; its per-round policy applies only to simplex, the unit
// window is off by default): before every decode, if the KV positions plus the rows to add
// reach n_ctx, the older half of what follows the first `keep_tokens` positions is dropped
// and the rest shifted down (llama_memory_seq_rm + seq_add, RoPE re-applied by libllama),
// so a session runs for ever with the most recent context. context_slide = false (or a
// context too small to make room) throws rtf::Error(Runtime) "context full" naming n_ctx.
//
// Errors: rtf::Error(Setup) at load (missing file, libllama refuses it, no token_embd.weight);
// rtf::Error(Usage) for rows of the wrong width or a frame() before begin_session();
// rtf::Error(Runtime) when llama_decode fails or the context is full. After a Runtime error
// the session is unusable until begin_session().
// Thread-safety: one thread drives an engine at a time; results and messages own their data.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/lm/placement.h"

namespace rtf::lm {

struct DuplexLlmConfig {
    std::string model_path;       // Qwen3 GGUF (required)
    ModelPlacement placement;     // n_ctx 4096 by default
    int max_speak_tokens = 26;    // valid tokens per speaking frame (max_new_speak_tokens_per_chunk)
    int step_size = 10;           // valid tokens per TTS message (the reference's step_size)
    int force_listen_count = 3;   // first frames of a session that decide nothing (listen)
    // A forced speak frame ends with <|chunk_eos|> after this many valid tokens (1 ..
    // max_speak_tokens). 10 = one TTS message = one 26-code call, ~1 s of audio per 1 s
    // frame: the pace of a real speaking frame (a real model speaks ~3-5 tokens per second
    // of audio and ends its chunks early). 26 would triple the TTS work per frame, a shape
    // no real model has.
    int forced_speak_tokens = 10;
    // A sampled (not forced) speak frame ends with <|chunk_eos|> after this many valid tokens
    // when 1 .. max_speak_tokens - 1 (end "twin_text_cap"); 0 = only max_speak_tokens. For
    // twins, whose random LLM never ends a speak unit early and so always writes all 26: a
    // real model speaking ~3 words/s writes ~4-6 per 1 s unit (speak/duplex.h,
    // DuplexConfig::twin_text_rate, sets it on twin kits only). Forced frames ignore it.
    int text_cap = 0;
    // Fewer passes over the weights per frame, the same sequence in the KV cache: tokens that
    // need no logits of their own are fed in the next pass instead of one pass each — a forced
    // decision rides in the frame's prefill, and the frame's closing tokens (an end token,
    // `<|chunk_eos|>`, `</unit>`) lead the next frame's prefill. A listening frame costs one
    // pass instead of two or three, a speaking one 1 + its text tokens instead of 4 + them.
    // The math differs only by the batch's rounding (causal attention: a token attends to the
    // same positions in either pass). Off = the reference's call structure (one decode each);
    // then n_past_after counts the closing tokens too (with it on they are pending until the
    // next frame, and a session's last ones are never fed).
    bool fuse_passes = true;
    float listen_prob_scale = 1.0f;  // logit[<|listen|>] += 2 (scale - 1); 1 = no edit
    float length_penalty = 1.0f;     // <|turn_eos|> logit / penalty if > 0, else * penalty; 1 = no edit
    bool greedy = false;          // argmax; else top-k / top-p / min-p / temperature + seeded dist
    float temperature = 0.8f;     // llama.cpp common_params defaults, as LlmConfig
    int top_k = 40;
    float top_p = 0.95f;
    float min_p = 0.05f;
    uint32_t seed = 42;           // sampler seed, re-seeded by begin_session()
    bool context_slide = true;    // the reference's sliding window (header); false = "context full"
    int keep_tokens = 0;          // positions at the start a slide never drops (the reference's n_keep:
                                  // its system prompt; this session has none)

    void validate() const;        // throws rtf::Error(Usage) naming the field
    nlohmann::json to_json() const;
};

// One message for the duplex TTS (a TtsInput's content, owned).
struct DuplexMessage {
    int frame = 0;                // the input frame that produced it
    std::vector<int32_t> ids;     // valid text tokens (<= step_size)
    std::vector<float> hidden;    // ids.size() x n_embd, final-norm rows
    bool llm_finish = false;      // the frame's decode chunk ended with this message
    bool end_of_turn = false;     // the speak turn ended with this message
};

struct DuplexFrameResult {
    int frame = 0;                // 0-based index in the session
    bool is_speak = false;
    bool forced = false;          // the decision came from the caller, not from sampling
    bool force_listen = false;    // one of the first force_listen_count frames: no decode
    std::string decision;         // the decision token's text ("<|speak|>", "<|listen|>", or the sampled piece); "" when none
    std::vector<int32_t> ids;     // the frame's valid text tokens (<= max_speak_tokens)
    std::vector<float> hidden;    // ids.size() x n_embd
    int n_embd = 0;
    int n_sampled = 0;            // tokens sampled after the decision (filtered and end tokens included)
    std::string text;             // text of the sampled tokens (specials not rendered)
    std::string end;              // speak: "listen", "chunk_eos", "chunk_tts_eos", "budget" (max_speak_tokens),
                                  // "forced" (forced_speak_tokens), "twin_text_cap" (text_cap); listen: ""
    bool end_of_turn = false;     // this frame ended the speak turn (its last message says so)
    int n_prefill_rows = 0;       // `<unit>` rows + audio rows
    int n_past_before = 0, n_past_after = 0;  // KV positions around the frame
    int n_discarded = 0;          // positions the context slide dropped during this frame (0 = none)
    double prefill_ms = 0;        // the frame's embedding prefill (llama_decode)
    double decode_ms = 0;         // decision + text: single-token decodes and sampling
    double unit_end_ms = 0;       // `</unit>` evaluation (0 with fuse_passes: it leads the next prefill)
    int n_fused_rows = 0;         // rows of other tokens in the prefill pass (fuse_passes): the last frame's closing ones, a forced decision
};

// The special tokens a duplex turn uses, resolved by text at load; -1 = the vocabulary lacks it.
struct DuplexTokens {
    int32_t speak = -1, listen = -1, chunk_eos = -1, chunk_tts_eos = -1, turn_eos = -1, tts_eos = -1, tts_pad = -1;
    std::vector<int32_t> unit_open;   // what "<unit>" tokenises to (one id on the real vocabulary)
    std::vector<int32_t> unit_close;  // what "</unit>" tokenises to
    bool unit_special() const { return unit_open.size() == 1 && unit_close.size() == 1; }
    nlohmann::json to_json() const;
};

class DuplexLlm {
public:
    explicit DuplexLlm(const DuplexLlmConfig &cfg);  // loads; throws rtf::Error(Setup)
    ~DuplexLlm();
    DuplexLlm(const DuplexLlm &) = delete;
    DuplexLlm &operator=(const DuplexLlm &) = delete;

    // A new session: KV cleared, sampler re-seeded, frame counter and speaking state reset.
    void begin_session();
    // One frame: `rows` = n_rows x n_embd() audio embeddings (n_rows >= 1). `forced`: the
    // decision to take instead of sampling (true = speak). `on_message` receives the TTS
    // messages in order, on this thread, as they are ready (a group of step_size is sent
    // before the next token is sampled). See the header comment for the steps.
    DuplexFrameResult frame(const float *rows, int n_rows, std::optional<bool> forced,
                            const std::function<void(DuplexMessage &&)> &on_message);
    // The message that closes a turn still speaking at the end of the input (llm_finish +
    // end_of_turn, no text); nothing when the session is not speaking.
    std::optional<DuplexMessage> end_session();
    // A throw-away prefill and decode to pay first-touch costs; the KV is left empty.
    void warm();

    int n_embd() const;
    int n_ctx() const;
    int n_past() const;
    int n_slides() const;         // context slides in this session
    // The KV cache's lowest and highest position of the session's sequence (-1, -1 when
    // empty): after any number of slides they are keep..n_past()-1 with no gap (tests).
    std::pair<int, int> kv_span() const;
    bool speaking() const;
    const DuplexTokens &tokens() const;
    const DuplexLlmConfig &config() const { return cfg_; }
    double load_ms() const { return load_ms_; }
    std::string piece(int32_t token) const;

private:
    struct Impl;
    std::unique_ptr<Impl> p_;
    DuplexLlmConfig cfg_;
    double load_ms_ = 0;
};

}  // namespace rtf::lm
