#pragma once
// A duplex session end to end (docs/minicpmo45.md §7): 1 s frames of the
// user's audio arrive on a fixed cadence and go through the audio encoder, the LLM's duplex
// turn (listen / speak + text), the duplex TTS (variant D) and Token2Wav — while the next
// frames keep arriving. The result is the timeline `rtf duplex-report` analyses.
//
//   DuplexConfig cfg;  cfg.models_dir = "kit";  cfg.input = "speech.wav";
//   cfg.speak_frames = "4-12,20-28";                    // twins: a forced decision schedule
//   cfg.validate();
//   auto engines = load_duplex_engines(cfg);            // seconds; warmed
//   auto frames = input_frames(cfg, audio, &n_silence); // 1 s frames at 16 kHz
//   DuplexResult r = run_duplex(*engines, cfg, frames);
//   nlohmann::json doc = to_json(r);                    // frames[] + audio_chunks[] (§5.1)
//
// Stages, each on its own worker thread (pipeline/pipeline.h), with the reference's queues:
//   input  (source)  a recording (RecordingFrames) pushes frame i at t0 + i * interval:
//                    absolute deadlines, so a late push does not shift the later ones; a live
//                    stream (LiveFrames, rtf serve's /v1/realtime) pushes each frame as soon as
//                    it is complete, until the stream ends (duplex-source.h); t_push_ms is
//                    taken when the frame is handed on (a full encoder queue blocks it, as the
//                    reference's producer)
//   -> q1 encoder queue, cap 16 (ENCODER_QUEUE_CAP)
//   apm              ApmEncoder (streaming cache over the session): 10 rows per frame
//   -> q2 prefill queue, cap 30 (the reference's intended PREFILL_QUEUE_CAP; its own is in
//                    practice unbounded)
//   llm              DuplexLlm::frame(): prefill, decision (forced by the schedule when
//                    given), text (on a twin, a sampled speak frame's is cut at the twin
//                    text cap); the frame is done (t_done_ms) when its turn is evaluated
//   -> q3 LLM->TTS, cap 16 (the write-up's fix of the reference's 1); one item per message
//   tts              TtsEngine duplex mode: feed_queued() per message, chunks of <= 26 codes
//   -> q4 TTS->T2W, cap 16
//   t2w              T2wStream: one PCM item per window; the sink records audio_chunks[]
// The TTS takes one message per call (its queue hands them over one at a time, so the
// reference's batch merge sees a batch of one). Token2Wav has no mid-turn flush: a chunk end
// (`is_chunk_end`) is not flushed, the turn's end (`is_final`) is; a final flush that renders
// no samples still sends an empty is_final chunk, so every audio turn is closed.
//
// Times are ms on the session clock (t0 = the first push's deadline). audio_turn_id counts
// is_final chunks; speak_turn_id numbers runs of speaking frames (-1 for listening ones).
//
// Errors: bad config -> rtf::Error(Usage) naming the flag (validate, before loading); a stage
// that throws stops the run: run_duplex() returns the partial timeline with `error` and
// `failed_stage` set (frames pushed but not done have ok = false), it does not throw.
// Test hooks (DuplexConfig::fail_* / delay_*): a stage throws at a frame, or sleeps per frame.
// Thread-safety: one run_duplex() at a time per DuplexEngines.
#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/apm/apm-encoder.h"
#include "models/apm/apm-model.h"
#include "models/apm/audio-input.h"
#include "models/lm/llm-duplex.h"
#include "models/lm/tts-engine.h"
#include "models/t2w/t2w-config.h"
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-stream.h"
#include "pipeline/cancel.h"
#include "speak/duplex-source.h"
#include "speak/kit.h"

namespace rtf::speak {

// Inclusive frame index ranges, e.g. "4-12,20-28" or "5" (one frame).
struct FrameRange {
    int first = 0, last = 0;
};
// Throws rtf::Error(Usage) about `setting` (throw_setting) for anything but comma-separated N or N-M (N <= M,
// non-negative, ascending, not overlapping).
std::vector<FrameRange> parse_frame_ranges(const std::string &text, const std::string &setting);
bool in_ranges(const std::vector<FrameRange> &r, int frame);

struct DuplexFrameRecord;
struct DuplexChunkRecord;

// Watching a session as it runs (rtf serve's /v1/realtime). Called on the stages' threads:
// keep it short, do not throw.
class DuplexObserver {
public:
    virtual ~DuplexObserver() = default;
    // The LLM stage, once frame `frame` is done (its decision, text, timings); `reply` = the
    // reply (speak turn, from 0) it belongs to, -1 for a listening frame.
    virtual void on_frame(int /*frame*/, const DuplexFrameRecord & /*rec*/, int /*reply*/) {}
    // The sink, per audio chunk in order (24 kHz); `reply` = the reply the audio belongs to.
    // A chunk with rec.is_final ends that reply's audio (it may hold no samples).
    virtual void on_audio(const DuplexChunkRecord & /*rec*/, int /*reply*/, std::span<const float> /*pcm*/) {}
};

// Barge-in: cancelling the reply being spoken. cancel_current() marks the latest reply
// cancelled; from then on the LLM listens (a forced schedule's range is skipped to its end; a
// sampled decision is overridden for one frame), the TTS feeds none of that reply's text, and
// Token2Wav renders none of its codes (its turn end resets the stream), so at most the chunk
// already made reaches the sink. Replies are numbered from 0 by the LLM stage. Thread-safe.
class DuplexReplyControl {
public:
    int cancel_current() {
        const int c = current_.load();
        int prev = cancelled_.load();
        while (c > prev && !cancelled_.compare_exchange_weak(prev, c)) {}
        return c;
    }
    int current() const { return current_.load(); }      // the latest reply begun; -1 = none
    bool cancelled(int reply) const { return reply >= 0 && reply <= cancelled_.load(); }
    void begin(int reply) { current_.store(reply); }     // the LLM stage

private:
    std::atomic<int> current_{-1}, cancelled_{-1};
};

struct DuplexConfig {
    std::string models_dir;          // the kit: LLM, TTS, projector, token2wav, audio encoder
    std::string input;               // the user's recording (any rate / channels)
    double interval_ms = 1000;       // push cadence (the reference's --stream-interval)
    int n_frames = 0;                // frames to push; 0 = as many as the input has. More than
                                     // the input has: the rest are silence (input_frames)
    std::string speak_frames;        // "" = the model decides; else the forced schedule
    int frame_ms = 1000;             // audio per frame (the reference's frames are 1 s files)
    double startup_buffer_ms = 0;    // the analyzer's playback buffer ([2], [5])
    double max_gap_ms = 0;           // the analyzer's tolerated playback gap ([5])
    // Twin kits only: a random-weight LLM never ends a speak unit early, so every sampled
    // speak frame would decode the full 26 text tokens (three TTS calls of audio per frame);
    // a real model speaking ~3 words/s writes ~4-6. A sampled speak frame is cut at
    // max(1, ceil(twin_text_rate x frame_ms / 1000)) valid tokens (llm.text_cap, set by
    // load_duplex_engines; end "twin_text_cap"). Text tokens per second of audio, the rate of
    // simplex's SpeakConfig::twin_text_rate; 0 = uncapped. Forced speak frames keep
    // llm.forced_speak_tokens; real kits are never capped.
    double twin_text_rate = 4.0;
    int encoder_queue_cap = 16, prefill_queue_cap = 30, tts_queue_cap = 16, t2w_queue_cap = 16;
    int threads = 0;                 // compute threads of each stage's engine; 0 = min(4, CPUs / 2)
    // Per stage, over `threads` (0 = from it: LLM, TTS and the audio encoder get `threads`,
    // token2mel and the vocoder half of it each). Knob names as speak's (duplex-knobs.h).
    int llm_threads = 0, tts_threads = 0, t2w_threads_t2m = 0, t2w_threads_voc = 0, apm_threads = 0;
    // CPU sets of the stages' threads (OS PU indices; empty = the scheduler's choice): on few
    // cores, keeping the input side (apm, llm) apart from the output side (tts, t2w) stops
    // them from taking each other's time slices (knobs apm-cpus, llm-cpus, tts-cpus, t2w-cpus).
    std::vector<int> apm_cpus, llm_cpus, tts_cpus, t2w_cpus;
    lm::DuplexLlmConfig llm;         // model_path filled from the kit
    lm::TtsConfig tts;               // model_path / projector_path filled from the kit; mode Duplex
    t2w::T2wConfig t2w;
    apm::ApmConfig apm;
    pipe::CancelToken *cancel = nullptr;  // optional (Ctrl-C): a cancelled run is partial
    DuplexObserver *observer = nullptr;   // optional: events as the session runs
    DuplexReplyControl *replies = nullptr;  // optional: barge-in (cancel the reply speaking)

    // Test hooks: stage `fail_stage` ("input", "apm", "llm", "tts", "t2w") throws when it
    // handles frame `fail_frame`; stage `delay_stage` sleeps `delay_ms` per frame it handles.
    std::string fail_stage;
    int fail_frame = -1;
    std::string delay_stage;
    double delay_ms = 0;

    void validate() const;  // throws rtf::Error(Usage) naming the flag
    // Thread counts filled in (threads 0 resolved) and the engine configs made consistent.
    void finalize();
    nlohmann::json to_json() const;
};

struct DuplexEngines {
    // The config as loaded: the caller's, with the kit's model paths and, on a twin, the LLM's
    // text cap filled in (load_duplex_engines leaves its argument as given). Run with this one.
    DuplexConfig config;
    Kit kit;
    std::string apm_path;
    std::unique_ptr<apm::ApmModel> apm_model;
    std::unique_ptr<apm::ApmEncoder> apm;
    std::unique_ptr<lm::DuplexLlm> llm;
    std::unique_ptr<lm::TtsEngine> tts;
    std::shared_ptr<const t2w::T2wModel> t2w;
    std::unique_ptr<t2w::T2wStream> t2w_stream;
    double load_ms_apm = 0, load_ms_llm = 0, load_ms_tts = 0, load_ms_t2w = 0;
};

// The LLM's text cap per sampled speak frame (DuplexConfig::twin_text_rate) for a kit that is
// (not) a twin: 0 on a real kit or with a rate of 0, else 1 .. llm.max_speak_tokens.
int duplex_twin_text_cap(const DuplexConfig &cfg, bool kit_is_twin);

// Resolves the kit (the audio encoder is required here), loads and warms the four engines.
// What loading derives (the model paths, on a twin llm.text_cap: duplex_twin_text_cap) goes
// into DuplexEngines::config; `cfg` is left as given. Throws rtf::Error(Usage/Setup) naming the file.
std::unique_ptr<DuplexEngines> load_duplex_engines(const DuplexConfig &cfg);

// The input's 16 kHz samples as cfg.n_frames frames of cfg.frame_ms: the last partial frame
// is zero-padded to a full one, and frames past the end of the recording are silence
// (`n_silence` says how many frames hold no recorded audio at all).
std::vector<std::vector<float>> input_frames(const DuplexConfig &cfg, const apm::AudioInput &audio, int *n_silence);

struct DuplexFrameRecord {
    bool pushed = false, encoded = false, done = false;
    double t_push_ms = 0, t_encoded_ms = 0, t_done_ms = 0;
    double apm_ms = 0;
    int n_rows = 0;
    lm::DuplexFrameResult llm;  // valid when done (hidden rows dropped)
    bool silence = false;       // every sample is zero (e.g. past the end of the recording)
};

struct DuplexChunkRecord {
    double t_complete_ms = 0;
    int64_t n_samples = 0;
    int sample_rate = 0;
    bool is_final = false;
    int audio_turn_id = 0;
    int frame = -1;  // the LLM frame whose text the chunk's codes came from (last one)
};

struct DuplexResult {
    std::vector<DuplexFrameRecord> frames;  // one per frame given
    std::vector<DuplexChunkRecord> chunks;  // in order of completion
    double session_ms = 0;                  // t0 -> the last stage done
    // Busy ms per stage (its own work, not waiting): input, apm, llm, tts, t2w.
    std::vector<std::pair<std::string, double>> busy_ms;
    int tts_calls = 0;
    bool completed = false;                 // every stage ran to the end
    bool cancelled = false;
    std::string error;                      // why not completed
    std::string failed_stage;               // the stage that threw ("" = none)
    nlohmann::json meta;                    // §5.1 meta + ours (decision, queues, input, kit)
};

// Runs one session over `frames` (16 kHz, frame_ms each). Never throws for a stage failure
// (see the header comment); throws rtf::Error(Usage) for frames that are empty.
DuplexResult run_duplex(DuplexEngines &e, const DuplexConfig &cfg, const std::vector<std::vector<float>> &frames);
// The same over any source (duplex-source.h): a live one ends the session when it ends.
DuplexResult run_duplex(DuplexEngines &e, const DuplexConfig &cfg, FrameSource &source);

// The stage whose busy time is the largest share of the session (the binding stage), "" if none.
std::string binding_stage(const DuplexResult &r);

// The result JSON: {"schema": "rtfkit.duplex/1", "meta", "frames": [...], "audio_chunks":
// [...], "stages": [{name, busy_ms, utilization}], "binding_stage", "completed", "error",
// "failed_stage", "session_ms"} — frames[] and audio_chunks[] carry the fields of
// docs/minicpmo45.md §7.4 (the analyzer's input, bench/duplex-analysis.h) plus ours (apm_ms,
// llm_prefill_ms, ...).
nlohmann::json to_json(const DuplexResult &r);

}  // namespace rtf::speak
