// The HTML page of a bench result (html-parts.h).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "report/bench-view.h"
#include "report/charts.h"
#include "report/escape.h"
#include "report/html-parts.h"
#include "report/report.h"
#include "report/svg.h"

namespace rtf::report::html {

namespace {

std::string verdict_badge(const json &v) {
    std::string status = str(v, "status");
    bool met = at(v, "targets_met").is_boolean() && at(v, "targets_met").get<bool>();
    if (status != "VALID") return "<span class=\"badge bad\">INVALID</span>";
    return met ? "<span class=\"badge ok\">VALID \xC2\xB7 targets met</span>"
               : "<span class=\"badge miss\">VALID \xC2\xB7 TARGET MISSED</span>";
}

// Verdict: the exit code, the targets, per config its verdict, targets, reasons and warnings.
std::string verdict_section(const json &cfgs, const json &proto, double target, int code) {
    std::string b;
    const char *cls = code == 0 ? "ok" : code == 2 ? "miss" : "bad";
    const char *what = code == 0 ? "all targets met" : code == 2 ? "a target was missed" : "incomplete or invalid";
    b += "<h2>Verdict</h2><p><span class=\"badge " + std::string(cls) + "\">exit " + std::to_string(code) + ": " + what +
         "</span></p>";
    b += "<p>Targets: rtf \xE2\x89\xA4 " + e(fmt(target)) + ", first_audio_ms \xE2\x89\xA4 " +
         e(fmt(num(at(proto, "targets"), "first_audio_ms"), 0)) + ", starvation \xE2\x89\xA4 " +
         e(fmt(num(at(proto, "targets"), "starvation"), 0)) + " (n/a = off).</p>";
    size_t i = 0;
    for (const auto &c : cfgs) {
        const json &v = at(c, "verdict");
        b += "<h3>" + e(config_label(c, i)) + " " + verdict_badge(v) + "</h3>";
        const json &t = at(v, "targets");
        if (t.is_array() && !t.empty()) {
            b += "<table><tr><th>target</th><th>median</th><th>result</th></tr>";
            for (const auto &x : t) {
                bool met = at(x, "met").is_boolean() && at(x, "met").get<bool>();
                b += "<tr><td>" + e(str(x, "metric")) + " " + e(str(x, "op")) + " " + e(fmt(num(x, "target"))) +
                     "</td><td class=\"n\">" + e(fmt(num(x, "value"))) + "</td><td class=\"" + (met ? "pass" : "fail") +
                     "\">" + (met ? "met" : "MISSED") + "</td></tr>";
            }
            b += "</table>";
        }
        for (const auto &r : at(v, "reasons").is_array() ? at(v, "reasons") : json::array())
            b += "<p class=\"fail\">INVALID: " + e(str(r)) + "</p>";
        for (const auto &w : at(c, "warnings").is_array() ? at(c, "warnings") : json::array())
            b += "<p class=\"note\">warning: " + e(str(w)) + "</p>";
        ++i;
    }
    return b;
}

// Every run of every config: the chart with noise bands and the table.
std::string runs_section(const json &cfgs, const std::vector<ConfigRuns> &runs, double noise, double target) {
    std::string b;
    b += "<h2>Runs</h2><p class=\"sub\">Every run's RTF; the bar is the median over counted runs, the band the noise "
         "floor around it: medians whose bands overlap differ by less than the noise.</p>" +
         runs_chart(runs, noise, target);
    b += "<table><tr><th>config</th><th>run</th><th>rtf</th><th>rtf_steady</th><th>first_audio_ms</th><th>starvation</th>"
         "<th>quality</th><th>status</th></tr>";
    size_t i = 0;
    for (const auto &c : cfgs) {
        for (const auto &r : at(c, "runs").is_array() ? at(c, "runs") : json::array()) {
            const json &m = at(r, "metrics");
            std::string q = quality_status(r), st = run_status(r);
            b += "<tr><td>" + e(config_label(c, i)) + "</td><td>" + e((at(r, "warmup").is_boolean() && at(r, "warmup").get<bool>() ? "warm-up " : "") + str(r, "index")) +
                 "</td><td class=\"n\">" + e(fmt(num(m, "rtf"))) + "</td><td class=\"n\">" + e(fmt(num(m, "rtf_steady"))) +
                 "</td><td class=\"n\">" + e(fmt(num(m, "first_audio_ms"), 1)) + "</td><td class=\"n\">" +
                 e(str(at(m, "starvation"), "count")) + "</td><td class=\"" + (q == "FAILED" ? "fail" : q == "passed" ? "pass" : "") +
                 "\">" + e(q) + "</td><td" + (st == "counted" || st == "warm-up" ? "" : " class=\"fail\"") + ">" + e(st) + "</td></tr>";
        }
        ++i;
    }
    b += "</table>";
    return b;
}

// Medians over counted runs [min, max] (MAD) per config.
std::string medians_section(const json &cfgs) {
    std::string b;
    b += "<h3>Medians over counted runs [min, max] (MAD)</h3><table><tr><th>config</th><th>rtf</th><th>rtf_steady</th>"
         "<th>first_audio_ms</th><th>starvation</th><th>xrt</th><th>bound_overlap</th><th>bound_serial</th><th>pipeline_efficiency</th></tr>";
    size_t i = 0;
    for (const auto &c : cfgs) {
        b += "<tr><td>" + e(config_label(c, i++)) + "</td><td class=\"n\">" + e(fmt(summary_stat(c, "rtf"))) + " [" +
             e(fmt(summary_stat(c, "rtf", "min"))) + ", " + e(fmt(summary_stat(c, "rtf", "max"))) + "] (" +
             e(fmt(summary_stat(c, "rtf", "mad"))) + ")</td>";
        for (const char *m : {"rtf_steady", "first_audio_ms", "starvation.count", "xrt", "bound_overlap", "bound_serial",
                              "pipeline_efficiency"})
            b += "<td class=\"n\">" + e(fmt(summary_stat(c, m), std::string(m) == "first_audio_ms" ? 1 : 3)) + "</td>";
        b += "</tr>";
    }
    b += "</table>";
    return b;
}

// Per-chunk sections where a run record is present, then the stage shares per config.
std::string detail_section(const json &doc, const json &cfgs, const std::vector<ShareRow> &shares) {
    std::string b;
    size_t i = 0;
    bool any_record = false;
    for (const auto &c : cfgs) {
        if (const json *r = run_with_record(c)) {
            any_record = true;
            b += "<h2>Run detail: " + e(config_label(c, i)) + ", run " + e(str(*r, "index")) + "</h2>" +
                 run_sections(run_view(*r), " \xE2\x80\x94 " + config_label(c, i));
        }
        ++i;
    }
    if (!any_record)
        b += "<h2>Per-chunk detail</h2><p class=\"note\">This bench result holds per-run aggregates only (no per-chunk "
             "records): render an <code>rtf speak --json</code> or <code>rtf simulate --json</code> result of the same "
             "config for the per-chunk RTF and the Gantt timeline.</p>";
    b += "<h2>Stage shares</h2><p class=\"sub\">Median rtf_stage.&lt;s&gt; per config; the black marker is the median "
         "measured rtf.</p>" + stage_share_chart(shares, bench_stage_names(doc));
    return b;
}

// The leverage table of each config.
std::string leverage_section(const json &cfgs) {
    std::string b;
    size_t i = 0;
    for (const auto &c : cfgs) {
        const json &lev = at(c, "leverage");
        b += "<h2>Leverage: " + e(config_label(c, i)) + "</h2>";
        if (!lev.is_array() || lev.empty()) {
            b += "<p class=\"note\">No leverage table (no counted run).</p>";
            ++i;
            continue;
        }
        b += leverage_chart(lev) +
             "<table><tr><th>#</th><th>what</th><th>share</th><th>actual RTF</th><th>floor RTF</th><th>reducible</th>"
             "<th>gain</th><th>toolbox layer</th><th>advice</th></tr>";
        int rank = 1;
        for (const auto &r : lev) {
            bool known = at(r, "floor_known").is_boolean() && at(r, "floor_known").get<bool>();
            b += "<tr><td class=\"n\">" + std::to_string(rank++) + "</td><td>" + e(str(r, "what")) + "</td><td class=\"n\">" +
                 e(fmt(num(r, "share"))) + "</td><td class=\"n\">" + e(fmt(num(r, "actual_rtf"))) + "</td><td class=\"n\">" +
                 (known ? e(fmt(num(r, "floor_rtf"))) : "?") + "</td><td class=\"n\">" + e(fmt(num(r, "reducible"))) +
                 (known ? "" : " (upper bound)") + "</td><td class=\"n\">" + e(fmt(num(r, "gain"))) + "</td><td>" +
                 e(str(r, "layer_name")) + "</td><td>" + e(str(r, "advice")) + "</td></tr>";
        }
        b += "</table>";
        ++i;
    }
    return b;
}

// Device duty cycle per config (timelines with --trace, medians otherwise).
std::string duty_section(const json &cfgs) {
    std::string b;
    b += "<h2>Device duty cycle</h2>";
    size_t i = 0;
    bool any_dev = false;
    for (const auto &c : cfgs) {
        auto series = device_series(c);
        std::string rows;
        const json &s = at(c, "summary");
        if (s.is_object())
            for (auto it = s.begin(); it != s.end(); ++it)
                if (it.key().rfind("device.", 0) == 0)
                    rows += "<tr><td>" + e(it.key()) + "</td><td class=\"n\">" + e(fmt(num(it.value(), "median"))) + "</td></tr>";
        if (series.empty() && rows.empty()) {
            ++i;
            continue;
        }
        any_dev = true;
        b += "<h3>" + e(config_label(c, i++)) + "</h3>";
        if (!series.empty()) b += duty_chart(series);
        else b += "<p class=\"note\">Per-sample timelines are kept only with <code>rtf bench --trace</code>; medians below.</p>";
        if (!rows.empty()) b += "<table><tr><th>metric</th><th>median</th></tr>" + rows + "</table>";
    }
    if (!any_dev) b += "<p class=\"note\">No device samples in this result (sampling off or no sampler available).</p>";
    return b;
}

// The A/B comparison, when the result has one.
std::string comparison_section(const json &doc, const std::vector<ConfigRuns> &runs, double noise, double target) {
    std::string b;
    const json &cmp = at(doc, "comparison");
    if (cmp.is_object()) {
        b += "<h2>A/B comparison</h2><p>baseline: <code>" + e(str(cmp, "a")) + "</code><br>candidate: <code>" + e(str(cmp, "b")) +
             "</code></p><p><b>RTF: " + e(str(cmp, "rtf_verdict")) + "</b></p><p class=\"note\">" +
             e(str(at(cmp, "significance"), "note")) + "</p>";
        for (const auto &d : at(cmp, "knob_diffs").is_array() ? at(cmp, "knob_diffs") : json::array())
            b += "<p>knob differs: <code>" + e(str(d)) + "</code></p>";
        for (const auto &n : at(cmp, "notes").is_array() ? at(cmp, "notes") : json::array())
            b += "<p class=\"note\">note: " + e(str(n)) + "</p>";
        if (runs.size() == 2) b += runs_chart(runs, noise, target);
        b += "<table><tr><th>metric</th><th>A (median)</th><th>B (median)</th><th>delta</th><th>ratio B/A</th></tr>";
        for (const auto &r : at(cmp, "metrics").is_array() ? at(cmp, "metrics") : json::array()) {
            std::string m = str(r, "metric");
            auto ends = [&](const char *suf) {
                std::string x(suf);
                return m.size() > x.size() && m.compare(m.size() - x.size(), x.size(), x) == 0;
            };
            if (ends(".p95") || ends(".p99") || ends(".mean") || ends(".n")) continue;  // medians and maxima; the JSON has all
            double d = num(r, "delta");
            bool rtf_like = m.rfind("rtf", 0) == 0 || m.rfind("bound_", 0) == 0;
            std::string row_cls = rtf_like && std::isfinite(d) && std::fabs(d) < noise ? " class=\"note\"" : "";
            b += "<tr" + row_cls + "><td>" + e(m) + "</td><td class=\"n\">" + e(fmt(num(r, "a"))) + "</td><td class=\"n\">" +
                 e(fmt(num(r, "b"))) + "</td><td class=\"n\">" + e(fmt(d)) + "</td><td class=\"n\">" + e(fmt(num(r, "ratio"))) +
                 "</td></tr>";
        }
        b += "</table><p class=\"note\">Grey rows: RTF differences within the noise floor (" + e(fmt(noise)) + ").</p>";
    }
    return b;
}

// Config (knobs and effective values) per config, the protocol, the machine.
std::string config_section(const json &doc, const json &cfgs, const json &proto) {
    std::string b;
    b += "<h2>Config</h2>";
    size_t i = 0;
    for (const auto &c : cfgs) {
        b += "<h3>" + e(config_label(c, i++)) + "</h3><p>knobs</p>" + kv_table(at(c, "knobs")) +
             "<details><summary>workload config (every knob with its effective value)</summary>" +
             kv_table(at(c, "workload_config")) + "</details>";
    }
    if (at(doc, "profile").is_object()) {
        // the machine profile the configs started from (speak and duplex workloads)
        const json &p = at(doc, "profile");
        b += "<h3>Machine profile: " + e(str(p, "name")) + "</h3><p>" + e(str(p, "source")) + "</p>";
        json rows = json::object();
        for (const auto &c : at(p, "choices").is_array() ? at(p, "choices") : json::array())
            rows[str(c, "knob")] = str(c, "value") + (at(c, "changes_math").is_boolean() && at(c, "changes_math").get<bool>()
                                                          ? " (changes the math: " + str(c, "fidelity") + ")"
                                                          : "");
        b += kv_table(rows);
    }
    b += "<h3>Protocol</h3>" + kv_table(proto);
    b += "<h2>Machine</h2>" + kv_table(at(doc, "machine")) + "<h3>Versions</h3>" + kv_table(at(doc, "versions")) +
         "<h3>Samplers</h3>" + kv_table(at(doc, "samplers"));
    return b;
}

}  // namespace

std::string render_bench_doc(const json &doc, const std::string &source) {
    const json &cfgs = at(doc, "configs");
    const json &proto = at(doc, "protocol");
    double noise = num(proto, "noise_rtf");
    double target = num(at(proto, "targets"), "rtf");
    std::string mode = str(doc, "mode");
    std::string b = header("bench", source, "workload <code>" + e(str(doc, "workload")) + "</code> \xC2\xB7 mode " +
                                                e(mode) + " \xC2\xB7 " + e(str(doc, "created")) + " \xC2\xB7 " +
                                                e(str(proto, "warmup")) + " warm-up, " + e(str(proto, "runs")) +
                                                " measured run(s) per config, noise floor " + e(fmt(noise)) + " RTF");
    int code = std::isfinite(num(doc, "exit_code")) ? static_cast<int>(num(doc, "exit_code")) : 3;
    std::vector<ConfigRuns> runs;
    std::vector<ShareRow> shares;
    size_t i = 0;
    for (const auto &c : cfgs) {
        runs.push_back(config_runs(c));
        runs.back().label = config_label(c, i);
        shares.push_back(share_row_of(c, config_label(c, i)));
        ++i;
    }
    b += verdict_section(cfgs, proto, target, code) + runs_section(cfgs, runs, noise, target) + medians_section(cfgs) +
         detail_section(doc, cfgs, shares) + leverage_section(cfgs) + duty_section(cfgs) +
         comparison_section(doc, runs, noise, target) + config_section(doc, cfgs, proto);
    return page("rtf report: bench " + str(doc, "workload") + ", exit " + std::to_string(code), b);
}

}  // namespace rtf::report::html
