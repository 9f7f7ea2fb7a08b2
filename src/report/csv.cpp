// The CSV rendering of a bench result (report.h): one row per config, llama-bench style,
// for spreadsheets and scripts that compare sweeps.
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "report/bench-view.h"
#include "report/report.h"

namespace rtf::report {

namespace {

// RFC 4180: a field holding a comma, quote or line break is quoted, quotes doubled.
std::string csv_cell(const std::string &s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

// The medians after rtf's own min/max/mad, in this order (the header names them).
const char *const kHeadline[] = {"rtf_steady",   "first_audio_ms", "starvation.count",   "xrt",
                                 "bound_overlap", "bound_serial",  "pipeline_efficiency"};

}  // namespace

std::string render_csv(const json &doc) {
    if (detect_kind(doc) != ResultKind::Bench)
        throw_usage("CSV is a rendering of bench results only (rtf bench --json); this is a " +
                    std::string(to_string(detect_kind(doc))) + " result");
    std::ostringstream o;
    const auto cols = bench_columns(doc);
    o << "label";
    for (const auto &k : cols.knobs) o << "," << csv_cell(k);
    o << ",verdict,exit_code,runs_counted,rtf_median,rtf_min,rtf_max,rtf_mad";
    for (const char *m : kHeadline) o << "," << m;
    for (const auto &m : cols.stage_metrics) o << "," << csv_cell(m);
    o << "\n";
    for (const auto &cfg : at(doc, "configs")) {
        const json &v = at(cfg, "verdict");
        const double code = num(v, "exit_code");
        o << csv_cell(str(cfg, "label"));
        for (const auto &k : cols.knobs) o << "," << csv_cell(knob_value(cfg, k));
        o << "," << csv_cell(str(v, "status")) << "," << (std::isfinite(code) ? static_cast<int>(code) : 3) << ","
          << fmt(summary_stat(cfg, "rtf", "n"), 0);
        for (const char *f : {"median", "min", "max", "mad"}) o << "," << fmt(summary_stat(cfg, "rtf", f), 4);
        for (const char *m : kHeadline) o << "," << fmt(summary_stat(cfg, m), 4);
        for (const auto &m : cols.stage_metrics) o << "," << fmt(summary_stat(cfg, m), 4);
        o << "\n";
    }
    return o.str();
}

}  // namespace rtf::report
