// The Markdown view of a metric over the history (schema rtfkit.history-series/1,
// history::metric_series): one row per result, oldest first, with its commit.
#include <sstream>

#include "report/escape.h"
#include "report/json-view.h"
#include "report/report.h"

namespace rtf::report {

std::string history_markdown(const json &doc) {
    std::ostringstream o;
    auto me = [](const std::string &s) { return md_escape(s); };
    const std::string metric = str(doc, "metric");
    const json &pts = at(doc, "points");
    o << "## rtfkit history: " << me(metric) << " over the results\n\n";
    o << (pts.is_array() ? pts.size() : 0) << " result(s) from " << me(str(doc, "db")) << ", oldest first; filters "
      << me(at(doc, "filters").dump()) << ". Results of different machines or kits do not compare.\n\n";
    if (!is_nonempty(pts)) return o.str() + "No result has " + me(metric) + ".\n";
    o << "| id | created | commit | kind | label | machine | kit | " << me(metric) << " |\n|---:|---|---|---|---|---|---|---:|\n";
    for (const auto &p : pts)
        o << "| " << str(p, "id") << " | " << me(str(p, "created")) << " | "
          << me(str(p, "commit").empty() ? str(p, "rtfkit") : str(p, "commit")) << " | " << me(str(p, "kind")) << " | "
          << me(str(p, "label")) << " | " << me(str(p, "machine_id")) << " | " << me(str(p, "kit_id")) << " | "
          << fmt(num(p, "value"), 4) << " |\n";
    return o.str();
}

}  // namespace rtf::report
