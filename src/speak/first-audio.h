#pragma once
// Where the listener's wait for the first audio goes (one speak run):
//
//   request -> LLM prefill done -> first text step -> first TTS code -> the codes of
//   Token2Wav's first window complete -> Token2Wav starts it -> first PCM chunk
//
// The stages set the marks (once each, on the run's clock) as the events happen; speak()
// turns them into parts that sum to first_audio_ms by construction, so the waiting is
// located, not guessed:
//
//   llm_prefill_ms        request -> the LLM has prefilled the prompt (text mode: the text)
//   llm_first_step_ms     -> its first step of text tokens leaves for the TTS
//   tts_first_code_ms     -> the TTS has sampled its first audio code (its prefill included)
//   tts_fill_window_ms    -> the TTS has handed on the codes Token2Wav's first window needs
//   t2w_wait_ms           -> Token2Wav starts on them (queue hand-off)
//   t2w_first_window_ms   -> the first PCM chunk reaches the sink
//
// A mark never reached (a cancelled run) leaves its part and the later ones NaN (null).
// Thread-safety: each mark is written by one stage thread, read after the run.
#include <atomic>
#include <limits>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace rtf::speak {

struct FirstAudioMarks {
    // ms on the pipeline's clock; NaN until set
    std::atomic<double> prefill_done{std::numeric_limits<double>::quiet_NaN()};
    std::atomic<double> first_text{std::numeric_limits<double>::quiet_NaN()};
    std::atomic<double> first_code{std::numeric_limits<double>::quiet_NaN()};
    std::atomic<double> window_codes{std::numeric_limits<double>::quiet_NaN()};
    std::atomic<double> window_start{std::numeric_limits<double>::quiet_NaN()};

    // Sets `m` to `now_ms` unless it is set already.
    static void set_once(std::atomic<double> &m, double now_ms);
};

struct FirstAudio {
    double first_audio_ms = std::numeric_limits<double>::quiet_NaN();
    double llm_prefill_ms = std::numeric_limits<double>::quiet_NaN();
    double llm_first_step_ms = std::numeric_limits<double>::quiet_NaN();
    double tts_first_code_ms = std::numeric_limits<double>::quiet_NaN();
    double tts_fill_window_ms = std::numeric_limits<double>::quiet_NaN();
    double t2w_wait_ms = std::numeric_limits<double>::quiet_NaN();
    double t2w_first_window_ms = std::numeric_limits<double>::quiet_NaN();
    int window_codes = 0;  // codes Token2Wav's first window waited for
    // --first-audio-priority: waits (LLM, TTS) that ran out of time instead of ending on the
    // first PCM or on the TTS's need for text; > 0 means the priority held a stage back for
    // nothing (first_audio_wait_max_ms each).
    int priority_timeouts = 0;
};

// `origin_ms`: the request time on the marks' clock; `first_audio_ms`: since the request.
FirstAudio first_audio_breakdown(const FirstAudioMarks &marks, double origin_ms, double first_audio_ms, int window_codes);

// {"first_audio_ms", "parts": {"llm_prefill_ms", ...}, "window_codes"}; NaN -> null.
nlohmann::json to_json(const FirstAudio &f);

// "812 ms = llm prefill 120 + llm first step 35 + tts first code 210 + tts fill window 90 +
// t2w wait 0 + t2w first window 357" (ms rounded; "n/a" when unknown).
std::string to_line(const FirstAudio &f);

}  // namespace rtf::speak
