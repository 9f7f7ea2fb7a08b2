#include "report/bench-view.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace rtf::report {

namespace {
bool is_per_core(const std::string &dev) {
    return dev.size() > 3 && dev.rfind("cpu", 0) == 0 && std::isdigit(static_cast<unsigned char>(dev[3]));
}
bool flag(const json &j, const char *key, bool fallback) {
    const json &v = at(j, key);
    return v.is_boolean() ? v.get<bool>() : fallback;
}
}  // namespace

const json &run_result_of(const json &doc, ResultKind kind) {
    return kind == ResultKind::Simulate ? at(doc, "result") : doc;
}

double summary_stat(const json &cfg, const std::string &metric, const char *field) {
    return num(at(at(cfg, "summary"), metric), field);
}

std::vector<std::string> bench_stage_names(const json &doc) {
    std::vector<std::string> out;
    const json &cfgs = at(doc, "configs");
    if (!cfgs.is_array()) return out;
    // Pipeline order first: runs carry their stages as an array in stage order.
    for (const auto &c : cfgs)
        for (const auto &r : at(c, "runs").is_array() ? at(c, "runs") : json::array())
            for (const auto &st : at(r, "stages").is_array() ? at(r, "stages") : json::array()) {
                std::string name = str(st, "name");
                if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
            }
    for (const auto &c : cfgs) {
        const json &s = at(c, "summary");
        if (!s.is_object()) continue;
        for (auto it = s.begin(); it != s.end(); ++it) {
            if (it.key().rfind("rtf_stage.", 0) != 0) continue;
            std::string name = it.key().substr(10);
            if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
        }
    }
    return out;
}

BenchColumns bench_columns(const json &doc) {
    BenchColumns c;
    const json &cfgs = at(doc, "configs");
    if (!cfgs.is_array()) return c;
    auto add = [](std::vector<std::string> &v, const std::string &k) {
        if (std::find(v.begin(), v.end(), k) == v.end()) v.push_back(k);
    };
    for (const auto &cfg : cfgs) {
        const json &k = at(cfg, "knobs"), &s = at(cfg, "summary");
        if (k.is_object())
            for (auto it = k.begin(); it != k.end(); ++it) add(c.knobs, it.key());
        if (s.is_object())
            for (auto it = s.begin(); it != s.end(); ++it)
                if (it.key().rfind("rtf_stage.", 0) == 0) add(c.stage_metrics, it.key());
    }
    return c;
}

std::string knob_value(const json &cfg, const std::string &key) { return str(at(cfg, "knobs"), key); }

std::vector<std::string> run_stage_names(const RunView &v) {
    std::vector<std::string> out;
    for (const auto &s : v.stages) out.push_back(s.name);
    if (out.empty() && v.metrics.is_object())
        for (auto it = v.metrics.begin(); it != v.metrics.end(); ++it)
            if (it.key().rfind("rtf_stage.", 0) == 0) out.push_back(it.key().substr(10));
    return out;
}

std::string quality_status(const json &run) {
    const json &q = at(run, "quality");
    if (!q.is_object()) return "";
    if (!flag(q, "checked", false)) return "not checked";
    return flag(q, "passed", true) ? "passed" : "FAILED";
}

bool run_counted(const json &run) {
    return flag(run, "ok", false) && !flag(run, "warmup", false) && quality_status(run) != "FAILED";
}

std::string run_status(const json &run) {
    if (!flag(run, "ok", false)) return "failed: " + str(run, "error");
    if (flag(run, "warmup", false)) return "warm-up";
    if (quality_status(run) == "FAILED") return "quality gate FAILED: " + str(at(run, "quality"), "note");
    return "counted";
}

ConfigRuns config_runs(const json &cfg) {
    ConfigRuns c;
    c.label = str(cfg, "label");
    c.median = summary_stat(cfg, "rtf");
    const json &runs = at(cfg, "runs");
    if (!runs.is_array()) return c;
    for (const auto &r : runs) {
        RunPoint p;
        p.rtf = num(at(r, "metrics"), "rtf");
        p.warmup = flag(r, "warmup", false);
        p.counted = p.warmup ? flag(r, "ok", false) : run_counted(r);
        p.note = (p.warmup ? "warm-up " : "run ") + str(r, "index") + ": rtf " + fmt(p.rtf) + " (" + run_status(r) + ")";
        c.runs.push_back(p);
    }
    return c;
}

ShareRow share_row_of(const json &cfg, const std::string &label) {
    ShareRow r;
    r.label = label;
    r.rtf = summary_stat(cfg, "rtf");
    json one = {{"configs", json::array({cfg})}};
    for (const auto &name : bench_stage_names(one)) r.stages.emplace_back(name, summary_stat(cfg, "rtf_stage." + name));
    return r;
}

ShareRow share_row_of(const RunView &v, const std::string &label) {
    ShareRow r;
    r.label = label;
    r.rtf = num(v.metrics, "rtf");
    for (const auto &name : run_stage_names(v)) r.stages.emplace_back(name, num(v.metrics, "rtf_stage." + name));
    return r;
}

std::vector<DeviceSeries> device_series(const json &cfg) {
    std::vector<DeviceSeries> out;
    const json &runs = at(cfg, "runs");
    if (!runs.is_array()) return out;
    for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        if (flag(*it, "warmup", false)) continue;
        const json &devs = at(at(*it, "devices"), "devices");
        if (!devs.is_object()) continue;
        for (auto d = devs.begin(); d != devs.end(); ++d) {
            const json &samples = at(d.value(), "samples");
            if (is_per_core(d.key()) || !samples.is_array() || samples.empty()) continue;
            DeviceSeries ds;
            ds.device = d.key();
            ds.duty_cycle = num(d.value(), "duty_cycle");
            const json &th = at(d.value(), "thresholds");
            if (std::isfinite(num(th, "compute_pct"))) ds.compute_threshold = num(th, "compute_pct");
            if (std::isfinite(num(th, "memory_pct"))) ds.memory_threshold = num(th, "memory_pct");
            for (const auto &s : samples) {
                if (!s.is_array() || s.size() < 2 || !std::isfinite(num(s[0]))) continue;
                ds.t_ms.push_back(num(s[0]));
                ds.compute.push_back(num(s[1]));
                ds.memory.push_back(s.size() > 2 ? num(s[2]) : std::nan(""));
            }
            if (!ds.t_ms.empty()) out.push_back(std::move(ds));
        }
        if (!out.empty()) break;
    }
    return out;
}

const json *run_with_record(const json &cfg) {
    const json &runs = at(cfg, "runs");
    if (!runs.is_array()) return nullptr;
    for (auto it = runs.rbegin(); it != runs.rend(); ++it)
        if (!flag(*it, "warmup", false) && at(*it, "run").is_object()) return &*it;
    return nullptr;
}

std::string config_label(const json &cfg, size_t index) {
    std::string l = str(cfg, "label");
    return l.empty() ? "config " + std::to_string(index) : l;
}

}  // namespace rtf::report
