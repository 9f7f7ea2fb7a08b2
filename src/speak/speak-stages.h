#pragma once
// The speak path's three engines as pipeline stages (pipeline/stage.h):
//
//   LlmStage  (source)  request -> items of llm_step valid text tokens + their hidden rows
//   TtsStage            text items -> items of 25 audio codes (1 s of audio), as soon as
//                       each 25 are sampled (not at the end of a TTS call: streaming)
//   T2wStage            code items -> one PCM item per Token2Wav window (24 kHz mono)
//
// The family's hand-off rules live here: the TTS's simplex grouping (25 codes, the
// leftover at end of turn, then the final flag), the T2W windowing (inside T2wStream), and
// the work-size cap (--max-audio-s): once the TTS has made enough codes it ends the turn
// and tells the LLM to stop (SpeakShared::enough), so a run's work is fixed even on twins,
// which rarely sample EOS.
//
// Sub-stage samples (profile/profiler.h, docs/metrics.md names): llm.prefill_ms,
// llm.ms_per_token, tts.ms_per_token, t2w.token2mel_ms, t2w.vocoder_ms; with a Token2Wav
// part on a device (Vulkan, CUDA), per window t2w.copy_ms and t2w.copy_kib: that part's
// host <-> device copies (inputs, carried state, the DiT's per-step ones, outputs); with an
// LM stage on a device, llm.copy_kib per step (the prompt's prefill one sample) and
// tts.copy_kib per chunk: the bytes its decodes handed the device and read back
// (llama-runtime.h's decode_io_bytes; a lower bound on libllama's copies).
// Each stage runs on its own worker thread; SpeakShared's vectors are written by one
// stage each and read only after run_pipeline() returned (joined).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <memory>
#include <string>
#include <vector>

#include "models/lm/llm-engine.h"
#include "models/lm/tts-engine.h"
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-stream.h"
#include "pipeline/cancel.h"
#include "pipeline/stage.h"
#include "profile/clock.h"
#include "speak/first-audio.h"

namespace rtf::speak {

// A piece of the reply's text and the first audio code it conditioned: the TTS had made
// `first_code` codes when the piece was fed to it, so the codes from there on are the first
// that can speak it (speak.h: TextTiming turns this into an audio sample).
struct TextMark {
    std::string text;
    int64_t n_tokens = 0;
    int64_t first_code = 0;
};

struct SpeakShared {
    std::atomic<bool> enough{false};   // the audio cap is reached: the LLM stops
    std::vector<int32_t> text_tokens;  // written by the LLM stage (valid tokens)
    std::vector<int32_t> audio_codes;  // written by the TTS stage
    std::string reply_text;            // written by the LLM stage
    std::string llm_stop;              // why the LLM stopped
    int64_t t2w_windows = 0;           // written by the T2W stage
    // Text marks: appended by the TTS stage, read by the sink's thread (guarded by marks_mu).
    std::mutex marks_mu;
    std::vector<TextMark> text_marks;
    std::atomic<int64_t> codes_made{0};  // codes the TTS has sampled so far (on_step)
    // First-audio breakdown (first-audio.h): marks on `clock`; the first window's codes.
    const prof::Clock *clock = nullptr;
    FirstAudioMarks marks;
    int window_codes = 0;
    void mark(std::atomic<double> &m) const {
        if (clock) FirstAudioMarks::set_once(m, clock->now_ms());
    }
    // First-audio priority (SpeakConfig::first_audio_priority): the T2W stage raises
    // first_pcm when its first window is done; the TTS waits for it once it has handed on
    // that window's codes; the LLM waits after each step for it or for tts_hungry (the TTS
    // has used up its text and will ask for more). All waits are bounded and cancel-aware.
    bool first_audio_priority = false;
    double wait_max_ms = 5000;                  // SpeakConfig::first_audio_wait_max_ms
    const pipe::CancelToken *cancel = nullptr;  // the run's, if any
    std::atomic<bool> first_pcm{false};
    std::atomic<bool> tts_hungry{false};
    std::atomic<int> priority_timeouts{0};  // waits that ended at their deadline
    std::mutex first_mu;
    std::condition_variable first_cv;
    void raise(std::atomic<bool> &flag) {
        {
            std::lock_guard<std::mutex> lk(first_mu);
            flag.store(true, std::memory_order_release);
        }
        first_cv.notify_all();
    }
    void raise_first_pcm() { raise(first_pcm); }
    // Waits until first_pcm (or, with `or_hungry`, tts_hungry, which it then clears), the
    // run is cancelled or `deadline` passes.
    void wait_first_pcm(std::chrono::steady_clock::time_point deadline, bool or_hungry);
};

class LlmStage : public pipe::Stage {
public:
    // `text_mode`: the request's text is forced as the reply (LlmEngine::start_text).
    // `max_text_tokens`: the reply ends after this many valid tokens (0 = no cap; the last
    // step is cut to fit, stop reason "twin_text_cap") — speak()'s twin text-rate cap.
    LlmStage(pipe::StageSpec spec, lm::LlmEngine &llm, bool text_mode, SpeakShared &shared,
             int64_t max_text_tokens = 0);
    void process(pipe::Item &&request, pipe::Emitter &out) override;

private:
    lm::LlmEngine &llm_;
    bool text_mode_;
    SpeakShared &shared_;
    int64_t max_text_tokens_;
    std::chrono::steady_clock::time_point wait_until_{};  // first-audio priority: end of the LLM's waits
};

class TtsStage : public pipe::Stage {
public:
    // `max_codes`: cap on codes for the utterance (0 = none). `lead_chunk_codes`: sizes of
    // the first hand-offs (empty = the engine's chunk size), so that Token2Wav's first
    // windows (shared.window_codes codes, then a ramp's) need not wait for a second of codes.
    TtsStage(pipe::StageSpec spec, lm::TtsEngine &tts, int64_t max_codes, SpeakShared &shared,
             std::vector<int> lead_chunk_codes = {});
    // Detaches its observer from the engine, which outlives the stage (engines are reused).
    ~TtsStage() override;
    void process(pipe::Item &&in, pipe::Emitter &out) override;
    void finish(pipe::Emitter &out) override;

private:
    void on_chunk(const lm::AudioChunk &c);

    lm::TtsEngine &tts_;
    int64_t max_codes_;
    SpeakShared &shared_;
    int64_t n_codes_ = 0;
    bool done_ = false;
    pipe::Emitter *out_ = nullptr;  // valid during process()
    double t_last_chunk_ = 0;
    int64_t io_mark_ = -1;  // the engine's device_io_bytes() at the last chunk (-1: not on a device)
    bool waited_first_ = false;
};

class T2wStage : public pipe::Stage {
public:
    // `stream`: the engines' warm stream (built once per engine set), reset here to the
    // prompt state, so every utterance starts alike and builds no graph.
    T2wStage(pipe::StageSpec spec, t2w::T2wStream &stream, SpeakShared &shared);
    void process(pipe::Item &&in, pipe::Emitter &out) override;
    void finish(pipe::Emitter &out) override;

private:
    void run(const std::vector<int32_t> &codes, bool final, pipe::Emitter &out);

    t2w::T2wStream &stream_;
    SpeakShared &shared_;
    const bool t2m_on_device_, voc_on_device_;  // their copies cross the host link: t2w.copy_*
    bool final_seen_ = false;
    int64_t codes_in_ = 0;
};

}  // namespace rtf::speak
