// The HTML page of an `rtf load` result (html-parts.h).
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

}  // namespace rtf::report::html
