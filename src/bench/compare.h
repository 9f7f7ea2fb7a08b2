#pragma once
// Comparing two bench results (docs/method.md §7, §8):
// per-metric medians of A and B, delta (B - A) and ratio (B / A); "within noise" when
// |delta RTF| < noise (default 0.03); a note when more than one knob differs (the change
// cannot be attributed to one variable) or when the workloads / inputs differ (not the same
// protocol); a Mann-Whitney U test on the per-run RTFs when the run counts allow one, else a
// plain statement that they do not (robust-stats.h).
//
// Works on the JSON of one config result (protocol.h to_json(ConfigResult)), so
// `rtf compare A.json B.json` and `rtf bench --ab` share it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/robust-stats.h"

namespace rtf::bench {

struct MetricDelta {
    std::string metric;
    double a = 0, b = 0, delta = 0, ratio = 0;  // ratio NaN when a == 0
};

struct Comparison {
    std::string a_label, b_label;
    double noise = 0.03;
    double delta_rtf = 0;
    bool within_noise = false;
    std::string rtf_verdict;                 // "B is faster by 0.12 RTF", "within noise", ...
    std::vector<std::string> knob_diffs;     // "pipeline/depths/0: 1 -> 16"
    std::vector<std::string> notes;
    SignificanceTest test;
    std::vector<MetricDelta> rows;
};

// `a` and `b`: config-result JSON objects. Throws rtf::Error(Usage) naming `what_a`/`what_b`
// when a result lacks the fields (summary, runs) a comparison needs.
Comparison compare_results(const nlohmann::json &a, const nlohmann::json &b, double noise,
                           const std::string &what_a = "A", const std::string &what_b = "B");

nlohmann::json to_json(const Comparison &c);

// A bench JSON file's config result number `row` (0-based); Usage error naming the file.
nlohmann::json select_config(const nlohmann::json &bench, size_t row, const std::string &what);

}  // namespace rtf::bench
