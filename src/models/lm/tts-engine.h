#pragma once
// TtsEngine: MiniCPM-o 4.5's TTS stage — LLM (token, hidden) steps in, audio-code chunks
// for Token2Wav out (docs/minicpmo45.md §3.3-3.8).
//
//   TtsConfig cfg;  cfg.model_path = kit + "/tts/MiniCPM-o-4_5-tts-F16.gguf";
//   TtsEngine tts(cfg);                                   // loads (and caches, see below)
//   for (each LLM step s) for (auto &c : tts.feed(s)) t2w.push(c);   // 0..n chunks
//   for (auto &c : tts.finish()) t2w.push(c);             // leftover + final marker
//
// Duplex (cfg.mode = TtsMode::Duplex): feed_queued() with the LLM messages queued since the
// last call; tts-duplex.h is the manual of that mode.
//
// How the transformer runs: the TTS GGUF is a llama file plus 11 tensors that upstream
// libllama refuses. On first use a plain llama GGUF of its transformer is derived and cached
// (derived-tts-model.h), then run by libllama exactly like any llama model (same kernels,
// KV cache, offload, flash attention as llama-bench). Inputs are always embedding rows;
// the final-norm hidden z of the last row drives the code sampler.
//
// Thread-safety: one thread drives an engine at a time; separate engines are independent.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/lm/decode-batcher.h"
#include "models/lm/placement.h"
#include "models/lm/tts-generator.h"
#include "models/lm/tts-weights.h"

namespace rtf::lm {

struct LlmStep;

// Batched TTS: given the derived llama file's path, the decode batcher (make_llama_batcher on
// that file, embedding input) this engine joins as one sequence. Empty = a context of its own.
using TtsBatcherSource = std::function<std::shared_ptr<DecodeBatcher>(const std::string &derived_path)>;

struct TtsConfig {
    std::string model_path;      // TTS GGUF (required)
    std::string projector_path;  // "" = <tts dir>/MiniCPM-o-4_5-projector-F16.gguf, else the TTS file's copy
    std::string cache_dir;       // derived llama file; "" = default_tts_cache_dir(model_path)
    ModelPlacement placement;    // n_ctx 4096 = the reference's
    TtsMode mode = TtsMode::Simplex;
    uint32_t seed = 42;          // code RNG seed, restarted per message (reference behaviour)
    bool greedy = false;         // argmax codes (the reference does this when the LLM is greedy)
    int max_codes_per_phase = 500;
    int64_t min_codes_per_turn = 0;  // see TtsGenOptions::min_codes_per_turn
    int chunk_codes = 25;        // simplex chunk size (25 codes = 1 s of audio)
    int duplex_codes = 26;       // duplex codes per non-final call (reference 26; 1 .. 27, as
                                 // the reference pushes mid-call from 28 codes on)
    bool host_logits = false;     // see TtsGenOptions::host_logits
    bool reference_noop_feeds = false;  // see TtsGenOptions::reference_noop_feeds

    void validate() const;       // throws rtf::Error(Usage) naming the field
    nlohmann::json to_json() const;
};

struct TtsTimings {
    int64_t n_prefill_rows = 0, n_prefill_calls = 0, n_decode = 0, n_codes = 0, n_steps = 0;
    double prefill_ms = 0, decode_ms = 0, sample_ms = 0, load_ms = 0;
    bool batched = false;   // decodes merged with other streams' (decode-batcher.h)
    double mean_batch = 1;  // batched: mean streams per decode since the utterance began
    nlohmann::json to_json() const;
};

class LlamaTtsForward;

class TtsEngine {
public:
    // Throws rtf::Error(Setup) for missing/bad files. `batcher`: run the transformer as one
    // sequence of a shared context (decode-batcher.h; same API and results up to the
    // batching numerics of docs/serve.md) instead of a context of its own.
    explicit TtsEngine(const TtsConfig &cfg, const TtsBatcherSource &batcher = {});
    ~TtsEngine();
    TtsEngine(const TtsEngine &) = delete;
    TtsEngine &operator=(const TtsEngine &) = delete;

    // Starts a new utterance (simplex: a reply; duplex: a session): the observer's message
    // counter (TtsPrefillEvent::msg) restarts at 0; KV, positions, code history and chunk
    // buffer are cleared. feed() starts a new turn by itself when none is open (the next speak
    // turn of a duplex session) and keeps counting messages there.
    void begin_utterance();
    // One LLM step (unfiltered ids; hidden rows or none). Returns finished chunks (maybe none).
    // A step with is_last ends the utterance (Phase 2, leftover, final marker included).
    std::vector<AudioChunk> feed(const TtsInput &in);
    std::vector<AudioChunk> feed(const LlmStep &step);
    // Duplex: the messages queued since the last call (oldest first), merged into batches up
    // to each end-of-turn message as the reference's TTS thread does (tts-duplex.h). Returns
    // the chunks of all batches, in order. Usage error in simplex mode.
    std::vector<AudioChunk> feed_queued(std::span<const TtsInput> queued);
    // Ends an open utterance whose last step was not marked is_last; no-op otherwise.
    // Duplex: an end of turn with llm_finish and no text (flushes the TTS on [text_eos, BOS]).
    std::vector<AudioChunk> finish();

    const TtsDims &dims() const { return weights_->dims(); }
    // The family's audio-code facts (docs/minicpmo45.md §3.4), for consumers that must not re-spell
    // them: classes including EOS (6562), the EOS class (the last), codes per second of audio (25).
    int n_codes() const { return dims().n_codes; }
    int eos() const { return dims().n_codes - 1; }
    static constexpr int codes_per_second() { return kCodesPerSecond; }
    static constexpr int kCodesPerSecond = 25;
    const TtsConfig &config() const { return cfg_; }
    TtsTimings timings() const;
    const std::string &derived_model_path() const { return derived_path_; }
    void set_observer(TtsObserver obs);
    // Sizes of each turn's first simplex chunks from now on (empty = all chunk_codes;
    // TtsGenOptions::lead_chunk_codes).
    void set_lead_chunk_codes(std::vector<int> sizes);
    // One throw-away batch and decode, to pay first-touch costs at load. KV left empty.
    void warm();
    // Batched engines only (no-ops otherwise): interrupt_decode() makes a decode waiting to be
    // merged with other streams' throw "decode cancelled" now, and every later one, until
    // resume_decode() (decode-batcher.h's cancel/resume) — so a cancelled utterance leaves the
    // batch at its next step instead of after the merged decode it waits for. Thread-safe.
    void interrupt_decode();
    void resume_decode();
    // The transformer itself (golden checks teacher-force it).
    TtsForward &forward();
    // Bytes its decodes handed a device and read back so far (llama-runtime.h's
    // decode_io_bytes); -1 on the CPU or batched (a merged decode serves several streams).
    int64_t device_io_bytes() const;
    const TtsWeights &weights() const { return *weights_; }

private:
    TtsConfig cfg_;
    std::unique_ptr<TtsWeights> weights_;
    std::string derived_path_;
    void mark_batch();
    std::unique_ptr<TtsForward> fwd_;
    DecodeBatcher::Stream *bs_ = nullptr;  // batched: the sequence fwd_ decodes on
    int64_t batch_mark_n_ = 0, batch_mark_sum_ = 0;
    std::unique_ptr<TtsGenerator> gen_;
    double load_ms_ = 0;
};

}  // namespace rtf::lm
