#include "bench/render.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

namespace rtf::bench {

namespace {

std::string fmt(const nlohmann::json &v, int prec = 3) {
    if (!v.is_number()) return v.is_string() ? v.get<std::string>() : "n/a";
    double d = v.get<double>();
    if (!std::isfinite(d)) return "n/a";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", prec, d);
    return buf;
}

nlohmann::json stat(const nlohmann::json &cfg, const std::string &metric, const char *field) {
    if (!cfg.contains("summary") || !cfg["summary"].contains(metric)) return nullptr;
    return cfg["summary"][metric].value(field, nlohmann::json());
}

std::string csv_cell(const std::string &s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

const std::vector<std::string> kHeadline = {"rtf_steady",   "first_audio_ms", "starvation.count",   "xrt",
                                            "bound_overlap", "bound_serial",  "pipeline_efficiency"};

struct Columns {
    std::vector<std::string> knobs;   // knobs that differ between configs (or all if one config)
    std::vector<std::string> stages;  // rtf_stage.<s>
};

Columns columns(const nlohmann::json &bench) {
    Columns c;
    const auto &cfgs = bench["configs"];
    std::set<std::string> seen;
    for (const auto &cfg : cfgs) {
        for (auto it = cfg["knobs"].begin(); it != cfg["knobs"].end(); ++it) {
            if (seen.insert(it.key()).second) c.knobs.push_back(it.key());
        }
        for (auto it = cfg["summary"].begin(); it != cfg["summary"].end(); ++it) {
            if (it.key().rfind("rtf_stage.", 0) == 0 && seen.insert(it.key()).second) c.stages.push_back(it.key());
        }
    }
    return c;
}

std::string target(const nlohmann::json &v, int prec) { return v.is_number() ? fmt(v, prec) : "off"; }

std::string knob(const nlohmann::json &cfg, const std::string &k) {
    return cfg["knobs"].contains(k) ? cfg["knobs"][k].get<std::string>() : "";
}

}  // namespace

std::string bench_csv(const nlohmann::json &bench) {
    std::ostringstream o;
    auto cols = columns(bench);
    o << "label";
    for (const auto &k : cols.knobs) o << "," << csv_cell(k);
    o << ",verdict,exit_code,runs_counted,rtf_median,rtf_min,rtf_max,rtf_mad";
    for (const auto &m : kHeadline) o << "," << m;
    for (const auto &m : cols.stages) o << "," << m;
    o << "\n";
    for (const auto &cfg : bench["configs"]) {
        o << csv_cell(cfg.value("label", ""));
        for (const auto &k : cols.knobs) o << "," << csv_cell(knob(cfg, k));
        o << "," << cfg["verdict"].value("status", "") << "," << cfg["verdict"].value("exit_code", 3) << ","
          << fmt(stat(cfg, "rtf", "n"), 0);
        for (const char *f : {"median", "min", "max", "mad"}) o << "," << fmt(stat(cfg, "rtf", f), 4);
        for (const auto &m : kHeadline) o << "," << fmt(stat(cfg, m, "median"), 4);
        for (const auto &m : cols.stages) o << "," << fmt(stat(cfg, m, "median"), 4);
        o << "\n";
    }
    return o.str();
}

std::string comparison_markdown(const nlohmann::json &c) {
    std::ostringstream o;
    o << "### Comparison\n\n"
      << "baseline A: `" << c.value("a", "") << "`  \ncandidate B: `" << c.value("b", "") << "`\n\n"
      << "**RTF: " << c.value("rtf_verdict", "") << "**  \n"
      << "Significance: " << c["significance"].value("note", "") << "\n\n";
    if (!c["knob_diffs"].empty()) {
        o << "Knobs that differ:\n";
        for (const auto &d : c["knob_diffs"]) o << "- `" << d.get<std::string>() << "`\n";
        o << "\n";
    }
    for (const auto &n : c["notes"]) o << "> note: " << n.get<std::string>() << "\n";
    o << "\n| metric | A (median) | B (median) | delta | ratio B/A |\n|---|---:|---:|---:|---:|\n";
    for (const auto &r : c["metrics"]) {
        std::string m = r.value("metric", "");
        if (m.find(".p95") != std::string::npos || m.find(".p99") != std::string::npos || m.find(".mean") != std::string::npos ||
            m.find(".n") == m.size() - 2)
            continue;  // keep the table readable: medians and maxima; the JSON has everything
        o << "| " << m << " | " << fmt(r["a"]) << " | " << fmt(r["b"]) << " | " << fmt(r["delta"]) << " | "
          << fmt(r["ratio"]) << " |\n";
    }
    return o.str();
}

std::string bench_markdown(const nlohmann::json &bench) {
    std::ostringstream o;
    auto cols = columns(bench);
    o << "## rtf bench — workload `" << bench.value("workload", "") << "`\n\n";
    const auto &p = bench["protocol"];
    o << "Protocol: " << p.value("warmup", 0) << " warm-up, " << p.value("runs", 0) << " measured run(s) per config"
      << (bench.value("mode", "") == "ab" ? ", A/B interleaved" : "") << "; noise floor " << fmt(p["noise_rtf"])
      << " RTF; targets rtf <= " << target(p["targets"]["rtf"], 3) << ", first_audio_ms <= "
      << target(p["targets"]["first_audio_ms"], 0) << ", starvation <= " << target(p["targets"]["starvation"], 0) << "\n";
    if (bench.contains("machine")) {
        const auto &m = bench["machine"];
        o << "Machine: " << m["cpu"].value("cpu_model", std::string("unknown CPU")) << ", "
          << m["cpu"].value("cores", 0) << " cores; rtfkit " << bench["versions"].value("rtfkit", "") << ", llama.cpp "
          << bench["versions"].value("llama_cpp", "") << "\n";
    }
    o << "\n| config";
    for (const auto &k : cols.knobs) o << " | " << k;
    o << " | verdict | rtf median [min, max] (MAD) | rtf_steady | first_audio_ms | starvation | xrt";
    for (const auto &s : cols.stages) o << " | " << s;
    o << " |\n|---";
    for (size_t i = 0; i < cols.knobs.size() + 6 + cols.stages.size(); ++i) o << "|---";
    o << "|\n";
    int n = 0;
    for (const auto &cfg : bench["configs"]) {
        o << "| " << n++;
        for (const auto &k : cols.knobs) o << " | " << knob(cfg, k);
        o << " | " << cfg["verdict"].value("status", "") << " (exit " << cfg["verdict"].value("exit_code", 3) << ")"
          << " | " << fmt(stat(cfg, "rtf", "median")) << " [" << fmt(stat(cfg, "rtf", "min")) << ", "
          << fmt(stat(cfg, "rtf", "max")) << "] (" << fmt(stat(cfg, "rtf", "mad")) << ")"
          << " | " << fmt(stat(cfg, "rtf_steady", "median")) << " | " << fmt(stat(cfg, "first_audio_ms", "median"), 1)
          << " | " << fmt(stat(cfg, "starvation.count", "median"), 0) << " | " << fmt(stat(cfg, "xrt", "median"), 2);
        for (const auto &s : cols.stages) o << " | " << fmt(stat(cfg, s, "median"));
        o << " |\n";
    }
    n = 0;
    for (const auto &cfg : bench["configs"]) {
        o << "\n### Config " << n++ << ": `" << cfg.value("label", "") << "` — " << cfg["verdict"].value("status", "");
        bool met = cfg["verdict"].value("targets_met", false);
        o << (cfg["verdict"].value("status", "") == "VALID" ? (met ? ", all targets met" : ", TARGET MISSED") : "") << "\n\n";
        for (const auto &r : cfg["verdict"]["reasons"]) o << "- INVALID: " << r.get<std::string>() << "\n";
        for (const auto &t : cfg["verdict"]["targets"])
            o << "- target " << t.value("metric", "") << " " << t.value("op", "") << " " << fmt(t["target"]) << ": median "
              << fmt(t["value"]) << (t.value("met", false) ? " (met)" : " (MISSED)") << "\n";
        for (const auto &w : cfg["warnings"]) o << "- warning: " << w.get<std::string>() << "\n";
        for (auto it = cfg["summary"].begin(); it != cfg["summary"].end(); ++it) {
            if (it.key().rfind("device.", 0) == 0 && it.key().find(".duty_cycle") != std::string::npos)
                o << "- " << it.key() << ": median " << fmt(it.value()["median"]) << "\n";
        }
        if (!cfg["leverage"].empty()) {
            o << "\nLeverage (gain = share x reducible; METHOD.md §4, §5):\n\n"
              << "| rank | what | share | actual RTF | floor RTF | reducible | gain | toolbox layer | advice |\n"
              << "|---:|---|---:|---:|---:|---:|---:|---|---|\n";
            int rank = 1;
            for (const auto &r : cfg["leverage"]) {
                o << "| " << rank++ << " | " << r.value("what", "") << " | " << fmt(r["share"]) << " | "
                  << fmt(r["actual_rtf"]) << " | " << (r.value("floor_known", false) ? fmt(r["floor_rtf"]) : "?")
                  << " | " << fmt(r["reducible"]) << (r.value("floor_known", false) ? "" : " (upper bound)") << " | "
                  << fmt(r["gain"]) << " | " << (r.value("layer", 0) ? std::to_string(r.value("layer", 0)) + " " : "")
                  << r.value("layer_name", "") << " | " << r.value("advice", "") << " |\n";
            }
        }
    }
    if (bench.contains("comparison")) o << "\n" << comparison_markdown(bench["comparison"]);
    o << "\nExit code: " << bench.value("exit_code", 3) << " (0 all targets met, 2 a target missed, 3 incomplete/invalid)\n";
    return o.str();
}

}  // namespace rtf::bench
