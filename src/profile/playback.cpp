#include "profile/playback.h"

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace rtf::prof {

Starvation simulate_playback(const std::vector<double> &arrival_ms, const std::vector<double> &duration_ms,
                             double jitter_ms) {
    if (arrival_ms.size() != duration_ms.size()) {
        throw_usage("playback simulation: " + std::to_string(arrival_ms.size()) + " arrival times but " +
                    std::to_string(duration_ms.size()) + " durations");
    }
    if (jitter_ms < 0) throw_usage("playback simulation: jitter buffer " + std::to_string(jitter_ms) + " ms < 0");
    Starvation s;
    s.jitter_ms = jitter_ms;
    if (arrival_ms.empty()) return s;
    for (size_t i = 0; i < arrival_ms.size(); ++i) {
        if (duration_ms[i] < 0) {
            throw_usage("playback simulation: chunk " + std::to_string(i) + " has negative duration " +
                        std::to_string(duration_ms[i]) + " ms");
        }
        if (i > 0 && arrival_ms[i] < arrival_ms[i - 1]) {
            throw_usage("playback simulation: chunk " + std::to_string(i) + " arrives at " +
                        std::to_string(arrival_ms[i]) + " ms, before chunk " + std::to_string(i - 1));
        }
    }
    s.playback_start_ms = arrival_ms[0] + jitter_ms;
    double play_end = s.playback_start_ms + duration_ms[0];
    for (size_t i = 1; i < arrival_ms.size(); ++i) {
        if (arrival_ms[i] > play_end) {
            Gap g{static_cast<int>(i), play_end, arrival_ms[i] - play_end};
            s.gaps.push_back(g);
            ++s.count;
            s.total_ms += g.length_ms;
            play_end = arrival_ms[i];
        }
        play_end += duration_ms[i];
    }
    s.playback_end_ms = play_end;
    return s;
}

double min_startup_buffer_ms(const std::vector<double> &arrival_ms, const std::vector<double> &duration_ms) {
    simulate_playback(arrival_ms, duration_ms, 0.0);  // the same input checks
    if (arrival_ms.empty()) return 0;
    // Played back to back from the first arrival (no resumes): chunk i is due at
    // arrival[0] + sum_{j<i} duration[j]; the buffer must cover its worst lateness.
    double due = arrival_ms[0], need = 0;
    for (size_t i = 0; i < arrival_ms.size(); ++i) {
        need = std::max(need, arrival_ms[i] - due);
        due += duration_ms[i];
    }
    return need;
}

double gapless_start_ms(const std::vector<double> &arrival_ms, const std::vector<double> &duration_ms) {
    const double b = min_startup_buffer_ms(arrival_ms, duration_ms);
    return arrival_ms.empty() ? 0 : arrival_ms[0] + b;
}

nlohmann::json to_json(const Starvation &s) {
    nlohmann::json gaps = nlohmann::json::array();
    for (const auto &g : s.gaps) gaps.push_back({{"chunk", g.chunk}, {"start_ms", g.start_ms}, {"length_ms", g.length_ms}});
    return {{"count", s.count},
            {"total_ms", s.total_ms},
            {"jitter_ms", s.jitter_ms},
            {"playback_start_ms", s.playback_start_ms},
            {"playback_end_ms", s.playback_end_ms},
            {"gaps", gaps}};
}

}  // namespace rtf::prof
