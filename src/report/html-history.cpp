// The HTML page of a metric over the history (html-parts.h).
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

}  // namespace rtf::report::html
