// rtf duplex-report: re-analyse a stored duplex run (ours or the reference's perf_report.json)
// with bench/duplex-analysis.h — the five real-time checks and the verdict of docs/minicpmo45.md
// §7.5-§7.6, printed as the Markdown report (report::duplex_markdown), exit 0 pass / 2 fail / 3
// incomplete. An unreadable or malformed file is an incomplete run (3, as the reference analyzer),
// not a usage error: the message names the file. A bad flag is a usage error (1) naming the flag.
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "bench/duplex-analysis.h"
#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/error.h"
#include "report/report.h"

namespace rtf::cli {

namespace {

struct DuplexReportCmd {
    std::string input, json_path, md_path;
    double interval_ms = 0;  // 0 = not given
    bench::DuplexOptions o;
};

int run_duplex_report(DuplexReportCmd &c) {
    bench::validate(c.o);  // a bad flag is exit 1 before the file is looked at
    nlohmann::json input;
    std::string unreadable;
    try {
        input = report::read_result(c.input);  // rtf::Error(Usage) naming the file
    } catch (const Error &e) {
        unreadable = e.what();
        std::cerr << "rtf duplex-report: " << unreadable << "\n";
    }
    bench::DuplexAnalysis a = unreadable.empty() ? bench::analyze_duplex(input, c.o)
                                                 : bench::unreadable_duplex(c.input, unreadable, c.o);
    a.source = c.input;
    const nlohmann::json doc = bench::to_json(a);
    if (!c.json_path.empty()) write_json(doc, c.json_path);
    if (!c.md_path.empty()) report::write_report(doc, c.md_path, report::Format::Markdown);
    if (c.md_path != "-" && c.json_path != "-") std::cout << report::duplex_markdown(doc);
    return bench::exit_code(a.verdict);
}

void add_duplex_report_command(CLI::App &app, Action &action) {
    auto c = std::make_shared<DuplexReportCmd>();
    auto *sub = app.add_subcommand(
        "duplex-report",
        "Analyse a duplex run's result JSON (frames[] + audio_chunks[], e.g. the reference's perf_report.json): "
        "[1] decision latency P95 < interval, [2] first audio P95 < interval, [3] every turn's TTS RTF < 1, "
        "no failed frames, [5] playback gaps; [4] chunk durations as info (the reference analyzer's R3 rules, docs/minicpmo45.md §7.5-§7.6). "
        "Exit 0 pass / 2 fail / 3 incomplete or unreadable.\nExample: rtf duplex-report perf_report.json --md report.md");
    sub->add_option("RESULT", c->input, "Result JSON of a duplex run")->required();
    sub->add_option("--interval-ms", c->interval_ms,
                    "Threshold of [1] and [2], ms (default: meta.stream_interval_ms, else 1000)");
    sub->add_option("--startup-buffer-ms", c->o.startup_buffer_ms,
                    "Playback starts this long after a turn's first audio; added to first audio [2]")
        ->default_val(c->o.startup_buffer_ms);
    sub->add_option("--max-gap-ms", c->o.max_gap_ms, "Largest tolerated playback gap per turn [5]")->default_val(c->o.max_gap_ms);
    sub->add_option("--json", c->json_path, "Write the analysis JSON (schema rtfkit.duplex-report/1) to FILE ('-' = stdout)");
    sub->add_option("--md", c->md_path, "Write the Markdown report to FILE ('-' = stdout instead of the default print)");
    sub->callback([&action, c, sub] {
        if (sub->count("--interval-ms") > 0) c->o.interval_ms = c->interval_ms;
        action = [c] { return run_duplex_report(*c); };
    });
}

}  // namespace

RTF_COMMAND(82, add_duplex_report_command);

}  // namespace rtf::cli
