#pragma once
// Tolerant reading of result JSON for the renderers. A report must render whatever subset
// a result holds (an old schema, a failed run, a section that was off), so every accessor
// returns "absent" (a null json, NaN, "") instead of throwing on a missing key or a value
// of another type. Only the top-level kind check (report.h) rejects a document.
//
// RunView is one pipeline run taken from a run result ({"metrics", "run", "schedule", ...}:
// pipe::to_json(RunResult), the body of `rtf speak --json`): per-chunk arrival and
// duration, per chunk the span of each stage on its path, per stage its work segments,
// and the playback gaps. All times are milliseconds relative to the run's t0.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/format.h"  // fmt(): the renderers' numbers

namespace rtf::report {

using nlohmann::json;

// j[key] when j is an object holding key, else a null json (static, never dangling).
const json &at(const json &j, std::string_view key);
// A number (NaN for null, missing, or non-numeric).
double num(const json &j);
double num(const json &j, std::string_view key);
// A string; numbers and booleans are printed, null/missing -> "".
std::string str(const json &j);
std::string str(const json &j, std::string_view key);
bool is_nonempty(const json &j);  // an object or array with elements, a string with text, a number, a bool

struct Span {
    double start_ms = 0, end_ms = 0;
};

struct ChunkView {
    int64_t index = 0;
    double arrival_ms = 0;   // out[i] - t0
    double duration_ms = 0;  // dur[i]
    std::vector<std::optional<Span>> stages;  // per RunView::stages entry, the span on this chunk's path
};

struct StageView {
    std::string name, device;
    int n_threads = 1;
    double busy_ms = 0, get_wait_ms = 0, put_wait_ms = 0;
    double rtf_stage = 0;          // NaN when absent
    std::vector<Span> events;      // work segments (profiling on), relative to t0
};

struct GapView {
    int64_t chunk = 0;
    double start_ms = 0, length_ms = 0;  // relative to t0
};

struct RunView {
    bool present = false;      // the result held a run record with chunks or stages
    bool profiled = false;
    std::string schedule;      // "pipelined" / "lockstep" / "sequential" or ""
    double end_ms = 0;         // relative to t0
    std::vector<StageView> stages;
    std::vector<ChunkView> chunks;
    std::vector<GapView> gaps;
    double playback_start_ms = 0;  // NaN when unknown
    json metrics;              // the flat metrics object (may be null)
};

// From a run result object (with "run" and "metrics"); absent parts stay empty.
RunView run_view(const json &run_result);

// Per-chunk pace: chunk 0 -> (out[0] - t0) / dur[0] (includes first-audio latency);
// chunk i >= 1 -> (out[i] - out[i-1]) / dur[i], the quantity rtf_steady is the median of.
// NaN where dur is 0.
std::vector<double> chunk_rtf(const RunView &v);
// Running end-to-end RTF: (out[i] - t0) / sum_{k<=i} dur[k]; its last value is `rtf`.
std::vector<double> cumulative_rtf(const RunView &v);

}  // namespace rtf::report
