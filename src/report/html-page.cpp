// The frame and shared pieces of every HTML page (html-parts.h).
#include <random>

#include "core/error.h"
#include "report/bench-view.h"
#include "report/charts.h"
#include "report/escape.h"
#include "report/html-parts.h"
#include "report/report.h"
#include "report/svg.h"

namespace rtf::report::html {

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

std::string nonce() {
    std::random_device rd;
    const char *hex = "0123456789abcdef";
    std::string n;
    for (int i = 0; i < 24; ++i) n += hex[rd() % 16];
    return n;
}

std::string stat_cells(const json &s) {
    std::string o;
    for (const char *f : {"p50", "p95", "p99", "max"}) o += "<td class=\"n\">" + e(fmt(num(s, f), 1)) + "</td>";
    return o + "<td class=\"n\">" + e(str(s, "n")) + "</td>";
}

std::string starvation_text(const json &metrics) {
    const json &s = at(metrics, "starvation");
    if (!s.is_object()) return "starvation: not measured";
    return "starvation: " + str(s, "count") + " gap(s), " + fmt(num(s, "total_ms"), 0) + " ms of silence (jitter buffer " +
           fmt(num(s, "jitter_ms"), 0) + " ms)";
}

}  // namespace

std::string e(const std::string &s) { return html_escape(s); }


std::string card(const std::string &value, const std::string &name) {
    return "<div class=\"card\"><b>" + e(value) + "</b><span>" + e(name) + "</span></div>";
}

std::string kv_table(const json &j, int depth) {
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

}  // namespace rtf::report::html
