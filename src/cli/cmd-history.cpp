// rtf history list|show|export|check: the result history (src/history/history.h) that
// `rtf bench`, `rtf speak` and `rtf demo` append to.
//   list    one line per result (filters: --kind, --machine, --kit, --label, --knob, --metric)
//   show    one result: its identity, knobs and metrics (--json: the whole stored result)
//   export  the filtered rows as CSV (one column per metric) or JSON
//   check   the latest result like the baseline (same machine, kit and kind; --candidate
//           to choose) against the baseline on --metric: exit 2 on a regression beyond
//           --noise (and significant when both sides have >= 3 runs), else 0 — a CI gate.
// Exit: 0 ok, 1 usage/setup (unknown id, no comparable result, unreadable db), 2 regression.
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/format.h"
#include "core/parse.h"
#include "history/history.h"

namespace rtf::cli {

namespace {

struct HistoryOptions {
    std::string db;
    std::string kind, machine, kit, label, knob, metric;
    std::string limit = "0";
    std::string id;                       // show
    std::string format = "csv", out;      // export
    std::string baseline, candidate;      // check
    std::string check_metric = "rtf", noise = "0.03";
    bool json = false;
};

history::Filter filter_of(const HistoryOptions &o) {
    history::Filter f;
    f.kind = o.kind;
    f.machine_id = o.machine;
    f.kit_id = o.kit;
    f.label = o.label;
    f.knob = o.knob;
    f.metric = o.metric;
    f.limit = parse_int(o.limit, "--limit", 0, 1LL << 40);
    return f;
}

std::string db_path(const HistoryOptions &o) { return o.db.empty() ? history::History::default_path() : o.db; }

nlohmann::json entry_json(const history::Entry &e) {
    return {{"id", e.id},           {"created", e.created}, {"kind", e.kind},         {"label", e.label},
            {"workload", e.workload}, {"rtfkit", e.rtfkit}, {"llama_cpp", e.llama_cpp}, {"machine_id", e.machine_id},
            {"kit_id", e.kit_id},   {"kit", e.kit},         {"knobs", e.knobs},       {"metrics", e.metrics},
            {"runs", e.runs}};
}

std::string metric_text(const history::Entry &e, const std::string &m, int decimals) {
    return e.metrics.contains(m) && e.metrics[m].is_number() ? fmt(e.metrics[m].get<double>(), decimals) : "-";
}

int run_list(const HistoryOptions &o) {
    history::History h(db_path(o));
    auto rows = h.list(filter_of(o));
    if (o.json) {
        nlohmann::json a = nlohmann::json::array();
        for (const auto &e : rows) a.push_back(entry_json(e));
        std::cout << a.dump(2) << "\n";
        return 0;
    }
    std::cout << "history " << h.path() << ": " << rows.size() << " result(s)\n";
    std::cout << "  id  created               kind   workload  label             machine           kit               rtf     first_ms  rtfkit\n";
    for (const auto &e : rows) {
        std::printf("%4lld  %-20s  %-5s  %-8s  %-16s  %-16s  %-16s  %-6s  %-8s  %s\n", static_cast<long long>(e.id),
                    e.created.c_str(), e.kind.c_str(), e.workload.c_str(), e.label.substr(0, 16).c_str(), e.machine_id.c_str(),
                    e.kit_id.empty() ? "-" : e.kit_id.c_str(), metric_text(e, "rtf", 3).c_str(),
                    metric_text(e, "first_audio_ms", 0).c_str(), e.rtfkit.c_str());
    }
    std::cout.flush();
    return 0;
}

int64_t parse_id(const std::string &s, const char *what) { return parse_int(s, what, 1, 1LL << 62); }

int run_show(const HistoryOptions &o) {
    history::History h(db_path(o));
    const int64_t id = parse_id(o.id, "ID");
    auto e = h.get(id);
    if (!e) throw_usage("history " + h.path() + ": no result #" + std::to_string(id) + " (see `rtf history list`)");
    if (o.json) {
        nlohmann::json j = entry_json(*e);
        j["machine"] = e->machine;
        j["result"] = h.result(id);
        std::cout << j.dump(2) << "\n";
        return 0;
    }
    std::cout << "result #" << e->id << "  " << e->created << "  " << e->kind << " " << e->workload
              << (e->label.empty() ? "" : "  label " + e->label) << "\n"
              << "rtfkit    " << e->rtfkit << "   llama.cpp " << e->llama_cpp << "\n"
              << "machine   " << e->machine_id << "  " << e->machine.value("cpu", nlohmann::json::object()).value("cpu_model", "")
              << "\n"
              << "kit       " << (e->kit_id.empty() ? "-" : e->kit_id) << "  "
              << (e->kit.is_object() ? e->kit.value("dir", "") : "") << "\n"
              << "knobs     " << e->knobs.dump() << "\n";
    for (auto it = e->metrics.begin(); it != e->metrics.end(); ++it) {
        const auto n = e->runs.contains(it.key()) ? e->runs[it.key()].size() : 0;
        std::cout << "  " << it.key() << " " << fmt(it.value().get<double>(), 4) << (n > 1 ? "  (median of " + std::to_string(n) + ")" : "")
                  << "\n";
    }
    return 0;
}

std::string csv_field(const std::string &s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

int run_export(const HistoryOptions &o) {
    history::History h(db_path(o));
    auto rows = h.list(filter_of(o));
    std::string text;
    if (o.format == "json") {
        nlohmann::json a = nlohmann::json::array();
        for (const auto &e : rows) a.push_back(entry_json(e));
        text = a.dump(2) + "\n";
    } else if (o.format == "csv") {
        std::set<std::string> metrics;
        for (const auto &e : rows)
            for (auto it = e.metrics.begin(); it != e.metrics.end(); ++it) metrics.insert(it.key());
        text = "id,created,kind,workload,label,machine_id,kit_id,rtfkit,llama_cpp,knobs";
        for (const auto &m : metrics) text += "," + csv_field(m);
        text += "\n";
        for (const auto &e : rows) {
            text += std::to_string(e.id) + "," + csv_field(e.created) + "," + csv_field(e.kind) + "," + csv_field(e.workload) +
                    "," + csv_field(e.label) + "," + e.machine_id + "," + e.kit_id + "," + csv_field(e.rtfkit) + "," +
                    csv_field(e.llama_cpp) + "," + csv_field(e.knobs.dump());
            for (const auto &m : metrics) {
                text += ",";
                if (e.metrics.contains(m)) text += e.metrics[m].dump();
            }
            text += "\n";
        }
    } else {
        throw_usage("--format: '" + o.format + "' is not allowed; use csv or json");
    }
    if (o.out.empty() || o.out == "-") {
        std::cout << text;
    } else {
        std::ofstream f(o.out);
        if (!f || !(f << text)) throw_setup("-o: cannot write " + o.out);
    }
    return 0;
}

history::Entry resolve(const history::History &h, const std::string &ref, const char *what) {
    // REF: a result id, or a label (its newest result)
    bool numeric = !ref.empty() && ref.find_first_not_of("0123456789") == std::string::npos;
    if (numeric) {
        auto e = h.get(parse_id(ref, what));
        if (!e) throw_usage(std::string(what) + ": no result #" + ref + " in " + h.path());
        return *e;
    }
    history::Filter f;
    f.label = ref;
    auto rows = h.list(f);
    if (rows.empty()) throw_usage(std::string(what) + ": no result labelled '" + ref + "' in " + h.path());
    return rows.back();
}

int run_check(const HistoryOptions &o) {
    if (o.baseline.empty()) throw_usage("--baseline: give a result id or label (see `rtf history list`)");
    history::History h(db_path(o));
    const history::Entry base = resolve(h, o.baseline, "--baseline");
    history::Entry cand;
    if (!o.candidate.empty()) {
        cand = resolve(h, o.candidate, "--candidate");
    } else {
        history::Filter f;
        f.machine_id = base.machine_id;
        f.kit_id = base.kit_id;
        f.kind = base.kind;
        f.workload = base.workload;
        auto rows = h.list(f);
        if (rows.empty()) throw_usage("history: no result like #" + std::to_string(base.id));
        cand = rows.back();
        if (cand.id == base.id) std::cerr << "rtf history check: the latest comparable result is the baseline itself\n";
    }
    if (cand.machine_id != base.machine_id) std::cerr << "rtf history check: warning: the two results come from different machines\n";
    if (cand.kit_id != base.kit_id) std::cerr << "rtf history check: warning: the two results used different kits\n";
    const double noise = parse_double(o.noise, "--noise", 0, 1e12);
    auto c = history::check_regression(base, cand, o.check_metric, noise);
    if (o.json) {
        std::cout << nlohmann::json{{"metric", c.metric},         {"baseline_id", base.id}, {"candidate_id", cand.id},
                                    {"baseline", c.baseline},     {"candidate", c.candidate}, {"delta", c.delta},
                                    {"noise", c.noise},           {"regression", c.regression},
                                    {"improvement", c.improvement}, {"significance", c.significance}, {"verdict", c.verdict}}
                         .dump(2)
                  << "\n";
    } else {
        std::cout << c.verdict << "\n  " << c.significance << "\n";
    }
    return c.regression ? 2 : 0;
}

}  // namespace

static void add_history_command(CLI::App &app, Action &action) {
    auto *sub = app.add_subcommand("history", "The result history (SQLite) that bench, speak and demo append to: list, show, "
                                              "export, and check the latest result against a baseline (exit 2 on a regression)");
    sub->require_subcommand(1);
    auto o = std::make_shared<HistoryOptions>();
    auto add_db = [o](CLI::App *s) {
        // The same name as bench / speak / demo / report --history use; --db is the older spelling.
        s->add_option("--history-db,--db", o->db,
                      "History file, as --history-db on bench/speak/demo (--db: the same; default $RTF_HISTORY_DB, else "
                      "~/.local/share/rtfkit/history.db)");
    };
    auto add_filters = [o](CLI::App *s) {
        s->add_option("--kind", o->kind, "bench or speak");
        s->add_option("--machine", o->machine, "Machine fingerprint (the list's 'machine' column)");
        s->add_option("--kit", o->kit, "Kit identity (the list's 'kit' column)");
        s->add_option("--label", o->label, "Bench config label");
        s->add_option("--knob", o->knob, "NAME=VALUE: only results run with this knob value");
        s->add_option("--metric", o->metric, "Only results that have this metric (e.g. rtf, first_audio_ms)");
        s->add_option("--limit", o->limit, "Only the newest N (0 = all)")->default_str("0");
    };
    auto *list = sub->add_subcommand("list", "One line per result, oldest first");
    add_db(list);
    add_filters(list);
    list->add_flag("--json", o->json, "The rows as JSON");
    list->callback([&action, o] { action = [o] { return run_list(*o); }; });

    auto *show = sub->add_subcommand("show", "One result: identity, knobs, metrics");
    add_db(show);
    show->add_option("ID", o->id, "Result id (from `rtf history list`)")->required();
    show->add_flag("--json", o->json, "Everything stored, the whole result included");
    show->callback([&action, o] { action = [o] { return run_show(*o); }; });

    auto *exp = sub->add_subcommand("export", "The filtered results as CSV (a column per metric) or JSON");
    add_db(exp);
    add_filters(exp);
    exp->add_option("--format", o->format, "csv or json")->default_str("csv");
    exp->add_option("-o,--out", o->out, "Output file ('-' or none = stdout)");
    exp->callback([&action, o] { action = [o] { return run_export(*o); }; });

    auto *chk = sub->add_subcommand("check", "Latest comparable result (same machine, kit, kind, workload) vs a baseline: "
                                             "exit 2 on a regression beyond --noise");
    add_db(chk);
    chk->add_option("--baseline", o->baseline, "Baseline: result id or label (its newest result)")->required();
    chk->add_option("--candidate", o->candidate, "Candidate id or label (default: the latest comparable result)");
    chk->add_option("--metric", o->check_metric, "Metric to compare (lower is better for rtf*, *_ms, starvation*)")
        ->default_str("rtf");
    chk->add_option("--noise", o->noise, "Noise floor in the metric's unit: a change below it is not a regression")
        ->default_str("0.03");
    chk->add_flag("--json", o->json, "The verdict as JSON");
    chk->callback([&action, o] { action = [o] { return run_check(*o); }; });
}

RTF_COMMAND(85, add_history_command);

}  // namespace rtf::cli
