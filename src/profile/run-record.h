#pragma once
// RunRecord — everything a pipeline run observed, in raw form. The pipeline writes it;
// metrics.h turns it into the metrics of docs/metrics.md and trace.h into a Chrome/Perfetto trace.
// Keeping the raw record (not only the aggregates) lets reports and `rtf bench` recompute
// anything later from the JSON, the one source of truth.
//
// All times are milliseconds since the run's request: t0_ms is 0 and every other time lies
// in [0, end_ms], so a run's record means the same alone or as run k of a bench.
// clock_origin_ms is where that zero sits on the run's clock (profile/clock.h), for
// aligning the run with samples taken on the same clock (device monitors). "Busy" intervals exclude time a stage spent blocked (waiting for input, for room
// downstream, or in the sink).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rtf::prof {

// One work segment of a stage: it starts when the stage starts on an input (or resumes
// after a hand-off) and ends when it hands an output on. A stage whose process() call
// emits nothing still gets one event for that call (out_seq = -1).
struct StageEvent {
    double start_ms = 0;
    double end_ms = 0;
    int64_t in_seq = -1;    // sequence number of the input item (-1: finish()/flush)
    int64_t out_seq = -1;   // sequence number of the item handed on at end_ms (-1: none)
    double tail_ms = 0;     // busy time after this hand-off until the call returned
};

// A sub-stage value recorded from a stage's thread (profiler.h), e.g. "t2w.vocoder_ms".
struct SubstageSample {
    int name = 0;           // index into StageRecord::substage_names
    double start_ms = -1;   // start on the run clock; -1 when only a value was recorded
    double value = 0;       // usually milliseconds
    int event = 0;          // index of the StageEvent it belongs to
};

struct StageRecord {
    std::string name;
    int n_threads = 1;
    std::vector<int> cpus_requested;
    int numa_node = -1;
    std::string device;
    std::vector<int> cpus_bound;    // the affinity the OS applied to the stage's thread
    double busy_ms = 0;             // sum of busy intervals (always measured)
    double get_wait_ms = 0;         // blocked waiting for input (starved)
    double put_wait_ms = 0;         // blocked handing on (backpressure / lockstep / sink)
    int64_t n_in = 0;               // input items processed
    int64_t n_out = 0;              // items handed on
    std::vector<StageEvent> events; // only when profiling is on
    std::vector<std::string> substage_names;
    std::vector<SubstageSample> substages;
};

struct QueueRecord {
    std::string name;               // q1 = stage 0 -> 1, q2 = stage 1 -> 2, ...
    std::string from, to;           // stage names
    size_t capacity = 0;            // 0: unbounded (sequential schedule)
    size_t max_depth = 0;
    int64_t n_items = 0;
    std::vector<double> wait_ms;                  // per item: time from put to get (profiling on)
    std::vector<std::pair<double, int>> depth;    // (time, depth after the change) (profiling on)
};

// One chunk handed to the sink by the last stage.
struct ChunkRecord {
    int64_t index = 0;
    double arrival_ms = 0;          // out[i]: when the last stage handed it to the sink
    double duration_ms = 0;         // dur[i]: audio it carries
    std::vector<int> events;        // per stage: index of the StageEvent on its path, -1 unknown
};

struct RunRecord {
    double t0_ms = 0;               // request time (0 once rebased; see rebase())
    double clock_origin_ms = 0;     // the request time on the run's clock
    double end_ms = 0;              // when the last stage finished
    bool profiled = false;          // events, substages, queue samples present
    std::vector<StageRecord> stages;
    std::vector<QueueRecord> queues;
    std::vector<ChunkRecord> chunks;
};

// Shifts every time of `r` by -t0_ms (events, sub-stage starts, queue samples, chunk
// arrivals, end_ms), adds t0_ms to clock_origin_ms and sets t0_ms to 0. Idempotent.
void rebase(RunRecord &r);

}  // namespace rtf::prof
