#pragma once
// rtf::pipe::run_pipeline — runs stages 0..n-1 as a streaming pipeline and measures it.
//
//   LlmStage llm(...); TtsStage tts(...); T2wStage t2w(...);
//   PipelineConfig cfg;                       // pipelined, D = 16 per queue, profiling on
//   cfg.depths = {16, 4};                     // D1 (llm->tts), D2 (tts->t2w)
//   WavWriter wav(...);
//   auto result = run_pipeline({&llm, &tts, &t2w}, request,
//                              [&](const Item &c) { wav.write(c.pcm); }, cfg);
//   std::cout << to_json(result).dump(2);
//
// Threads: one worker per stage; stage i hands items to stage i+1 through queue q<i+1>;
// the last stage's outputs go to the sink, called on the last stage's thread, in order
// (time in the sink counts as blocked, not busy). run_pipeline() returns only after every
// worker has been joined.
//
// Schedules:
//   pipelined   queues of depth depths[i]; every stage works as soon as it has input.
//   lockstep    depth 1, and a stage hands an item on only when every later stage is idle
//               with empty queues: one item in flight, the stages never overlap (the
//               synchronous call chain that "D1 = D2 = 1" stands for). Note that plain
//               depth-1 queues under `pipelined` still overlap the stages.
//   sequential  unbounded queues; stage i+1 starts only after stage i has finished the
//               whole utterance: the baseline the pipelined figures are compared against.
//
// Errors: the first exception in any stage (or its CPU binding) stops the run: every queue
// is cancelled, every worker joined, then run_pipeline() throws one rtf::Error naming the
// stage. Kind: that of an rtf::Error thrown by the stage (a binding to a missing CPU is
// Usage), Runtime for anything else. The sink's exceptions are reported as stage "sink".
// Cancellation (config.cancel tripped, e.g. by SigintGuard): the same clean stop, but
// run_pipeline() returns normally with result.cancelled = true and the partial record.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "pipeline/cancel.h"
#include "pipeline/item.h"
#include "pipeline/stage.h"
#include "profile/clock.h"
#include "profile/metrics.h"
#include "profile/run-record.h"

namespace rtf::pipe {

enum class Schedule { pipelined, lockstep, sequential };

const char *to_string(Schedule s) noexcept;
// "pipelined" | "lockstep" | "sequential"; throws rtf::Error(Usage) naming `what` otherwise.
Schedule parse_schedule(const std::string &text, const std::string &what);

struct PipelineConfig {
    Schedule schedule = Schedule::pipelined;
    // Depth of each queue (n_stages - 1 entries; q1 first). Empty: kDefaultDepth for all.
    // Ignored by lockstep (1) and sequential (unbounded).
    std::vector<int> depths;
    // Run-time profiler switch: per-item events, sub-stage samples, queue waits/depths.
    // Busy times, bindings and chunk arrivals (all headline metrics) are always measured.
    // Forced off when the profiler is compiled out (RTF_PROFILE=OFF).
    bool profile = true;
    double jitter_ms = 0;                 // playback jitter buffer for `starvation`, ms
    prof::Clock *clock = nullptr;         // nullptr: prof::default_clock() (real time)
    CancelToken *cancel = nullptr;        // optional; polled every cancel_poll_ms
    double cancel_poll_ms = 10;           // real-time ms

    static constexpr int kDefaultDepth = 16;
    static constexpr int kMaxDepth = 1 << 20;

    // Throws rtf::Error(Usage) naming the bad value (depth < 1 or > kMaxDepth, negative
    // jitter, depths.size() not n_stages - 1).
    void validate(size_t n_stages) const;
    nlohmann::json to_json() const;
};

struct RunResult {
    prof::RunRecord record;
    prof::Metrics metrics;
    Schedule schedule = Schedule::pipelined;
    std::vector<int> depths;   // effective depths (0 = unbounded)
    bool cancelled = false;
};

using Sink = std::function<void(const Item &chunk)>;

// Runs the stages (not owned; 1 or more, names unique and non-empty) on `request`.
RunResult run_pipeline(const std::vector<Stage *> &stages, Item request, const Sink &sink,
                       const PipelineConfig &config);

// {"schedule", "depths", "cancelled", "profile_compiled", "metrics": to_json(Metrics),
//  "run": to_json(RunRecord)}
nlohmann::json to_json(const RunResult &r);

}  // namespace rtf::pipe
