#pragma once
// Playback simulator: would a listener hear gaps?
//
// docs/metrics.md, `starvation`: playback starts when chunk 0 arrives plus an optional
// jitter buffer, and plays chunks back to back. A gap (starvation) is any chunk that
// arrives strictly after the previous audio finished playing; playback then resumes at
// the chunk's arrival (no re-buffering). Arrival times must be non-decreasing (chunks are
// emitted in order); all times in milliseconds on one clock.
//
//   auto s = simulate_playback({60, 90, 120}, {20, 20, 20}, 0.0);  // 2 gaps, 20 ms total
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rtf::prof {

struct Gap {
    int chunk = 0;          // index of the chunk that arrived late
    double start_ms = 0;    // when playback ran dry
    double length_ms = 0;   // silence until that chunk arrived
};

struct Starvation {
    int count = 0;
    double total_ms = 0;
    double jitter_ms = 0;        // the buffer the simulation assumed
    double playback_start_ms = 0;
    double playback_end_ms = 0;  // when the last chunk finishes playing
    std::vector<Gap> gaps;
};

// Throws rtf::Error(Usage) if the vectors differ in size, a duration or jitter_ms is
// negative, or arrivals decrease. Empty input: no gaps, start = end = 0.
Starvation simulate_playback(const std::vector<double> &arrival_ms, const std::vector<double> &duration_ms,
                             double jitter_ms);

// The listener's number (issue 30 §4): the smallest startup buffer after the first chunk's
// arrival for which the simulation above finds no gap, max_i (arrival[i] - (arrival[0] +
// sum_{j<i} duration[j])), >= 0: every chunk played back to back from the first arrival
// plus this wait is there in time. gapless_start_ms = arrival[0] + it: how long after t0 a
// player that must never stall can start. Same input rules as simulate_playback; empty
// input: 0.
//
//   min_startup_buffer_ms({0, 1500, 1600}, {1000, 1000, 1000});  // 500: chunk 1 is 500 ms late
double min_startup_buffer_ms(const std::vector<double> &arrival_ms, const std::vector<double> &duration_ms);
double gapless_start_ms(const std::vector<double> &arrival_ms, const std::vector<double> &duration_ms);

// {"count", "total_ms", "jitter_ms", "playback_start_ms", "playback_end_ms", "gaps": [...]}
nlohmann::json to_json(const Starvation &s);

}  // namespace rtf::prof
