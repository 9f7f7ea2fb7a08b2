#include "bench/protocol.h"

#include <cmath>

#include "core/error.h"
#include "core/format.h"
#include "core/parse.h"
#include "machine/provenance.h"

namespace rtf::bench {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// Metrics JSON -> flat (name, value): numbers, and one level of objects of numbers
// ("starvation.count", "llm.item_ms.p50"); arrays are skipped; null is NaN.
void flatten(const nlohmann::json &m, std::vector<std::pair<std::string, double>> &out) {
    for (auto it = m.begin(); it != m.end(); ++it) {
        const auto &v = it.value();
        if (v.is_number()) out.emplace_back(it.key(), v.get<double>());
        else if (v.is_null()) out.emplace_back(it.key(), kNaN);
        else if (v.is_object()) {
            for (auto jt = v.begin(); jt != v.end(); ++jt) {
                if (jt.value().is_number()) out.emplace_back(it.key() + "." + jt.key(), jt.value().get<double>());
                else if (jt.value().is_null()) out.emplace_back(it.key() + "." + jt.key(), kNaN);
            }
        }
    }
}

bool is_per_core(const std::string &dev) {
    return dev.size() > 3 && dev.rfind("cpu", 0) == 0 && std::isdigit(static_cast<unsigned char>(dev[3]));
}
}  // namespace

void ProtocolConfig::validate() const {
    if (warmup < 0 || warmup > 1000) throw_usage("--warmup: " + std::to_string(warmup) + " is outside 0 .. 1000");
    if (runs < 1 || runs > 100000) throw_usage("--runs: " + std::to_string(runs) + " is outside 1 .. 100000");
    if (!(noise >= 0)) throw_usage("--noise: must be >= 0 (RTF, absolute)");
    if (!(outlier_z > 0)) throw_usage("--outlier-z: must be > 0");
    if (!(targets.rtf > 0) && !std::isnan(targets.rtf)) throw_usage("--target-rtf: must be > 0");
    if (targets.first_audio_ms < 0) throw_usage("--target-first-audio-ms: must be >= 0");
    if (targets.gapless_start_ms < 0) throw_usage("--target-gapless-start-ms: must be >= 0");
    if (targets.starvation < 0) throw_usage("--target-starvation: must be >= 0");
    for (const auto &[s, f] : floors)
        if (!(f >= 0)) throw_usage("--floor " + s + ": must be >= 0 (RTF)");
}

nlohmann::json ProtocolConfig::to_json() const {
    nlohmann::json fl = nlohmann::json::object();
    for (const auto &[s, f] : floors) fl[s] = f;
    return {{"warmup", warmup},
            {"runs", runs},
            {"min_runs", kMinRuns},
            {"noise_rtf", noise},
            {"outlier_z", outlier_z},
            {"targets",
             {{"rtf", num(targets.rtf)},
              {"first_audio_ms", num(targets.first_audio_ms)},
              {"gapless_start_ms", num(targets.gapless_start_ms)},
              {"starvation", num(targets.starvation)}}},
            {"floors_rtf", fl}};
}

ConfigRunner::ConfigRunner(const WorkloadInfo &info, Knobs knobs, const ProtocolConfig &cfg, mon::Monitor *monitor)
    : cfg_(cfg), monitor_(monitor) {
    cfg_.validate();
    r_.label = knobs_label(knobs);
    r_.workload = info.name;
    r_.knobs = std::move(knobs);
    w_ = info.make(r_.knobs);  // Usage errors propagate (exit 1)
    r_.workload_config = w_->config();
}

void ConfigRunner::run_one(bool warmup) {
    BenchRun run;
    run.warmup = warmup;
    run.index = warmup ? n_warm_++ : n_meas_++;
    const bool sample = monitor_ && !warmup;
    if (sample) monitor_->start();
    try {
        run.out = w_->run_once();
        run.ok = true;
    } catch (const Error &e) {
        if (e.kind() != ErrorKind::Runtime) {
            if (sample) monitor_->stop();
            throw;
        }
        run.error = e.what();
    } catch (const std::exception &e) {
        run.error = std::string("crashed: ") + e.what();
    }
    if (sample) {
        auto rep = monitor_->stop();
        run.devices = mon::to_json(rep, cfg_.keep_trace);
        // Device counters in the trace of this run (kept only for the last measured run).
        if (cfg_.keep_trace && run.ok && run.out.trace.is_object() && run.out.trace.contains("traceEvents")) {
            auto &ev = run.out.trace["traceEvents"];
            for (const auto &d : rep.devices) {
                if (is_per_core(d.device)) continue;
                for (const auto &s : d.samples) {
                    nlohmann::json args = {{"compute_pct", num(s.compute_pct)}};
                    if (std::isfinite(s.memory_pct)) args["memory_pct"] = s.memory_pct;
                    ev.push_back({{"name", "device " + d.device},
                                  {"ph", "C"},
                                  {"pid", 1},
                                  {"ts", (s.t_ms - run.out.trace_t0_ms) * 1000.0},
                                  {"args", args}});
                }
            }
        }
    }
    if (!cfg_.keep_trace || warmup) run.out.trace = nullptr;
    r_.runs.push_back(std::move(run));
}

ConfigResult ConfigRunner::finish() {
    ConfigResult &r = r_;
    Verdict &v = r.verdict;
    // Which measured runs count.
    std::vector<const BenchRun *> counted;
    std::string quality_note;
    bool quality_checked = false;
    for (const auto &run : r.runs) {
        std::string which = (run.warmup ? "warm-up run " : "run ") + std::to_string(run.index);
        if (!run.ok) {
            v.reasons.push_back(which + " failed: " + run.error);
            continue;
        }
        if (run.warmup) continue;
        if (run.out.quality_checked) {
            quality_checked = true;
            if (!run.out.quality_passed) {
                v.reasons.push_back(which + ": quality gate failed (" + run.out.quality_note +
                                    "); its figures are not counted");
                continue;
            }
        } else if (quality_note.empty()) {
            quality_note = run.out.quality_note;
        }
        counted.push_back(&run);
    }
    if (cfg_.runs < ProtocolConfig::kMinRuns)
        v.reasons.push_back("only " + std::to_string(cfg_.runs) + " measured run(s) requested (--runs); the protocol needs at least " +
                            std::to_string(ProtocolConfig::kMinRuns) + " (docs/method.md §7.2)");
    else if (static_cast<int>(counted.size()) < ProtocolConfig::kMinRuns)
        v.reasons.push_back("only " + std::to_string(counted.size()) + " of " + std::to_string(cfg_.runs) +
                            " measured runs counted; at least " + std::to_string(ProtocolConfig::kMinRuns) + " are needed");

    // Per-metric values over counted runs, in first-seen order.
    auto slot = [&](const std::string &name) -> std::vector<double> & {
        for (auto &p : r.values)
            if (p.first == name) return p.second;
        r.values.emplace_back(name, std::vector<double>(counted.size(), kNaN));
        return r.values.back().second;
    };
    for (size_t i = 0; i < counted.size(); ++i) {
        std::vector<std::pair<std::string, double>> flat;
        flatten(counted[i]->out.metrics, flat);
        for (const auto &[k, x] : flat) slot(k)[i] = x;
        if (counted[i]->devices.is_object()) {
            for (auto it = counted[i]->devices["devices"].begin(); it != counted[i]->devices["devices"].end(); ++it) {
                if (is_per_core(it.key())) continue;
                for (const char *f : {"duty_cycle", "mean_compute_pct"}) {
                    const auto &x = it.value()[f];
                    slot("device." + it.key() + "." + f)[i] = x.is_number() ? x.get<double>() : kNaN;
                }
            }
        }
    }
    // Outliers must also matter in absolute terms (robust-stats.h): half the noise floor for
    // RTF figures, 2 % of the median for everything else.
    for (const auto &[k, xs] : r.values) {
        double min_dev = k.rfind("rtf", 0) == 0 ? cfg_.noise / 2 : 0.02 * std::fabs(median_of(xs));
        r.summary.emplace_back(k, robust_stats(xs, cfg_.outlier_z, min_dev));
    }
    auto med = [&](const std::string &k) {
        for (const auto &[name, s] : r.summary)
            if (name == k) return s.median;
        return kNaN;
    };
    auto stats = [&](const std::string &k) -> const RobustStats * {
        for (const auto &p : r.summary)
            if (p.first == k) return &p.second;
        return nullptr;
    };

    // Targets on the medians.
    auto target = [&](const std::string &metric, double t) {
        if (std::isnan(t)) return;
        TargetCheck c{metric, "<=", t, med(metric), false};
        c.met = std::isfinite(c.value) && c.value <= t;
        if (!std::isfinite(c.value) && !counted.empty())
            v.reasons.push_back("metric " + metric + " was not measured, so its target cannot be judged");
        v.targets.push_back(c);
    };
    target("rtf", cfg_.targets.rtf);
    target("first_audio_ms", cfg_.targets.first_audio_ms);
    target("gapless_start_ms", cfg_.targets.gapless_start_ms);
    target("starvation.count", cfg_.targets.starvation);
    v.valid = v.reasons.empty();
    v.targets_met = true;
    for (const auto &c : v.targets) v.targets_met = v.targets_met && c.met;
    v.exit_code = !v.valid ? 3 : (v.targets_met ? 0 : 2);

    // Warnings, with advice fitted to the options in use.
    for (const char *m : {"rtf", "rtf_steady", "first_audio_ms"}) {
        const auto *s = stats(m);
        if (!s) continue;
        for (size_t k = 0; k < s->outliers.size(); ++k) {
            int idx = s->outliers[k];
            r.warnings.push_back(std::string("outlier: run ") + std::to_string(counted[static_cast<size_t>(idx)]->index) +
                                 " has " + m + " = " + fmt(slot(m)[static_cast<size_t>(idx)]) + " (modified z-score " +
                                 fmt(s->outlier_z[k], 1) + ", |z| > " + fmt(cfg_.outlier_z, 1) +
                                 " by median/MAD): another process or a cold cache may have interfered" +
                                 (cfg_.warmup == 0 ? "; add --warmup 1" : "; rerun on a quiet machine or add --runs"));
        }
    }
    if (const auto *s = stats("rtf"); s && s->n >= 2 && s->max - s->min > cfg_.noise) {
        r.warnings.push_back("RTF spread " + fmt(s->max - s->min) + " (max - min over " + std::to_string(s->n) +
                             " runs) is larger than the noise floor " + fmt(cfg_.noise) +
                             ": differences below the spread are not meaningful; pin stage threads (cpus=...), "
                             "stop other programs" + (cfg_.runs < 10 ? ", or use more --runs" : ""));
    }
    if (cfg_.warmup == 0) r.warnings.push_back("no warm-up run (--warmup 0): the first run pays cold caches and lazy loading");
    if (!quality_checked && !quality_note.empty()) r.warnings.push_back("quality gates " + quality_note);

    // Leverage table on the medians.
    std::vector<StageTime> st;
    if (!counted.empty()) {
        for (const auto &f : counted.front()->out.stages) {
            StageTime t;
            t.name = f.name;
            t.rtf_stage = med("rtf_stage." + f.name);
            if (std::isnan(t.rtf_stage)) t.rtf_stage = f.rtf_stage;
            auto fl = cfg_.floors.find(f.name);
            if (fl != cfg_.floors.end()) t.floor_rtf = fl->second;
            st.push_back(t);
        }
    }
    for (const auto &[s, f] : cfg_.floors) {
        bool known = false;
        for (const auto &t : st) known = known || t.name == s;
        if (!known && !st.empty()) r.warnings.push_back("--floor " + s + ": no stage of that name in this workload");
    }
    r.leverage = leverage_table(st, med("rtf"), med("bound_overlap"));
    for (auto it = r.runs.rbegin(); it != r.runs.rend(); ++it) {
        if (!it->warmup && it->out.trace.is_object()) {
            r.trace = it->out.trace;
            break;
        }
    }
    for (auto &run : r.runs) run.out.trace = nullptr;
    // One run record per config is enough for the report's per-chunk charts; all of them
    // would multiply the JSON by the run count.
    bool kept = false;
    for (auto it = r.runs.rbegin(); it != r.runs.rend(); ++it) {
        if (!kept && !it->warmup && it->ok && it->out.record.is_object()) kept = true;
        else it->out.record = nullptr;
    }
    return std::move(r_);
}

ConfigResult run_config(const WorkloadInfo &info, const Knobs &knobs, const ProtocolConfig &cfg, mon::Monitor *monitor) {
    ConfigRunner runner(info, knobs, cfg, monitor);
    for (int i = 0; i < cfg.warmup; ++i) runner.run_one(true);
    for (int i = 0; i < cfg.runs; ++i) runner.run_one(false);
    return runner.finish();
}

Sweep parse_sweep(const std::string &text, const std::string &what) {
    auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 >= text.size())
        throw_usage(what + ": '" + text + "' is not KEY=V1,V2,... (e.g. d1=1,16)");
    Sweep s;
    s.key = trim(text.substr(0, eq));
    std::string vals = text.substr(eq + 1);
    for (auto &x : split(vals, vals.find(';') != std::string::npos ? ';' : ',')) {
        std::string t = trim(x);
        if (t.empty()) throw_usage(what + ": '" + text + "' has an empty value");
        s.values.push_back(t);
    }
    return s;
}

std::vector<Knobs> expand_sweeps(const Knobs &base, const std::vector<Sweep> &sweeps) {
    std::vector<Knobs> out = {base};
    for (const auto &sw : sweeps) {
        std::vector<Knobs> next;
        for (const auto &k : out) {
            for (const auto &v : sw.values) {
                Knobs n = k;
                set_knob(n, sw.key, v);
                next.push_back(std::move(n));
            }
        }
        out = std::move(next);
    }
    return out;
}

Knobs parse_knob_list(const std::string &text, const std::string &what) {
    Knobs k;
    for (const auto &part : split(text, ';')) {
        std::string p = trim(part);
        if (p.empty()) continue;
        auto eq = p.find('=');
        if (eq == std::string::npos || eq == 0)
            throw_usage(what + ": '" + text + "' is not KEY=VALUE[;KEY=VALUE] (e.g. 'd1=16')");
        set_knob(k, trim(p.substr(0, eq)), trim(p.substr(eq + 1)));
    }
    if (k.empty()) throw_usage(what + ": empty knob list");
    return k;
}

AbResult run_ab(const WorkloadInfo &info, const Knobs &base, const Knobs &a, const Knobs &b, const ProtocolConfig &cfg,
                mon::Monitor *monitor) {
    Knobs ka = base, kb = base;
    for (const auto &[k, v] : a) set_knob(ka, k, v);
    for (const auto &[k, v] : b) set_knob(kb, k, v);
    ConfigRunner ra(info, ka, cfg, monitor), rb(info, kb, cfg, monitor);
    for (int i = 0; i < cfg.warmup; ++i) {
        ra.run_one(true);
        rb.run_one(true);
    }
    for (int i = 0; i < cfg.runs; ++i) {
        ra.run_one(false);
        rb.run_one(false);
    }
    AbResult r{ra.finish(), rb.finish()};
    r.a.label = "A: " + r.a.label;
    r.b.label = "B: " + r.b.label;
    return r;
}

nlohmann::json to_json(const Verdict &v) {
    auto t = nlohmann::json::array();
    for (const auto &c : v.targets)
        t.push_back({{"metric", c.metric}, {"op", c.op}, {"target", c.target}, {"value", num(c.value)}, {"met", c.met}});
    return {{"status", v.valid ? "VALID" : "INVALID"},
            {"targets_met", v.targets_met},
            {"reasons", v.reasons},
            {"targets", t},
            {"exit_code", v.exit_code}};
}

nlohmann::json to_json(const ConfigResult &r) {
    auto runs = nlohmann::json::array();
    for (const auto &run : r.runs) {
        nlohmann::json stages = nlohmann::json::array();
        for (const auto &s : run.out.stages)
            stages.push_back({{"name", s.name}, {"busy_ms", s.busy_ms}, {"rtf_stage", num(s.rtf_stage)},
                              {"device", s.device}, {"n_threads", s.n_threads}});
        nlohmann::json j = {{"index", run.index}, {"warmup", run.warmup}, {"ok", run.ok}};
        if (!run.ok) j["error"] = run.error;
        if (run.ok) {
            j["wall_ms"] = run.out.t_end_ms - run.out.t_start_ms;
            j["metrics"] = run.out.metrics;
            j["stages"] = stages;
            if (run.out.record.is_object()) j["run"] = run.out.record;
            j["quality"] = {{"checked", run.out.quality_checked},
                            {"passed", run.out.quality_checked ? nlohmann::json(run.out.quality_passed) : nlohmann::json(nullptr)},
                            {"note", run.out.quality_note},
                            {"report", run.out.quality}};
        }
        if (!run.devices.is_null()) j["devices"] = run.devices;
        runs.push_back(j);
    }
    nlohmann::json summary = nlohmann::json::object();
    for (const auto &[k, s] : r.summary) summary[k] = to_json(s);
    nlohmann::json values = nlohmann::json::object();
    for (const auto &[k, xs] : r.values) {
        auto a = nlohmann::json::array();
        for (double x : xs) a.push_back(num(x));
        values[k] = a;
    }
    return {{"label", r.label},
            {"workload", r.workload},
            {"knobs", knobs_json(r.knobs)},
            {"workload_config", r.workload_config},
            {"verdict", to_json(r.verdict)},
            {"warnings", r.warnings},
            {"summary", summary},
            {"values", values},
            {"leverage", to_json(r.leverage)},
            {"runs", runs}};
}

int overall_exit_code(const std::vector<const ConfigResult *> &results) {
    int code = 0;
    for (const auto *r : results) {
        if (r->verdict.exit_code == 3) return 3;
        if (r->verdict.exit_code == 2) code = 2;
    }
    return code;
}

nlohmann::json make_bench_json(const std::string &workload, const std::string &mode, const ProtocolConfig &cfg,
                               const std::vector<const ConfigResult *> &configs, const nlohmann::json &comparison,
                               const nlohmann::json &samplers) {
    nlohmann::json j = {{"schema", kSchema},       {"command", "bench"},      {"created", utc_timestamp()},
                        {"mode", mode},            {"workload", workload},    {"protocol", cfg.to_json()},
                        {"machine", machine_json()}, {"versions", versions_json()}, {"samplers", samplers}};
    auto arr = nlohmann::json::array();
    for (const auto *c : configs) arr.push_back(to_json(*c));
    j["configs"] = arr;
    if (!comparison.is_null()) j["comparison"] = comparison;
    j["exit_code"] = overall_exit_code(configs);
    return j;
}

}  // namespace rtf::bench
