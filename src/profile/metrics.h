#pragma once
// The metrics of docs/metrics.md, computed from a RunRecord. One utterance: t0 = request time,
// chunk i leaves the last stage at out[i] with duration dur[i], A = sum dur[i].
//
//   rtf                  (out[n-1] - t0) / A
//   rtf_steady           median over i >= 1 of (out[i] - out[i-1]) / dur[i]   (null if n < 2)
//   rtf_stage.<s>        busy time of stage s / A
//   first_audio_ms       out[0] - t0
//   gapless_start_ms     the earliest playback start (from t0) after which no gap follows:
//                        out[0] - t0 + playback.h's min_startup_buffer_ms (>= first_audio_ms;
//                        equal when the run never starves). The listener's number: a
//                        first-audio lever that adds gaps shows here, not in first_audio_ms.
//   xrt                  1 / rtf
//   starvation           playback.h with the run's jitter buffer: count, total_ms
//   <s>.item_ms          per-item busy time of stage s (one StageEvent plus its tail):
//                        p50/p95/p99/max (profiling on)
//   <sub-stage name>     every profiler name (e.g. t2w.vocoder_ms): p50/p95/p99/max
//   queue_wait.<q>       time items wait in queue q, put to get: p50/p95 (profiling on)
//   bound_overlap        max_s rtf_stage.<s>   (the RTF perfect overlap would reach)
//   bound_serial         sum_s rtf_stage.<s>   (the RTF of running the stages one by one)
//   pipeline_efficiency  bound_overlap / rtf   (1.0: the pipeline hides everything but the
//                        bottleneck stage)
// Values that cannot be computed (no audio, n < 2, profiling off) are NaN in the struct and
// null in JSON, never a made-up number.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "profile/playback.h"
#include "profile/run-record.h"
#include "profile/stats.h"

namespace rtf::prof {

struct StageMetrics {
    std::string name;
    double busy_ms = 0;
    double rtf_stage = 0;
    Summary item_ms;  // n = 0 when profiling was off
};

struct Metrics {
    int64_t n_chunks = 0;
    double audio_ms = 0;   // A
    double wall_ms = 0;    // end_ms - t0 (includes the tail after the last chunk)
    double rtf = 0, rtf_steady = 0, first_audio_ms = 0, gapless_start_ms = 0, xrt = 0;
    Starvation starvation;
    std::vector<StageMetrics> stages;
    std::vector<std::pair<std::string, Summary>> queue_wait;   // per queue name
    std::vector<std::pair<std::string, Summary>> substages;    // per profiler name
    double bound_overlap = 0, bound_serial = 0, pipeline_efficiency = 0;
};

Metrics compute_metrics(const RunRecord &run, double jitter_ms = 0.0);

// Flat object keyed by docs/metrics.md's names: "rtf", "rtf_steady", "rtf_stage.llm",
// "first_audio_ms", "xrt", "starvation": {count, total_ms, ...}, "llm.item_ms": {p50, ...},
// "t2w.vocoder_ms": {...}, "queue_wait.q1": {p50, p95, ...}, "bound_overlap",
// "bound_serial", "pipeline_efficiency", plus "n_chunks", "audio_ms", "wall_ms".
nlohmann::json to_json(const Metrics &m);

// The raw record: stages (binding, busy, waits, events, sub-stage samples), queues and the
// per-chunk records (arrival, duration, per-stage start/end of the chunk's path).
nlohmann::json to_json(const RunRecord &r);

}  // namespace rtf::prof
