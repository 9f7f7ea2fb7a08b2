// The HTML rendering (report.h): one self-contained page, sections in the order a reader
// asks the questions — did it meet the target, where did each chunk spend its time, which
// stage is the wall, what would help most, was the device busy, how do A and B differ,
// and under which config and machine.
#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.h"
#include "report/bench-view.h"
#include "report/charts.h"
#include "report/escape.h"
#include "report/report.h"
#include "report/svg.h"

namespace rtf::report {

namespace {

const char *kStyle = R"CSS(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#222;background:#fff;margin:0}
main{max-width:1100px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 2px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.sub{color:#666;margin:0 0 12px}
svg{max-width:100%;height:auto;display:block;margin:6px 0}
table{border-collapse:collapse;margin:6px 0;font-size:13px}td,th{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
table.kv td:first-child{color:#555;white-space:nowrap}table.kv table.kv{margin:0}
.badge{display:inline-block;padding:4px 12px;border-radius:4px;font-weight:600;color:#fff}
.ok{background:#2e7d32}.miss{background:#e65100}.bad{background:#c62828}.info{background:#546e7a}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}.card{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:120px}
.card b{display:block;font-size:20px}.card span{color:#666;font-size:12px}
.note{color:#666;font-style:italic}.fail{color:#c62828;font-weight:600}.pass{color:#2e7d32}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;padding:8px;border-radius:4px}
details summary{cursor:pointer;color:#345}
)CSS";

std::string e(const std::string &s) { return html_escape(s); }

std::string nonce() {
    std::random_device rd;
    const char *hex = "0123456789abcdef";
    std::string n;
    for (int i = 0; i < 24; ++i) n += hex[rd() % 16];
    return n;
}

std::string card(const std::string &value, const std::string &name) {
    return "<div class=\"card\"><b>" + e(value) + "</b><span>" + e(name) + "</span></div>";
}

// A JSON value as nested key/value tables; long arrays are cut (the JSON has them all).
std::string kv_table(const json &j, int depth = 0) {
    if (j.is_object()) {
        if (j.empty()) return "<span class=\"note\">(empty)</span>";
        std::string o = "<table class=\"kv\">";
        for (auto it = j.begin(); it != j.end(); ++it)
            o += "<tr><td>" + e(it.key()) + "</td><td>" + kv_table(it.value(), depth + 1) + "</td></tr>";
        return o + "</table>";
    }
    if (j.is_array()) {
        if (j.empty()) return "<span class=\"note\">(none)</span>";
        bool scalars = true;
        for (const auto &x : j) scalars = scalars && !x.is_structured();
        const size_t kMax = 40;
        std::string o;
        size_t k = 0;
        if (scalars) {
            for (const auto &x : j) {
                if (k++ == kMax) break;
                o += (o.empty() ? "" : ", ") + e(x.is_string() ? x.get<std::string>() : x.dump());
            }
        } else {
            for (const auto &x : j) {
                if (k++ == kMax) break;
                o += kv_table(x, depth + 1);
            }
        }
        if (j.size() > kMax) o += " <span class=\"note\">\xE2\x80\xA6 " + std::to_string(j.size() - kMax) + " more in the JSON</span>";
        return o;
    }
    if (j.is_null()) return "<span class=\"note\">null</span>";
    return e(j.is_string() ? j.get<std::string>() : j.dump());
}

std::string stat_cells(const json &s) {
    std::string o;
    for (const char *f : {"p50", "p95", "p99", "max"}) o += "<td class=\"n\">" + e(fmt(num(s, f), 1)) + "</td>";
    return o + "<td class=\"n\">" + e(str(s, "n")) + "</td>";
}

// Per-stage, sub-stage and queue tables of one run's metrics.
std::string stage_tables(const RunView &v) {
    std::string o = "<table><tr><th>stage</th><th>rtf_stage</th><th>busy ms</th><th>starved (get wait) ms</th>"
                    "<th>blocked (put wait) ms</th><th>device</th><th>threads</th><th colspan=\"5\">item_ms p50 / p95 / p99 / max / n</th></tr>";
    for (const auto &name : run_stage_names(v)) {
        const StageView *sv = nullptr;
        for (const auto &s : v.stages)
            if (s.name == name) sv = &s;
        o += "<tr><td>" + e(name) + "</td><td class=\"n\">" + e(fmt(num(v.metrics, "rtf_stage." + name))) + "</td>";
        if (sv)
            o += "<td class=\"n\">" + e(fmt(sv->busy_ms, 1)) + "</td><td class=\"n\">" + e(fmt(sv->get_wait_ms, 1)) +
                 "</td><td class=\"n\">" + e(fmt(sv->put_wait_ms, 1)) + "</td><td>" + e(sv->device) +
                 "</td><td class=\"n\">" + std::to_string(sv->n_threads) + "</td>";
        else
            o += "<td></td><td></td><td></td><td></td><td></td>";
        o += stat_cells(at(v.metrics, name + ".item_ms")) + "</tr>";
    }
    o += "</table>";
    // Sub-stage timers and queue waits: every metrics object with percentiles that is not a stage's item_ms.
    std::string subs, queues;
    if (v.metrics.is_object()) {
        for (auto it = v.metrics.begin(); it != v.metrics.end(); ++it) {
            if (!it.value().is_object() || !it.value().contains("p50")) continue;
            const std::string &k = it.key();
            if (k.size() > 8 && k.compare(k.size() - 8, 8, ".item_ms") == 0) continue;
            std::string row = "<tr><td>" + e(k) + "</td>" + stat_cells(it.value()) + "</tr>";
            (k.rfind("queue_wait.", 0) == 0 ? queues : subs) += row;
        }
    }
    const char *head = "<th>p50</th><th>p95</th><th>p99</th><th>max</th><th>n</th></tr>";
    if (!subs.empty()) o += "<h3>Sub-stage timers (ms)</h3><table><tr><th>timer</th>" + std::string(head) + subs + "</table>";
    if (!queues.empty()) o += "<h3>Queue waits, put to get (ms)</h3><table><tr><th>queue</th>" + std::string(head) + queues + "</table>";
    if (subs.empty() && queues.empty() && !v.profiled)
        o += "<p class=\"note\">Profiling was off: no per-item percentiles, sub-stage timers or queue waits.</p>";
    return o;
}

std::string starvation_text(const json &metrics) {
    const json &s = at(metrics, "starvation");
    if (!s.is_object()) return "starvation: not measured";
    return "starvation: " + str(s, "count") + " gap(s), " + fmt(num(s, "total_ms"), 0) + " ms of silence (jitter buffer " +
           fmt(num(s, "jitter_ms"), 0) + " ms)";
}

// The per-run sections: headline cards, per-chunk RTF, Gantt, lanes, stage shares.
std::string run_sections(const RunView &v, const std::string &heading_suffix) {
    const json &m = v.metrics;
    std::string o = "<div class=\"cards\">" + card(fmt(num(m, "rtf")), "rtf (end to end)") +
                    card(fmt(num(m, "xrt"), 2) + "\xC3\x97", "xrt (\xC3\x97 real time)") +
                    card(fmt(num(m, "rtf_steady")), "rtf_steady") + card(fmt(num(m, "first_audio_ms"), 0) + " ms", "first_audio_ms") +
                    card(str(at(m, "starvation"), "count"), "starvation gaps") + card(fmt(num(m, "bound_overlap")), "bound_overlap") +
                    card(fmt(num(m, "bound_serial")), "bound_serial") + card(fmt(num(m, "pipeline_efficiency")), "pipeline_efficiency") +
                    card(str(m, "n_chunks"), "chunks") + card(fmt(num(m, "audio_ms") / 1000.0, 2) + " s", "audio") + "</div>";
    o += "<p>" + e(starvation_text(m)) + (v.schedule.empty() ? "" : "; schedule " + e(v.schedule)) + ".</p>";
    o += "<h2>Per-chunk RTF" + e(heading_suffix) + "</h2>" + chunk_rtf_chart(v);
    o += "<h2>Timeline" + e(heading_suffix) +
         "</h2><p class=\"sub\">Each row is a chunk; each bar the stage work on its path. Bars of different chunks "
         "side by side in time = the stages overlap; a staircase = lockstep or sequential.</p>" +
         gantt_chart(v) + lanes_chart(v);
    o += "<h2>Stage shares" + e(heading_suffix) +
         "</h2><p class=\"sub\">rtf_stage.&lt;s&gt; = busy time of stage s / audio. Perfect overlap reaches the longest "
         "segment (bound_overlap); running one after another costs the whole bar (bound_serial).</p>" +
         stage_share_chart({share_row_of(v, "this run")}, run_stage_names(v)) + stage_tables(v);
    return o;
}

std::string page(const std::string &title, const std::string &body) {
    std::string n = nonce();
    return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
           "script-src 'nonce-" + n + "'\">"
           "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
           "<title>" + e(title) + "</title><style>" + kStyle + "</style>"
           "<script nonce=\"" + n + "\">(function(){var m=function(){document.documentElement.setAttribute("
           "'data-report-error','1')};window.addEventListener('error',m);"
           "document.addEventListener('securitypolicyviolation',m)})();</script></head><body><main>" +
           body +
           "<p class=\"note\">Rendered by <code>rtf report</code> from the result JSON alone (the source of truth); "
           "metric names as in docs/metrics.md.</p></main><script nonce=\"" + n +
           "\">document.documentElement.setAttribute('data-report','ok');</script></body></html>\n";
}

std::string header(const std::string &kind, const std::string &source, const std::string &extra) {
    return "<h1>rtfkit report \xE2\x80\x94 " + e(kind) + "</h1><p class=\"sub\">" +
           (source.empty() ? "" : "from " + e(source) + " \xC2\xB7 ") + extra + "</p>";
}

std::string render_run_doc(const json &doc, ResultKind kind, const std::string &source) {
    const json &rr = run_result_of(doc, kind);
    RunView v = run_view(rr);
    std::string b = header(to_string(kind), source, "one run, no bench protocol (warm-up, N runs, median): use "
                                                      "<code>rtf bench</code> for a verdict");
    double rtf = num(v.metrics, "rtf");
    b += "<h2>Verdict</h2><p>";
    if (!std::isfinite(rtf)) b += "<span class=\"badge bad\">NO AUDIO</span> the run produced no audio: rtf is undefined";
    else if (rtf < 1) b += "<span class=\"badge ok\">REAL TIME</span> rtf " + e(fmt(rtf)) + " &lt; 1";
    else b += "<span class=\"badge miss\">SLOWER THAN REAL TIME</span> rtf " + e(fmt(rtf)) + " \xE2\x89\xA5 1";
    if (at(rr, "cancelled").is_boolean() && at(rr, "cancelled").get<bool>())
        b += " <span class=\"badge bad\">INTERRUPTED</span> partial result";
    b += "</p>";
    b += run_sections(v, "");
    const json &out = at(doc, "output");
    if (out.is_object()) {
        b += "<h2>Output</h2>";
        if (is_nonempty(at(out, "reply_text")))
            b += "<p>Reply text (LLM):</p><pre>" + e(str(out, "reply_text")) + "</pre>";
        b += kv_table(out);
    }
    b += "<h2>Config</h2>";
    if (kind == ResultKind::Simulate) {
        b += "<h3>simulate</h3>" + kv_table(at(doc, "simulate")) + "<h3>pipeline</h3>" + kv_table(at(doc, "pipeline"));
    } else {
        b += "<p>schedule " + e(str(doc, "schedule")) + ", queue depths " + kv_table(at(doc, "depths")) + "</p>" +
             kv_table(at(doc, "config"));
    }
    if (at(doc, "engines").is_object()) b += "<h2>Engines and kit</h2>" + kv_table(at(doc, "engines"));
    return page("rtf report: " + std::string(to_string(kind)) + ", rtf " + fmt(rtf), b);
}

std::string verdict_badge(const json &v) {
    std::string status = str(v, "status");
    bool met = at(v, "targets_met").is_boolean() && at(v, "targets_met").get<bool>();
    if (status != "VALID") return "<span class=\"badge bad\">INVALID</span>";
    return met ? "<span class=\"badge ok\">VALID \xC2\xB7 targets met</span>"
               : "<span class=\"badge miss\">VALID \xC2\xB7 TARGET MISSED</span>";
}

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
    // Verdict and targets.
    int code = std::isfinite(num(doc, "exit_code")) ? static_cast<int>(num(doc, "exit_code")) : 3;
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
    // Runs per config (A/B side by side with noise bands).
    std::vector<ConfigRuns> runs;
    std::vector<ShareRow> shares;
    i = 0;
    for (const auto &c : cfgs) {
        runs.push_back(config_runs(c));
        runs.back().label = config_label(c, i);
        shares.push_back(share_row_of(c, config_label(c, i)));
        ++i;
    }
    b += "<h2>Runs</h2><p class=\"sub\">Every run's RTF; the bar is the median over counted runs, the band the noise "
         "floor around it: medians whose bands overlap differ by less than the noise.</p>" +
         runs_chart(runs, noise, target);
    b += "<table><tr><th>config</th><th>run</th><th>rtf</th><th>rtf_steady</th><th>first_audio_ms</th><th>starvation</th>"
         "<th>quality</th><th>status</th></tr>";
    i = 0;
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
    // Median table.
    b += "<h3>Medians over counted runs [min, max] (MAD)</h3><table><tr><th>config</th><th>rtf</th><th>rtf_steady</th>"
         "<th>first_audio_ms</th><th>starvation</th><th>xrt</th><th>bound_overlap</th><th>bound_serial</th><th>pipeline_efficiency</th></tr>";
    i = 0;
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
    // Per-chunk sections where a run record is present.
    i = 0;
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
    // Leverage.
    i = 0;
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
    // Duty cycle.
    b += "<h2>Device duty cycle</h2>";
    i = 0;
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
    // A/B comparison.
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
    // Config and machine.
    b += "<h2>Config</h2>";
    i = 0;
    for (const auto &c : cfgs) {
        b += "<h3>" + e(config_label(c, i++)) + "</h3><p>knobs</p>" + kv_table(at(c, "knobs")) +
             "<details><summary>workload config (every knob with its effective value)</summary>" +
             kv_table(at(c, "workload_config")) + "</details>";
    }
    b += "<h3>Protocol</h3>" + kv_table(proto);
    b += "<h2>Machine</h2>" + kv_table(at(doc, "machine")) + "<h3>Versions</h3>" + kv_table(at(doc, "versions")) +
         "<h3>Samplers</h3>" + kv_table(at(doc, "samplers"));
    return page("rtf report: bench " + str(doc, "workload") + ", exit " + std::to_string(code), b);
}

// An `rtf load` result: the summary (or the capacity levels) as cards and tables, then
// every stream; the chart-free page is the Markdown's content with the same numbers.
std::string render_load_doc(const json &doc, const std::string &source) {
    std::string b;
    auto td = [](const std::string &s) { return "<td>" + e(s) + "</td>"; };
    if (str(doc, "kind") == "capacity") {
        b += header("load: capacity", source, "largest concurrency meeting the targets");
        b += "<div class=\"cards\">" + card(fmt(num(doc, "capacity"), 0), "streams at capacity") +
             card(fmt(num(doc, "target_first_audio_ms"), 0) + " ms", "p95 first audio target") +
             card(fmt(100 * num(doc, "min_real_time_share"), 1) + " %", "real-time share required") + "</div>";
        b += "<table><tr><th>concurrency</th><th>meets</th><th>requests</th><th>first audio p95 ms</th><th>stream RTF p50</th>"
             "<th>real time</th><th>audio s / wall s</th></tr>";
        for (const auto &l : at(doc, "levels")) {
            const json &s = at(l, "summary");
            b += "<tr>" + td(fmt(num(at(l, "config"), "streams"), 0)) +
                 td(at(l, "meets").is_boolean() && at(l, "meets").get<bool>() ? "yes" : "no") + td(fmt(num(s, "requests"), 0)) +
                 td(fmt(num(at(s, "first_audio_ms"), "p95"), 0)) + td(fmt(num(at(s, "rtf"), "p50"))) +
                 td(fmt(100 * num(s, "real_time_share"), 1) + " %") + td(fmt(num(s, "audio_s_per_wall_s"))) + "</tr>";
        }
        return page("rtf report: load capacity", b + "</table>");
    }
    const json &s = at(doc, "summary"), &cfg = at(doc, "config");
    b += header("load", source, e(str(cfg, "url") + str(cfg, "path")) + ", " + e(str(cfg, "mode")));
    b += "<div class=\"cards\">" + card(fmt(num(at(s, "first_audio_ms"), "p95"), 0) + " ms", "p95 first audio") +
         card(fmt(num(at(s, "rtf"), "p50")), "median stream RTF") +
         card(fmt(100 * num(s, "real_time_share"), 1) + " %", "streams real time") +
         card(fmt(num(s, "audio_s_per_wall_s")), "audio s per wall s") + "</div>";
    b += "<h2>Summary</h2>" + kv_table(s) + "<h2>Config</h2>" + kv_table(cfg);
    b += "<h2>Streams</h2><table><tr><th>#</th><th>client</th><th>sent at s</th><th>status</th><th>first audio ms</th>"
         "<th>audio s</th><th>RTF</th><th>gaps</th><th>gap ms</th><th>error</th></tr>";
    int i = 0;
    for (const auto &st : at(doc, "streams")) {
        const json &g = at(st, "starvation");
        b += "<tr>" + td(std::to_string(i++)) + td(fmt(num(st, "client"), 0)) + td(fmt(num(st, "t_sent_ms") / 1000.0, 2)) +
             td(fmt(num(st, "status"), 0)) + td(fmt(num(st, "first_audio_ms"), 0)) + td(fmt(num(st, "audio_s"), 2)) +
             td(fmt(num(st, "rtf"))) + td(fmt(num(g, "count"), 0)) + td(fmt(num(g, "total_ms"), 0)) + td(str(st, "error")) + "</tr>";
    }
    return page("rtf report: load", b + "</table>");
}

// An `rtf duplex` result (schema rtfkit.duplex/1): the analyzer's verdict and checks, then the
// session timeline — per frame its push -> done bar (speak / listen / failed), per audio turn
// the chunks' ready times and their playback as the analyzer's [5] plays them (back to back
// from the first chunk + the startup buffer; a red gap where the next chunk was not ready) —
// then the per-stage busy shares and the meta.
std::string duplex_timeline(const json &doc) {
    const json &frames = at(doc, "frames"), &chunks = at(doc, "audio_chunks"), &an = at(doc, "analysis");
    const double buffer = num(at(an, "options"), "startup_buffer_ms");
    const double start_buf = std::isfinite(buffer) ? buffer : 0.0;
    double t_max = 1;
    for (const auto &f : frames) t_max = std::max(t_max, num(f, "t_done_ms"));
    // playback per audio turn (chunks with duration > 0), the analyzer's [5] clause by clause
    struct Play { double ready, start, dur; int turn; };
    std::vector<Play> plays;
    std::vector<std::pair<double, double>> gaps;
    int turn = -1;
    double end = 0;
    bool first = true;
    for (const auto &c : chunks) {
        const double ready = num(c, "t_complete_ms"), dur = 1000.0 * num(c, "duration_s");
        const int id = static_cast<int>(num(c, "audio_turn_id"));
        t_max = std::max(t_max, ready);
        if (id != turn) { turn = id; first = true; }
        if (!(dur > 0)) continue;
        if (first) { end = ready + start_buf; first = false; }
        if (ready > end) { gaps.emplace_back(end, ready); end = ready; }
        plays.push_back({ready, end, dur, id});
        end += dur;
        t_max = std::max(t_max, end);
    }
    const double W = 1000, left = 70, right = 20, row = 9;
    const double n_rows = static_cast<double>(frames.size());
    const double audio_top = 30 + n_rows * row + 20;
    const double H = audio_top + 3 * 18 + 40;
    Svg svg(W, H, "duplex session timeline");
    Scale x(0, t_max, left, W - right);
    const auto ticks = nice_ticks(0, t_max);
    for (double t : ticks) svg.line(x(t), 20, x(t), H - 30, "#eee");
    svg.x_axis(x, H - 30, ticks, "session time, ms");
    svg.text(4, 26, "frames", "start", 11, "#333");
    size_t i = 0;
    for (const auto &f : frames) {
        const double y = 30 + static_cast<double>(i++) * row;
        const bool ok = at(f, "ok").is_boolean() && at(f, "ok").get<bool>();
        const bool sp = at(f, "is_speak").is_boolean() && at(f, "is_speak").get<bool>();
        const double t0 = num(f, "t_push_ms"), t1 = num(f, "t_done_ms");
        const std::string tip = "frame " + fmt(num(f, "frame_id"), 0) + ": pushed " + fmt(t0, 1) + " ms, done " + fmt(t1, 1) +
                                " ms (" + (ok ? (sp ? "speak" : "listen") : "FAILED") + ")";
        svg.rect(x(t0), y, std::max(1.0, x(t1) - x(t0)), row - 2, !ok ? "#c62828" : sp ? series_color(0) : "#b0bec5", tip);
        svg.circle(x(t0), y + (row - 2) / 2, 1.5, "#333");
    }
    svg.text(4, audio_top + 12, "audio", "start", 11, "#333");
    for (const auto &c : chunks) {
        const double t = num(c, "t_complete_ms");
        svg.line(x(t), audio_top, x(t), audio_top + 14, series_color(1), 1.5);
    }
    svg.text(4, audio_top + 30, "playback", "start", 11, "#333");
    for (const auto &p : plays)
        svg.rect(x(p.start), audio_top + 20, std::max(1.0, x(p.start + p.dur) - x(p.start)), 14,
                 series_color(2 + static_cast<size_t>(p.turn) % 6),
                 "audio turn " + std::to_string(p.turn) + ": ready " + fmt(p.ready, 1) + " ms, plays " + fmt(p.start, 1) +
                     " .. " + fmt(p.start + p.dur, 1) + " ms");
    for (const auto &g : gaps)
        svg.rect(x(g.first), audio_top + 38, std::max(2.0, x(g.second) - x(g.first)), 10, "#c62828",
                 "playback gap " + fmt(g.second - g.first, 1) + " ms");
    if (!gaps.empty()) svg.text(4, audio_top + 47, "gaps", "start", 11, "#c62828");
    return svg.str();
}

std::string render_duplex_doc(const json &doc, const std::string &source) {
    const json &an = at(doc, "analysis"), &meta = at(doc, "meta");
    const std::string verdict = str(an, "verdict");
    std::string b = header("duplex", source,
                           e(fmt(num(meta, "stream_interval_ms"), 0)) + " ms interval, decision " + e(str(meta, "decision")) +
                               (str(meta, "speak_frames").empty() ? "" : " (--speak-frames " + e(str(meta, "speak_frames")) + ")"));
    b += "<h2>Verdict</h2><p><span class=\"badge " + std::string(verdict == "pass" ? "ok" : verdict == "fail" ? "miss" : "bad") +
         "\">" + e(verdict.empty() ? "n/a" : verdict) + "</span> " + e(str(an, "summary")) + "</p>";
    if (at(doc, "completed").is_boolean() && !at(doc, "completed").get<bool>())
        b += "<p class=\"fail\">Incomplete run: " + e(str(doc, "error")) + "</p>";
    const json &dl = at(an, "decision_latency_ms"), &fa = at(an, "first_audio_ms"), &rt = at(an, "rtf");
    b += "<div class=\"cards\">" + card(fmt(num(dl, "p95"), 1) + " ms", "decision latency P95") +
         card(fmt(num(fa, "e2e_p95"), 1) + " ms", "first audio P95") + card(fmt(num(rt, "tts_max")), "TTS RTF (worst turn)") +
         card(str(doc, "binding_stage"), "binding stage") + "</div>";
    b += "<h2>Checks</h2><table><tr><th>check</th><th>state</th><th>rule</th></tr>";
    for (const auto &c : at(an, "checks")) {
        const std::string st = str(c, "state");
        b += "<tr><td>" + e(str(c, "id")) + "</td><td class=\"" + (st == "FAIL" ? "fail" : st == "PASS" ? "pass" : "") + "\">" +
             e(st) + "</td><td>" + e(str(c, "rule")) + "</td></tr>";
    }
    b += "</table><h2>Timeline</h2><p class=\"sub\">Per frame a bar from push to done (blue speak, grey listen, red "
         "failed); audio chunks when ready; playback back to back from each turn's first chunk plus the startup buffer, "
         "red where the next chunk was not ready (a gap).</p>" +
         duplex_timeline(doc);
    b += "<h2>Stages</h2><table><tr><th>stage</th><th>busy ms</th><th>share of the session</th></tr>";
    for (const auto &s : at(doc, "stages"))
        b += "<tr><td>" + e(str(s, "name")) + "</td><td class=\"n\">" + e(fmt(num(s, "busy_ms"), 1)) + "</td><td class=\"n\">" +
             e(fmt(100 * num(s, "utilization"), 1)) + " %</td></tr>";
    b += "</table><h2>Turns</h2>" + kv_table(at(an, "turns")) + "<h2>Meta</h2>" + kv_table(meta);
    return page("rtf report: duplex, " + (verdict.empty() ? std::string("n/a") : verdict), b);
}

// A metric over the history: the line chart, then one table row per result.
std::string render_history_doc(const json &doc) {
    const std::string metric = str(doc, "metric");
    std::vector<SeriesPoint> pts;
    std::string rows;
    for (const auto &p : at(doc, "points")) {
        const std::string commit = str(p, "commit");
        const std::string id = str(p, "id");
        pts.push_back({commit.empty() ? "#" + id : commit.substr(0, 8),
                       "#" + id + " " + str(p, "created") + " " + str(p, "rtfkit") + ": " + fmt(num(p, "value"), 4),
                       num(p, "value")});
        rows += "<tr><td>" + e(id) + "</td><td>" + e(str(p, "created")) + "</td><td>" + e(str(p, "rtfkit")) + "</td><td>" +
                e(str(p, "kind")) + "</td><td>" + e(str(p, "label")) + "</td><td>" + e(str(p, "machine_id")) + "</td><td>" +
                e(str(p, "kit_id")) + "</td><td>" + e(fmt(num(p, "value"), 4)) + "</td></tr>";
    }
    std::string b = "<h1>" + e(metric) + " over the history</h1><p class=\"sub\">" + e(std::to_string(pts.size())) +
                     " result(s) from " + e(str(doc, "db")) + ", oldest first; filters " + e(at(doc, "filters").dump()) +
                     ". Results from different machines or kits do not compare: filter with --machine / --kit.</p>";
    b += series_chart(pts, metric);
    b += "<table><tr><th>id</th><th>created</th><th>rtfkit</th><th>kind</th><th>label</th><th>machine</th><th>kit</th><th>" +
         e(metric) + "</th></tr>" + rows + "</table>";
    return page("rtf report: " + metric + " over the history", b);
}

}  // namespace

std::string render_html(const json &doc, const std::string &source) {
    ResultKind kind = detect_kind(doc, source.empty() ? "result" : source);
    if (kind == ResultKind::DuplexRun) return render_duplex_doc(doc, source);
    if (kind == ResultKind::Tune || kind == ResultKind::Predict || kind == ResultKind::Duplex) {
        throw_usage((source.empty() ? std::string("result") : source) + ": a " + to_string(kind) +
                    " result renders as Markdown (-o FILE.md); its HTML page is not written yet");
    }
    if (kind == ResultKind::Load) return render_load_doc(doc, source);
    if (kind == ResultKind::HistorySeries) return render_history_doc(doc);
    return kind == ResultKind::Bench ? render_bench_doc(doc, source) : render_run_doc(doc, kind, source);
}

}  // namespace rtf::report
