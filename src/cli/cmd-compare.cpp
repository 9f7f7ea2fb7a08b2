// rtf compare A.json B.json: per-metric medians, delta and ratio of two `rtf bench --json`
// results; "within noise" below --noise RTF; notes when more than one knob differs or the
// inputs differ; a Mann-Whitney U test when the run counts allow one.
// Exit: 0 compared; 3 when A or B is INVALID (the comparison is not trustworthy);
// 1 usage error (unreadable file, not a bench result).
#include <fstream>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "bench/compare.h"
#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/parse.h"
#include "report/report.h"

namespace rtf::cli {

namespace {

struct CompareOptions {
    std::string a, b;
    std::string noise = "0.03";
    std::string row_a = "0", row_b = "0";
    std::string json_path, md_path;
};

nlohmann::json load(const std::string &path) {
    std::ifstream f(path);
    if (!f) throw_usage("cannot read '" + path + "'");
    try {
        return nlohmann::json::parse(f);
    } catch (const nlohmann::json::exception &e) {
        throw_usage("'" + path + "' is not valid JSON (" + e.what() + ")");
    }
}

int run_compare(const CompareOptions &o) {
    double noise = parse_double(o.noise, "--noise", 0, 100);
    auto ra = static_cast<size_t>(parse_int(o.row_a, "--row-a", 0, 100000));
    auto rb = static_cast<size_t>(parse_int(o.row_b, "--row-b", 0, 100000));
    auto a = bench::select_config(load(o.a), ra, o.a);
    auto b = bench::select_config(load(o.b), rb, o.b);
    auto c = bench::compare_results(a, b, noise, o.a, o.b);
    auto j = bench::to_json(c);
    std::string md = report::comparison_markdown(j);
    if (o.json_path != "-" && o.md_path != "-") std::cout << md;
    if (!o.json_path.empty()) write_json(j, o.json_path);
    if (!o.md_path.empty()) {
        if (o.md_path == "-") {
            std::cout << md;
        } else {
            std::ofstream f(o.md_path);
            if (!f) throw_setup("--md: cannot write " + o.md_path);
            f << md;
        }
    }
    bool invalid = a["verdict"].value("status", "") == "INVALID" || b["verdict"].value("status", "") == "INVALID";
    return invalid ? 3 : 0;
}

}  // namespace

static void add_compare_command(CLI::App &app, Action &action) {
    auto *sub = app.add_subcommand(
        "compare", "Compare two `rtf bench --json` results: per-metric delta and ratio, noise floor, knob "
                   "differences, significance test. Exit 0, or 3 when A or B is INVALID");
    auto o = std::make_shared<CompareOptions>();
    sub->add_option("A", o->a, "Baseline result (rtf bench --json)")->required();
    sub->add_option("B", o->b, "Candidate result")->required();
    sub->add_option("--noise", o->noise, "Noise floor, RTF (absolute): |delta RTF| below it is 'within noise'")
        ->default_str(o->noise);
    sub->add_option("--row-a", o->row_a, "Config row of A to compare (0-based; sweeps have several)")->default_str(o->row_a);
    sub->add_option("--row-b", o->row_b, "Config row of B to compare (0-based)")->default_str(o->row_b);
    sub->add_option("--json", o->json_path, "Write the comparison as JSON to FILE ('-' = stdout)");
    sub->add_option("--md", o->md_path, "Write the comparison as Markdown to FILE");
    // A repeated scalar flag takes its last value (scripts append overrides), as in getopt.
    for (auto *opt : sub->get_options())
        if (opt->get_items_expected_max() == 1 && opt->get_type_size_max() == 1) opt->take_last();
    sub->callback([&action, o] { action = [o] { return run_compare(*o); }; });
}

RTF_COMMAND(55, add_compare_command);

}  // namespace rtf::cli
