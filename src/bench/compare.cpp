#include "bench/compare.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "core/format.h"

namespace rtf::bench {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
double median_of_json(const nlohmann::json &s) {
    return s.is_object() && s.contains("median") && s["median"].is_number() ? s["median"].get<double>() : kNaN;
}
std::string short_json(const nlohmann::json &v) {
    std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}
std::vector<double> run_values(const nlohmann::json &r, const std::string &metric) {
    std::vector<double> out;
    if (!r.contains("values") || !r["values"].contains(metric)) return out;
    for (const auto &x : r["values"][metric])
        if (x.is_number()) out.push_back(x.get<double>());
    return out;
}
}  // namespace

nlohmann::json select_config(const nlohmann::json &bench, size_t row, const std::string &what) {
    if (!bench.is_object()) throw_usage(what + ": not a bench result (expected a JSON object)");
    if (bench.contains("schema") && bench["schema"].is_string() && bench["schema"].get<std::string>().rfind("rtfkit.bench/", 0) != 0)
        throw_usage(what + ": schema '" + bench["schema"].get<std::string>() + "' is not an rtfkit bench result");
    if (!bench.contains("configs") || !bench["configs"].is_array() || bench["configs"].empty())
        throw_usage(what + ": has no \"configs\" (write it with `rtf bench --json FILE`)");
    if (row >= bench["configs"].size())
        throw_usage(what + ": has " + std::to_string(bench["configs"].size()) + " config row(s); row " +
                    std::to_string(row) + " does not exist");
    return bench["configs"][row];
}

Comparison compare_results(const nlohmann::json &a, const nlohmann::json &b, double noise, const std::string &what_a,
                           const std::string &what_b) {
    for (const auto *p : {&a, &b}) {
        const std::string &w = p == &a ? what_a : what_b;
        if (!p->is_object() || !p->contains("summary") || !(*p)["summary"].is_object())
            throw_usage(w + ": not a bench config result (no \"summary\")");
    }
    Comparison c;
    c.noise = noise;
    c.a_label = a.value("label", what_a);
    c.b_label = b.value("label", what_b);
    // Metrics in A's order that B also has.
    for (auto it = a["summary"].begin(); it != a["summary"].end(); ++it) {
        if (!b["summary"].contains(it.key())) continue;
        MetricDelta d;
        d.metric = it.key();
        d.a = median_of_json(it.value());
        d.b = median_of_json(b["summary"][it.key()]);
        if (std::isnan(d.a) || std::isnan(d.b)) continue;
        d.delta = d.b - d.a;
        d.ratio = d.a != 0 ? d.b / d.a : kNaN;
        c.rows.push_back(d);
    }
    double ra = median_of_json(a["summary"].value("rtf", nlohmann::json())),
           rb = median_of_json(b["summary"].value("rtf", nlohmann::json()));
    c.delta_rtf = rb - ra;
    if (std::isnan(c.delta_rtf)) {
        c.rtf_verdict = "rtf missing in A or B: no verdict";
    } else {
        c.within_noise = std::fabs(c.delta_rtf) < noise;
        c.rtf_verdict = c.within_noise ? "within noise (|delta RTF| " + fmt(std::fabs(c.delta_rtf)) + " < " + fmt(noise) + ")"
                                       : std::string(c.delta_rtf < 0 ? "B is faster" : "B is slower") + " by " +
                                             fmt(std::fabs(c.delta_rtf)) + " RTF (" + fmt(ra) + " -> " + fmt(rb) + ")";
    }
    // Knob differences over the effective workload config (defaults included).
    if (a.value("workload", "") != b.value("workload", ""))
        c.notes.push_back("different workloads (" + a.value("workload", "?") + " vs " + b.value("workload", "?") +
                          "): not the same protocol (docs/method.md §6.3)");
    if (a.contains("workload_config") && b.contains("workload_config")) {
        auto fa = a["workload_config"].flatten(), fb = b["workload_config"].flatten();
        for (auto it = fa.begin(); it != fa.end(); ++it) {
            if (!fb.contains(it.key())) c.knob_diffs.push_back(it.key() + ": " + short_json(it.value()) + " -> (absent)");
            else if (fb[it.key()] != it.value())
                c.knob_diffs.push_back(it.key() + ": " + short_json(it.value()) + " -> " + short_json(fb[it.key()]));
        }
        for (auto it = fb.begin(); it != fb.end(); ++it)
            if (!fa.contains(it.key())) c.knob_diffs.push_back(it.key() + ": (absent) -> " + short_json(it.value()));
    }
    // A workload that records the knobs it was given (/knobs/...) next to its effective config
    // shows one change twice (the knob and what it set): count the given knobs then.
    size_t n_given = 0;
    for (const auto &d : c.knob_diffs) n_given += d.rfind("/knobs/", 0) == 0 ? 1 : 0;
    const size_t n_diff = n_given > 0 ? n_given : c.knob_diffs.size();
    if (n_diff > 1)
        c.notes.push_back(std::to_string(n_diff) +
                          " knobs differ: the change cannot be attributed to one variable (docs/method.md §7.1: change one at a time)");
    if (c.knob_diffs.empty()) c.notes.push_back("no knob differs: this is a repeatability check");
    for (const char *m : {"audio_ms", "n_chunks"}) {
        auto ia = a["summary"].find(m);
        auto ib = b["summary"].find(m);
        if (ia != a["summary"].end() && ib != b["summary"].end() && median_of_json(*ia) != median_of_json(*ib))
            c.notes.push_back(std::string(m) + " differs between A and B: not the same inputs (docs/method.md §6.3)");
    }
    for (const auto *p : {&a, &b}) {
        if (p->contains("verdict") && (*p)["verdict"].value("status", "") == "INVALID")
            c.notes.push_back(std::string(p == &a ? "A" : "B") + " is INVALID: its figures do not meet the protocol");
    }
    c.test = mann_whitney_u(run_values(a, "rtf"), run_values(b, "rtf"));
    return c;
}

nlohmann::json to_json(const Comparison &c) {
    auto rows = nlohmann::json::array();
    for (const auto &d : c.rows)
        rows.push_back({{"metric", d.metric}, {"a", num(d.a)}, {"b", num(d.b)}, {"delta", num(d.delta)}, {"ratio", num(d.ratio)}});
    return {{"a", c.a_label},
            {"b", c.b_label},
            {"noise_rtf", c.noise},
            {"delta_rtf", num(c.delta_rtf)},
            {"within_noise", c.within_noise},
            {"rtf_verdict", c.rtf_verdict},
            {"knob_diffs", c.knob_diffs},
            {"notes", c.notes},
            {"significance", to_json(c.test)},
            {"metrics", rows}};
}

}  // namespace rtf::bench
