// rtf report: render a result JSON (the --json of rtf speak / simulate / bench / load /
// duplex; tune, predict and duplex-report as Markdown only) as one self-contained HTML page
// with charts, or as Markdown. The JSON is the source of truth;
// a stored result can be rendered again at any time. --history draws one metric over the
// result history instead (history::metric_series -> report).
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "history/history.h"
#include "machine/provenance.h"
#include "core/error.h"
#include "report/report.h"

namespace rtf::cli {

namespace {

struct ReportOptions {
    std::string input, output, format;
    bool history = false, md = false, html = false;
    std::string metric = "rtf", machine, kit, kind, label, db;
};

// --history: one metric over the stored results (history::metric_series), the same renderers.
nlohmann::json history_doc(const ReportOptions &o) {
    history::Filter f;
    f.machine_id = o.machine == "this" ? history::machine_id(machine_json()) : o.machine;
    f.kit_id = o.kit;
    f.kind = o.kind;
    f.label = o.label;
    f.metric = o.metric;
    history::History h(o.db.empty() ? history::History::default_path() : o.db);
    nlohmann::json filters = {{"metric", o.metric}};
    for (const auto &[k, v] : {std::pair{"machine", f.machine_id}, std::pair{"kit", f.kit_id}, std::pair{"kind", f.kind},
                               std::pair{"label", f.label}})
        if (!v.empty()) filters[k] = v;
    return history::metric_series(h.list(f), o.metric, filters, h.path());
}

int run_report(const ReportOptions &o) {
    if (o.md && o.html) throw_usage("--md / --html: give one");
    if (o.history == !o.input.empty()) throw_usage("RESULT or --history: give exactly one");
    report::Format f = o.md                                    ? report::Format::Markdown
                       : o.html                                ? report::Format::Html
                       : !o.format.empty()                     ? report::parse_format(o.format)
                       : o.output.empty() || o.output == "-" ? report::Format::Markdown
                                                              : report::format_for_path(o.output);
    if (o.history) {
        report::write_report(history_doc(o), o.output.empty() ? "-" : o.output, f, "history");
        if (!o.output.empty() && o.output != "-") std::cerr << "report     " << o.output << "\n";
        return 0;
    }
    auto doc = report::read_result(o.input);
    std::string source = o.input;
    if (auto slash = source.find_last_of('/'); slash != std::string::npos) source = source.substr(slash + 1);
    report::detect_kind(doc, o.input);  // a clear usage error before anything is written
    report::write_report(doc, o.output.empty() ? "-" : o.output, f, source);
    if (!o.output.empty() && o.output != "-") std::cerr << "report     " << o.output << "\n";
    return 0;
}

void add_report_command(CLI::App &app, Action &action) {
    auto o = std::make_shared<ReportOptions>();
    auto *sub = app.add_subcommand(
        "report", "Render a result JSON (the --json of rtf speak, simulate, bench, load, duplex (with its session "
                  "timeline), tune, predict or duplex-report; tune, predict and duplex-report render as Markdown only), "
                  "or with --history one metric over the result history, as a self-contained HTML page with charts "
                  "or as Markdown.\nExample: rtf report bench.json -o report.html");
    sub->add_option("RESULT", o->input,
                    "Result JSON written with --json by rtf speak, simulate, bench, load, duplex, duplex-report, tune or "
                    "predict");
    sub->add_option("-o,--output", o->output,
                    "Output file; the format follows its extension (.html/.htm or .md). Default: Markdown on stdout");
    sub->add_option("--format", o->format, "Force the format: html or md (default: from -o's extension)");
    sub->add_flag("--md", o->md, "Markdown (same as --format md)");
    sub->add_flag("--html", o->html, "HTML (same as --format html)");
    sub->add_flag("--history", o->history,
                  "Instead of RESULT: draw one metric over the result history (rtf history), oldest first, with each "
                  "result's commit; e.g. rtf report --history --metric rtf --machine this --kit ID -o rtf.html");
    sub->add_option("--metric", o->metric, "With --history: the metric (a name rtf history show lists)")->default_str(o->metric);
    sub->add_option("--machine", o->machine, "With --history: machine fingerprint (rtf history list), or 'this'");
    sub->add_option("--kit", o->kit, "With --history: kit identity (rtf history list)");
    sub->add_option("--kind", o->kind, "With --history: bench, speak or tune");
    sub->add_option("--label", o->label, "With --history: bench config label");
    sub->add_option("--history-db", o->db, "With --history: the history file (default $RTF_HISTORY_DB, else ~/.local/share/rtfkit/history.db)");
    sub->callback([&action, o] { action = [o] { return run_report(*o); }; });
}

}  // namespace

RTF_COMMAND(80, add_report_command);

}  // namespace rtf::cli
