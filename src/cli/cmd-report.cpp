// rtf report: render a result JSON (rtf speak / simulate / bench --json) as one
// self-contained HTML page with charts, or as Markdown. The JSON is the source of truth;
// a stored result can be rendered again at any time.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "report/report.h"

namespace rtf::cli {

namespace {

struct ReportOptions {
    std::string input, output, format;
};

int run_report(const ReportOptions &o) {
    report::Format f = !o.format.empty()                      ? report::parse_format(o.format)
                       : o.output.empty() || o.output == "-" ? report::Format::Markdown
                                                              : report::format_for_path(o.output);
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
        "report", "Render a result JSON (rtf speak/simulate/bench/tune --json; tune renders as Markdown only) as a self-contained HTML page with charts "
                  "or as Markdown.\nExample: rtf report bench.json -o report.html");
    sub->add_option("RESULT", o->input, "Result JSON written by rtf speak, rtf simulate or rtf bench with --json")
        ->required();
    sub->add_option("-o,--output", o->output,
                    "Output file; the format follows its extension (.html/.htm or .md). Default: Markdown on stdout");
    sub->add_option("--format", o->format, "Force the format: html or md (default: from -o's extension)");
    sub->callback([&action, o] { action = [o] { return run_report(*o); }; });
}

}  // namespace

RTF_COMMAND(80, add_report_command);

}  // namespace rtf::cli
