#pragma once
// rtf::bench::Workload — what `rtf bench` measures: "run once -> RunOutput".
//
// A workload is made from a list of knobs (KEY=VALUE strings, the same names as the CLI
// flags without "--", e.g. d1=16, cost=llm=100ms,t2w=300ms, t2w-threads=2) by its factory,
// which validates every knob and throws rtf::Error(Usage) naming an unknown or bad knob and
// listing the ones it knows. The bench protocol (protocol.h) then calls run_once() for the
// warm-up and measured runs, on the calling thread, one run at a time.
//
// run_once() contract:
//   - returns the run's metrics as a flat JSON object keyed by docs/metrics.md's names
//     (profile/metrics.h to_json(Metrics) is exactly that): "rtf", "rtf_steady",
//     "first_audio_ms", "xrt", "starvation": {"count", "total_ms"}, "rtf_stage.<s>",
//     "<s>.item_ms": {"p50", ...}, "bound_overlap", ... Numbers or objects of numbers.
//   - `stages`: per pipeline stage, its busy time and rtf_stage (for the leverage table);
//   - `quality`: the quality gates' report for this run's output (quality/check.h
//     QualityReport::to_json()), with `quality_checked`/`quality_passed`; a workload that
//     produces no checkable output (synthetic stages) says so in `quality_note`;
//   - a stage failure / crash: throw rtf::Error(Runtime) (or any std::exception): the
//     protocol records the run as failed and the verdict becomes INVALID (exit 3);
//     rtf::Error(Usage/Setup) propagates (exit 1: the config is wrong, not the run).
//   - t_start_ms / t_end_ms: the run's span on prof::default_clock(), so device samples can
//     be attributed to it; `trace`: optional Chrome trace JSON of the run.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace rtf::bench {

using Knob = std::pair<std::string, std::string>;
using Knobs = std::vector<Knob>;

// Sets or replaces `key` (keeps the first position of an existing key).
void set_knob(Knobs &knobs, const std::string &key, const std::string &value);
// The value set for `key`, or nullptr (speak::find_knob, by contrast, is the knob table's definition).
const std::string *knob_value(const Knobs &knobs, const std::string &key);
// "d1=1 t2w-threads=2"
std::string knobs_label(const Knobs &knobs);
nlohmann::json knobs_json(const Knobs &knobs);

struct StageFigure {
    std::string name;
    double busy_ms = 0;
    double rtf_stage = 0;       // busy / audio
    std::string device;         // "CPU", "CUDA0", ... (reported)
    int n_threads = 1;
};

struct RunOutput {
    nlohmann::json metrics = nlohmann::json::object();
    std::vector<StageFigure> stages;
    bool quality_checked = false;
    bool quality_passed = true;
    nlohmann::json quality;          // null when not checked
    std::string quality_note;        // why not checked, or a one-line summary
    double t_start_ms = 0, t_end_ms = 0;
    nlohmann::json trace;            // optional (null): Chrome trace, timestamps in us since trace_t0_ms
    double trace_t0_ms = 0;          // the trace's zero on prof::default_clock()
    // Optional (null): the raw run record as prof::to_json(RunRecord) writes it (stages with
    // events, per-chunk arrivals and spans), so reports can draw the Gantt and per-chunk
    // charts of a bench run. Kept in the result for the last measured run only (like the trace).
    nlohmann::json record;
};

class Workload {
public:
    virtual ~Workload() = default;
    virtual std::string name() const = 0;
    // Every knob with its effective value (defaults included): goes into the result JSON.
    virtual nlohmann::json config() const = 0;
    virtual RunOutput run_once() = 0;
};

using WorkloadFactory = std::function<std::unique_ptr<Workload>(const Knobs &knobs)>;

struct WorkloadInfo {
    std::string name;
    std::string help;             // one line for --help
    std::vector<std::string> knobs;  // knob names it accepts
    WorkloadFactory make;
};

// Built-in workloads (simulate, mock) plus any registered before the first lookup.
void register_workload(WorkloadInfo info);
const WorkloadInfo &find_workload(const std::string &name);  // Usage error lists the names
std::vector<std::string> workload_names();

// Throws rtf::Error(Usage) when a knob is not in `known` (message lists `known`).
void check_knobs(const std::string &workload, const Knobs &knobs, const std::vector<std::string> &known);

}  // namespace rtf::bench
