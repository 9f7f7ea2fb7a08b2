#include "speak/first-audio.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace rtf::speak {

void FirstAudioMarks::set_once(std::atomic<double> &m, double now_ms) {
    double unset = m.load(std::memory_order_relaxed);
    if (!std::isnan(unset)) return;
    m.compare_exchange_strong(unset, now_ms, std::memory_order_acq_rel);
}

FirstAudio first_audio_breakdown(const FirstAudioMarks &marks, double origin_ms, double first_audio_ms, int window_codes) {
    FirstAudio f;
    f.first_audio_ms = first_audio_ms;
    f.window_codes = window_codes;
    // cumulative times since the request; a missing mark makes its part and the rest NaN
    const double t[] = {0.0,
                        marks.prefill_done.load() - origin_ms,
                        marks.first_text.load() - origin_ms,
                        marks.first_code.load() - origin_ms,
                        marks.window_codes.load() - origin_ms,
                        marks.window_start.load() - origin_ms,
                        first_audio_ms};
    double *parts[] = {&f.llm_prefill_ms, &f.llm_first_step_ms, &f.tts_first_code_ms,
                       &f.tts_fill_window_ms, &f.t2w_wait_ms, &f.t2w_first_window_ms};
    for (int i = 0; i < 6; ++i) *parts[i] = t[i + 1] - t[i];
    return f;
}

namespace {
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
std::string ms(double v) {
    if (!std::isfinite(v)) return "n/a";
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", v);
    return b;
}
}  // namespace

nlohmann::json to_json(const FirstAudio &f) {
    return {{"first_audio_ms", num(f.first_audio_ms)},
            {"window_codes", f.window_codes},
            {"priority_timeouts", f.priority_timeouts},
            {"parts",
             {{"llm_prefill_ms", num(f.llm_prefill_ms)},
              {"llm_first_step_ms", num(f.llm_first_step_ms)},
              {"tts_first_code_ms", num(f.tts_first_code_ms)},
              {"tts_fill_window_ms", num(f.tts_fill_window_ms)},
              {"t2w_wait_ms", num(f.t2w_wait_ms)},
              {"t2w_first_window_ms", num(f.t2w_first_window_ms)}}}};
}

std::string to_line(const FirstAudio &f) {
    return ms(f.first_audio_ms) + " ms = llm prefill " + ms(f.llm_prefill_ms) + " + llm first step " +
           ms(f.llm_first_step_ms) + " + tts first code " + ms(f.tts_first_code_ms) + " + tts fill window (" +
           std::to_string(f.window_codes) + " codes) " + ms(f.tts_fill_window_ms) + " + t2w wait " + ms(f.t2w_wait_ms) +
           " + t2w first window " + ms(f.t2w_first_window_ms);
}

}  // namespace rtf::speak
