#pragma once
// Reading a bench result (schema rtfkit.bench/1, bench/protocol.h) and the run part of
// speak/simulate results into the inputs of the charts and tables. Shared by the HTML and
// Markdown renderers so both show the same figures.
#include <string>
#include <vector>

#include "report/charts.h"
#include "report/json-view.h"
#include "report/report.h"

namespace rtf::report {

// The run result ({"metrics", "run", ...}) inside a speak or simulate document.
const json &run_result_of(const json &doc, ResultKind kind);

// summary[metric][field] of a bench config (NaN when absent).
double summary_stat(const json &cfg, const std::string &metric, const char *field = "median");
// Stage names in first-seen order: from "rtf_stage.<s>" keys of every config's summary.
std::vector<std::string> bench_stage_names(const json &doc);
// The per-config columns of the bench tables (Markdown summary and CSV), in first-seen
// order over the configs: every knob key any config sets, and every "rtf_stage.<s>"
// summary metric (the metric name itself, prefix included).
struct BenchColumns {
    std::vector<std::string> knobs;
    std::vector<std::string> stage_metrics;
};
BenchColumns bench_columns(const json &doc);
// The config's value of knob `key` ("" when it does not set it).
std::string knob_value(const json &cfg, const std::string &key);
// Stage names of a run (its record's stages, else its metrics' rtf_stage.<s> keys).
std::vector<std::string> run_stage_names(const RunView &v);

// Whether a bench run's figures were counted (ok, measured, quality passed or unchecked),
// and a one-line status: "counted", "warm-up", "failed: ...", "quality gate FAILED: ...".
bool run_counted(const json &run);
std::string run_status(const json &run);
// "passed" / "FAILED" / "not checked" / "" (no quality record).
std::string quality_status(const json &run);

ConfigRuns config_runs(const json &cfg);
ShareRow share_row_of(const json &cfg, const std::string &label);   // bench: summary medians
ShareRow share_row_of(const RunView &v, const std::string &label);  // one run
// Device samples of the last measured run that has them (per-core CPU rows skipped).
std::vector<DeviceSeries> device_series(const json &cfg);
// The last measured run holding a run record ("run" object), or nullptr.
const json *run_with_record(const json &cfg);

// A label for a config: its "label", else "config N".
std::string config_label(const json &cfg, size_t index);

}  // namespace rtf::report
