#pragma once
// The TTS generation logic of MiniCPM-o 4.5 (docs/minicpmo45.md §3.3, §3.5-3.8) over an abstract
// transformer (TtsForward): condition prefill, the code loop with EOS, Phase 2 at the end of
// a simplex turn, duplex calls, per-message RNG restarts, positions, and the grouping of
// codes into chunks for Token2Wav. Separate from libllama so that the logic is testable
// with a scripted forward (unit tests, golden replays).
//
// Thread-safety: one thread drives a TtsGenerator at a time.
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "models/lm/code-sampler.h"
#include "models/lm/condition.h"

namespace rtf::lm {

class TtsWeights;

// The 20-layer Llama of the TTS, seen as: embedding rows in, final-norm hidden out.
class TtsForward {
public:
    virtual ~TtsForward() = default;
    virtual void clear() = 0;  // empty the KV cache
    // Runs `n` rows (n x n_embd) at positions pos0.. (KV entries at >= pos0 are dropped first).
    virtual void decode(const float *rows, int n, int pos0) = 0;
    // Final-norm hidden (n_embd) of the last row decoded.
    virtual std::span<const float> hidden() = 0;
    // The backend's logits (n_codes) of the last row, or empty if it has none.
    virtual std::span<const float> logits() { return {}; }
    virtual int n_ctx() const = 0;
    // Bytes its decodes handed a device and read back so far (llama-runtime.h's
    // decode_io_bytes); -1 when it decodes on no device (the CPU, or a test's forward).
    virtual int64_t device_io_bytes() const { return -1; }
};

enum class TtsMode { Simplex, Duplex };

// Codes for Token2Wav. Simplex: exactly `chunk_codes` (25) each, then the < 25 leftover at
// the end of a turn, then an empty chunk with is_final. Duplex: see tts-duplex.h (all <= 26
// codes of a call with is_chunk_end or is_final, plus empty markers).
struct AudioChunk {
    std::vector<int32_t> codes;  // relative codes in [0, 6561)
    bool is_final = false;       // the turn's audio ends here: Token2Wav flushes everything
    bool is_chunk_end = false;   // duplex: a speaking chunk ends here: Token2Wav flushes its
                                 // lookahead but keeps the turn's streaming state
};

// One text message for the TTS (an LLM step). `hidden` = ids.size() x n_llm, or empty for
// text-only input (condition without projector term). Unfiltered: the generator applies
// the valid-token filter itself.
struct TtsInput {
    std::span<const int32_t> ids;
    std::span<const float> hidden;
    bool is_last = false;     // simplex: the final message of the turn (llm_finish); duplex: end of turn
    bool llm_finish = false;  // duplex only: the LLM's decode chunk ended with this message
};

// Observation hooks (golden checks, traces). Called on the generating thread; the spans are
// valid during the call only. `msg` labels the message (duplex: the dequeued batch) that
// caused the event: 0, 1, 2, ... counted over the utterance (begin_utterance(), or the
// generator's construction), so in a duplex session it keeps counting across speak turns
// as the reference's call counter does; it does not restart when a new turn begins.
struct TtsPrefillEvent {
    int msg, phase, pos0;
    std::span<const float> rows;  // n x n_embd
};
struct TtsStepEvent {
    int msg, phase, t, n_past, code;
    float u;
    std::span<const float> z;
    // Filled when an on_step observer is set: the raw head_code logits (before temperature).
    std::span<const float> logits = {};
    // Duplex (variant D) only: EOS masked (t < min_new), codes of this call so far, and the
    // kept candidates with their renormalised probabilities (sorted; empty when greedy).
    bool eos_masked = false;
    int n_hist = 0;
    std::span<const int32_t> kept = {};
    std::span<const float> kept_p = {};
};
struct TtsObserver {
    std::function<void(const TtsPrefillEvent &)> on_prefill;
    std::function<void(const TtsStepEvent &)> on_step;
    // A chunk the moment it is complete (mid-message: streaming consumers need not wait for
    // feed() to return). The same chunks are also returned by feed().
    std::function<void(const AudioChunk &)> on_chunk;
};

struct TtsGenOptions {
    TtsMode mode = TtsMode::Simplex;
    uint32_t seed = 42;         // the code RNG restarts with this seed for every message
    bool greedy = false;        // argmax instead of sampling (reference: LLM temperature <= 0)
    int max_codes_per_phase = 500;
    // Simplex: EOS is masked until the turn holds this many codes (0 = never, the reference).
    // A fixed-work-size knob for benchmarks on twins, whose random EOS rate makes turns
    // arbitrarily short; it changes the sampling, so real-model quality runs leave it at 0.
    int64_t min_codes_per_turn = 0;
    int chunk_codes = 25;       // simplex push size
    // Simplex: sizes of a turn's first chunks (each 1..chunk_codes; empty = all chunk_codes),
    // so that Token2Wav's first windows (T2wConfig::first_window, ramp) start after fewer
    // codes. Later chunks: chunk_codes.
    std::vector<int> lead_chunk_codes;
    int duplex_codes = 26;      // duplex: codes per non-final call (EOS masked until then) and
                                // the most per end-of-turn call (reference: 26 = 25 + 1)
    bool host_logits = false;   // true: logits from z on the host in the reference's exact float32
                                // order (bit-identical codes given bit-identical z); false: the
                                // backend's head_code logits (no extra pass; a near-tie may differ)
    int condition_threads = 1;  // CPU threads of the condition projector graph
    bool reference_noop_feeds = false;  // also run the reference's two result-free decodes
                                        // (first-code re-prefill of chunk 0, final EOS feed)
};

struct TtsCounters {
    int64_t n_prefill_rows = 0, n_prefill_calls = 0;
    int64_t n_decode = 0;  // 1-row decodes
    int64_t n_codes = 0;   // codes emitted (EOS excluded)
    int64_t n_steps = 0;   // sampling steps (EOS included)
    double prefill_ms = 0, decode_ms = 0, sample_ms = 0;
};

class TtsGenerator {
public:
    TtsGenerator(const TtsWeights &w, TtsForward &fwd, TtsGenOptions opt);

    // Starts a new utterance (simplex: one reply; duplex: one session): the message counter
    // (TtsPrefillEvent::msg) restarts at 0 and a new turn begins (KV, position, history and
    // buffer cleared). A turn that ends inside an utterance is followed by a new turn on the
    // next feed(), which keeps counting messages.
    void begin_utterance();
    // Generates for one message (duplex: one dequeued batch, see tts-duplex.h); appends
    // finished chunks to `out`. After the turn's last message (simplex: is_last; duplex:
    // is_last with llm_finish) the turn is over and the next feed starts a new one.
    void feed(const TtsInput &in, std::vector<AudioChunk> &out);

    void set_observer(TtsObserver obs) { obs_ = std::move(obs); }
    // TtsGenOptions::lead_chunk_codes, from the next turn on (each 1 .. chunk_codes).
    void set_lead_chunk_codes(std::vector<int> sizes);
    const TtsCounters &counters() const { return cnt_; }
    int position() const { return pos_; }
    bool in_turn() const { return in_turn_; }

private:
    void begin_turn();  // KV, position, history and buffer cleared; the message counter kept
    void decode_rows(const float *rows, int n, int pos0, int phase);
    void feed_row(const float *row, int phase);
    int sample(int phase, int t, bool first_of_turn, std::span<const int32_t> pen, bool forbid_eos, bool duplex);
    void reprefill_for_first_code(int phase);
    void feed_simplex(const TtsInput &in, std::vector<AudioChunk> &out);
    void feed_duplex(const TtsInput &in, std::vector<AudioChunk> &out);
    int duplex_call(bool end_of_turn, bool llm_finish, std::vector<AudioChunk> &out);  // codes emitted
    int simplex_phase(int phase, std::vector<AudioChunk> &out);  // returns true if ended by EOS
    void emit(int32_t code, std::vector<AudioChunk> &out);
    void push(AudioChunk c, std::vector<AudioChunk> &out);

    const TtsWeights &w_;
    TtsForward &fwd_;
    TtsGenOptions opt_;
    TtsObserver obs_;
    TtsCounters cnt_;
    CodeRng rng_;
    ConditionBuilder cond_builder_;
    bool in_turn_ = false;
    int pos_ = 0;
    int msg_ = -1;                  // the utterance's last message index (-1 = none yet)
    bool last_phase1_eos_ = false;
    bool turn_eos_flushed_ = false;  // duplex: an end-of-turn call emitted codes, no new text since
    std::vector<int32_t> history_;  // codes of this turn
    std::vector<int32_t> buffer_;   // simplex codes not pushed yet
    int64_t chunks_in_turn_ = 0;
    std::vector<float> cond_;       // condition of the current message
    std::vector<float> row_, logits_, raw_logits_;
    DuplexKept kept_;
    std::vector<int32_t> call_;     // duplex: codes of the current call
    std::vector<int32_t> ids_;
    std::vector<float> hid_;
};

}  // namespace rtf::lm
