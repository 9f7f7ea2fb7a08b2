#pragma once
// The bench protocol (docs/method.md §7, §8): warm-up, N
// measured runs, median/min/max/MAD of every metric, targets, a VALID/INVALID verdict with
// reasons (as MLPerf LoadGen's results.cc) and the exit code.
//
//   ProtocolConfig pc;                       // warmup 1, runs 5, --target-rtf 1.0
//   auto r = run_config(find_workload("simulate"), knobs, pc, &monitor);
//   r.verdict.exit_code                      // 0 met, 2 missed, 3 invalid
//
// Verdict:
//   INVALID (exit 3) when: fewer than 3 measured runs were requested or counted; any run
//     (warm-up included) failed; any measured run's quality gate failed (its figures are not
//     counted); a metric a target needs was not measured.
//   otherwise VALID, and exit 2 when any target is missed on the median, else 0.
//   Usage / setup errors are not verdicts: they propagate as rtf::Error (exit 1).
// Targets (a NaN target is off): median rtf <= target_rtf (default 1.0); median
// first_audio_ms <= target_first_audio_ms (off); median gapless_start_ms <=
// target_gapless_start_ms (off; the listener's wait, metrics.h); median starvation.count <=
// target_starvation (0).
// Warnings (never change the exit code): outliers by median/MAD (robust-stats.h) on rtf,
// rtf_steady and first_audio_ms; RTF spread (max - min) above the noise floor; no warm-up;
// quality not checked.
// Device sampling: when `monitor` is given, it samples during every measured run; each run
// gets its devices' duty cycles and the summary gets "device.<d>.duty_cycle" and
// "device.<d>.mean_compute_pct" rows (per-core CPU rows stay in the run records).
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/leverage.h"
#include "core/robust-stats.h"
#include "bench/workload.h"
#include "monitor/monitor.h"

namespace rtf::bench {

inline constexpr const char *kSchema = "rtfkit.bench/1";

struct Targets {
    double rtf = 1.0;
    double first_audio_ms = std::numeric_limits<double>::quiet_NaN();
    double gapless_start_ms = std::numeric_limits<double>::quiet_NaN();
    double starvation = 0;  // gap count
};

struct ProtocolConfig {
    int warmup = 1;
    int runs = 5;
    Targets targets;
    double noise = 0.03;            // RTF, absolute
    double outlier_z = kOutlierZ;
    std::map<std::string, double> floors;  // per stage floor as RTF (leverage table)
    bool keep_trace = false;        // keep the last measured run's trace (+ device counters)
    static constexpr int kMinRuns = 3;

    // Throws rtf::Error(Usage) naming the flag (--warmup >= 0, --runs >= 1, --noise >= 0, ...).
    void validate() const;
    nlohmann::json to_json() const;
};

struct BenchRun {
    int index = 0;          // 0-based within its kind (warm-up or measured)
    bool warmup = false;
    bool ok = false;
    std::string error;
    RunOutput out;
    nlohmann::json devices; // monitor report (duty cycles) or null
};

struct TargetCheck {
    std::string metric, op;
    double target = 0, value = 0;
    bool met = false;
};

struct Verdict {
    bool valid = false;
    bool targets_met = false;
    std::vector<std::string> reasons;   // why INVALID
    std::vector<TargetCheck> targets;
    int exit_code = 3;
};

struct ConfigResult {
    std::string label;
    std::string workload;
    Knobs knobs;
    nlohmann::json workload_config;
    std::vector<BenchRun> runs;
    std::vector<std::pair<std::string, RobustStats>> summary;  // metric -> stats over counted runs
    std::vector<std::pair<std::string, std::vector<double>>> values;  // metric -> per counted run
    Verdict verdict;
    std::vector<std::string> warnings;
    std::vector<LeverageRow> leverage;
    nlohmann::json trace;   // null unless keep_trace
};

// Runs one config step by step (so A/B can interleave two of them).
class ConfigRunner {
public:
    ConfigRunner(const WorkloadInfo &info, Knobs knobs, const ProtocolConfig &cfg, mon::Monitor *monitor);
    void run_one(bool warmup);
    ConfigResult finish();

private:
    ProtocolConfig cfg_;
    mon::Monitor *monitor_;
    std::unique_ptr<Workload> w_;
    ConfigResult r_;
    int n_warm_ = 0, n_meas_ = 0;
};

ConfigResult run_config(const WorkloadInfo &info, const Knobs &knobs, const ProtocolConfig &cfg,
                        mon::Monitor *monitor);

// llama-bench style sweeps: the cartesian product of base knobs x every sweep's values.
// Values are split on ';' when the text contains one, else on ',' (cost values contain
// commas: --sweep 'cost=llm=50ms,t2w=90ms;llm=50ms,t2w=40ms').
struct Sweep {
    std::string key;
    std::vector<std::string> values;
};
Sweep parse_sweep(const std::string &text, const std::string &what);
std::vector<Knobs> expand_sweeps(const Knobs &base, const std::vector<Sweep> &sweeps);
// "KEY=VALUE[;KEY=VALUE...]" -> knobs (for --ab).
Knobs parse_knob_list(const std::string &text, const std::string &what);

// A/B: warm-ups A, B, then measured runs interleaved A B A B ... (drift hits both alike).
struct AbResult {
    ConfigResult a, b;
};
AbResult run_ab(const WorkloadInfo &info, const Knobs &base, const Knobs &a, const Knobs &b,
                const ProtocolConfig &cfg, mon::Monitor *monitor);

nlohmann::json to_json(const ConfigResult &r);
nlohmann::json to_json(const Verdict &v);

// 3 if any result is invalid, else 2 if any missed a target, else 0.
int overall_exit_code(const std::vector<const ConfigResult *> &results);

// The whole result document (schema kSchema): {"schema", "command": "bench", "created" (UTC,
// ISO 8601), "mode" ("single" | "sweep" | "ab"), "workload", "protocol", "machine",
// "versions", "samplers" (monitor status or null), "configs": [...], "comparison" (A/B only),
// "exit_code"}. "created", "machine" and "versions" come from machine/provenance.h.
nlohmann::json make_bench_json(const std::string &workload, const std::string &mode, const ProtocolConfig &cfg,
                               const std::vector<const ConfigResult *> &configs, const nlohmann::json &comparison,
                               const nlohmann::json &samplers);

}  // namespace rtf::bench
