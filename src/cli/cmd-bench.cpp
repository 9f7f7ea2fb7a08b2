// rtf bench: the measurement protocol (docs/method.md §7) around a workload — warm-up, N
// measured runs, median/min/max/MAD, targets, VALID/INVALID verdict and exit code
// (0 all targets met, 2 a target missed, 3 incomplete/invalid, 1 usage/setup error);
// sweeps (each config its own row), A/B interleaving, device duty cycles, leverage table.
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/compare.h"
#include "bench/protocol.h"
#include "cli/cli-util.h"
#include "cli/history-append.h"
#include "cli/profile-select.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/parse.h"
#include "monitor/monitor.h"
#include "profile/clock.h"
#include "profile/trace.h"
#include "report/report.h"

namespace rtf::cli {

namespace {

struct BenchOptions {
    std::string workload;  // empty: speak when --models is given, else simulate
    std::string warmup = "1", runs = "5";
    std::string target_rtf = "1.0", target_first_audio_ms = "off", target_gapless_start_ms = "off", target_starvation = "0";
    std::string noise = "0.03", outlier_z = "3.5";
    std::vector<std::string> set;
    // simulate workload knobs (also reachable through --set KEY=VALUE)
    std::string cost, cost_type, chunks, chunk_ms, schedule, d1, d2, jitter_ms, cpus, clock, fail;
    std::string models;  // speak workload: the kit (knob models=DIR)
    std::vector<std::string> sweep;
    std::vector<std::string> ab;
    std::vector<std::string> floor;
    std::string limits_path;
    HistoryFlags history;
    ProfileFlags profile;  // the speak and duplex workloads start from the machine profile, as rtf speak
    std::string sample_ms = "500";
    std::string duty_compute = "5", duty_memory = "5";
    std::string json_path, md_path, csv_path, trace_path, html_path;
};

double parse_target(const std::string &v, const std::string &what, double max) {
    if (v == "off" || v == "none") return std::nan("");
    return parse_double(v, what, 0, max);
}

void write_text(const std::string &text, const std::string &path, const std::string &what) {
    if (path == "-") {
        std::cout << text;
        return;
    }
    std::ofstream f(path);
    if (!f) throw_setup(what + ": cannot write " + path);
    f << text;
    if (!f) throw_setup(what + ": write failed for " + path);
}

nlohmann::json read_json_file(const std::string &path, const std::string &what) {
    std::ifstream f(path);
    if (!f) throw_usage(what + ": cannot read '" + path + "'");
    try {
        return nlohmann::json::parse(f);
    } catch (const nlohmann::json::exception &e) {
        throw_usage(what + ": '" + path + "' is not valid JSON (" + e.what() + ")");
    }
}

// Floors per stage (RTF) from `rtf limits --json` output.
void floors_from_limits(const std::string &path, std::map<std::string, double> &floors) {
    auto j = read_json_file(path, "--limits");
    if (!j.contains("path") || !j["path"].contains("stages"))
        throw_usage("--limits: '" + path + "' has no path.stages (write it with `rtf limits --models DIR --json FILE`)");
    for (const auto &s : j["path"]["stages"])
        if (s.contains("name") && s["floor_rtf"].is_number() && !floors.count(s["name"]))
            floors[s["name"].get<std::string>()] = s["floor_rtf"].get<double>();
}

int run_bench(const BenchOptions &o) {
    bench::ProtocolConfig pc;
    pc.warmup = static_cast<int>(parse_int(o.warmup, "--warmup", 0, 1000));
    pc.runs = static_cast<int>(parse_int(o.runs, "--runs", 1, 100000));
    pc.targets.rtf = parse_target(o.target_rtf, "--target-rtf", 1e6);
    pc.targets.first_audio_ms = parse_target(o.target_first_audio_ms, "--target-first-audio-ms", 1e9);
    pc.targets.gapless_start_ms = parse_target(o.target_gapless_start_ms, "--target-gapless-start-ms", 1e9);
    pc.targets.starvation = parse_target(o.target_starvation, "--target-starvation", 1e9);
    pc.noise = parse_double(o.noise, "--noise", 0, 100);
    pc.outlier_z = parse_double(o.outlier_z, "--outlier-z", 0.1, 100);
    for (const auto &f : o.floor)
        for (const auto &[s, v] : parse_key_values(f, "--floor")) pc.floors[s] = parse_double(v, "--floor " + s, 0, 1e6);
    if (!o.limits_path.empty()) floors_from_limits(o.limits_path, pc.floors);
    pc.keep_trace = !o.trace_path.empty();
    pc.validate();

    std::string workload = o.workload;
    if (workload.empty()) {
        // --models names a kit: only the speak workload loads one (issue 18.3)
        workload = o.models.empty() ? "simulate" : "speak";
        if (!o.models.empty()) std::cerr << "rtf bench: --models given: workload speak (inferred; --workload to choose)\n";
    }
    const auto &info = bench::find_workload(workload);
    bench::Knobs base;
    auto knob = [&](const char *key, const std::string &v) {
        if (!v.empty()) bench::set_knob(base, key, v);
    };
    knob("cost", o.cost);
    knob("cost-type", o.cost_type);
    knob("chunks", o.chunks);
    knob("chunk-ms", o.chunk_ms);
    knob("schedule", o.schedule);
    knob("d1", o.d1);
    knob("d2", o.d2);
    knob("jitter-ms", o.jitter_ms);
    knob("cpus", o.cpus);
    knob("clock", o.clock);
    knob("fail", o.fail);
    knob("models", o.models);
    for (const auto &s : o.set)
        for (const auto &[k, v] : bench::parse_knob_list(s, "--set")) bench::set_knob(base, k, v);
    // The speak and duplex workloads measure what `rtf speak` / `rtf duplex` run: the machine
    // profile's choices under the user's knobs (--set, config=FILE; --ab and --sweep values go
    // over them per config). A kit of another family gets none (select_machine_profile).
    std::optional<speak::MachineProfile> profile;
    const std::string *kit_knob = bench::knob_value(base, "models");
    if ((workload == "speak" || workload == "duplex") && kit_knob) {
        ProfileFlags f = o.profile;
        f.history_db = o.history.db;
        nlohmann::json applied;
        profile = apply_machine_profile(f, *kit_knob, base, applied, workload == "duplex");
        std::cerr << "rtf bench: profile " << profile->line() << "\n";
    }
    std::vector<bench::Sweep> sweeps;
    for (const auto &s : o.sweep) sweeps.push_back(bench::parse_sweep(s, "--sweep"));
    if (!o.ab.empty() && o.ab.size() != 2) throw_usage("--ab: give exactly two knob sets, e.g. --ab 'd1=1' 'd1=16'");
    if (!o.ab.empty() && !sweeps.empty()) throw_usage("--ab and --sweep cannot be combined: compare two configs or sweep many");

    // Device sampling (docs/method.md §3): 0 turns it off.
    std::unique_ptr<mon::Monitor> monitor;
    nlohmann::json samplers = nullptr;
    double sample_ms = parse_double(o.sample_ms, "--sample-ms", 0, 500);
    if (sample_ms > 0) {
        mon::MonitorConfig mc;
        mc.interval_ms = sample_ms;
        mc.duty.compute_threshold_pct = parse_double(o.duty_compute, "--duty-compute-pct", 0, 99.999);
        mc.duty.memory_threshold_pct = parse_double(o.duty_memory, "--duty-memory-pct", 0, 99.999);
        monitor = std::make_unique<mon::Monitor>(mc, [] { return prof::default_clock().now_ms(); });
        samplers = monitor->sampler_status();
    }

    std::vector<bench::ConfigResult> results;
    nlohmann::json comparison = nullptr;
    std::string mode = "single";
    if (!o.ab.empty()) {
        mode = "ab";
        auto a = bench::parse_knob_list(o.ab[0], "--ab A"), b = bench::parse_knob_list(o.ab[1], "--ab B");
        auto r = bench::run_ab(info, base, a, b, pc, monitor.get());
        results.push_back(std::move(r.a));
        results.push_back(std::move(r.b));
    } else {
        auto configs = bench::expand_sweeps(base, sweeps);
        if (configs.size() > 1) mode = "sweep";
        for (size_t i = 0; i < configs.size(); ++i) {
            if (configs.size() > 1)
                std::cerr << "rtf bench: config " << i + 1 << "/" << configs.size() << ": " << bench::knobs_label(configs[i]) << "\n";
            results.push_back(bench::run_config(info, configs[i], pc, monitor.get()));
        }
    }
    std::vector<const bench::ConfigResult *> ptrs;
    for (const auto &r : results) ptrs.push_back(&r);
    if (mode == "ab") {
        auto c = bench::compare_results(bench::to_json(results[0]), bench::to_json(results[1]), pc.noise);
        comparison = bench::to_json(c);
    }
    auto doc = bench::make_bench_json(info.name, mode, pc, ptrs, comparison, samplers);
    if (profile) doc["profile"] = profile->to_json();

    // The Markdown report (the same as `rtf report` of the JSON) goes to stdout unless an
    // output was sent there ('-').
    if (o.json_path != "-" && o.md_path != "-" && o.csv_path != "-" && o.html_path != "-") std::cout << report::render_markdown(doc);
    if (!o.json_path.empty()) write_json(doc, o.json_path);
    {
        std::string kit = o.models;
        if (kit.empty() && doc.contains("configs") && !doc["configs"].empty() && doc["configs"][0].contains("knobs"))
            kit = doc["configs"][0]["knobs"].value("models", "");
        append_bench_history(o.history, doc, kit);
    }
    if (!o.md_path.empty()) write_text(report::render_markdown(doc), o.md_path, "--md");
    if (!o.csv_path.empty()) write_text(report::render_csv(doc), o.csv_path, "--csv");
    if (!o.html_path.empty()) report::write_report(doc, o.html_path, report::Format::Html);
    if (!o.trace_path.empty()) {
        const nlohmann::json *trace = nullptr;
        for (const auto &r : results)
            if (r.trace.is_object()) trace = &r.trace;
        if (trace) prof::write_trace_file(*trace, o.trace_path);
        else std::cerr << "rtf bench: --trace: the workload produced no trace (virtual clock or no successful run)\n";
    }
    return doc["exit_code"].get<int>();
}

}  // namespace

static void add_bench_command(CLI::App &app, Action &action) {
    auto *sub = app.add_subcommand(
        "bench",
        "Measure a workload under the protocol: warm-up, N runs, median/min/max/MAD, targets, VALID/INVALID "
        "verdict. Exit 0 all targets met, 2 a target missed, 3 incomplete/invalid, 1 usage/setup error");
    auto o = std::make_shared<BenchOptions>();
    std::string names;
    for (const auto &n : bench::workload_names()) names += (names.empty() ? "" : ", ") + n;
    sub->add_option("--workload", o->workload, "What to run: " + names)
        ->default_str("speak when --models is given, else simulate");
    sub->add_option("--models", o->models, "Kit directory for --workload speak (the knob models=DIR; other speak "
                                           "knobs via --set 'text=...;max-audio-s=4;t2w-threads-voc=1')");
    sub->add_option("--warmup", o->warmup, "Warm-up runs before measuring (not counted)")->default_str(o->warmup);
    sub->add_option("--runs", o->runs, "Measured runs per config; fewer than 3 makes the result INVALID (exit 3)")
        ->default_str(o->runs);
    sub->add_option("--target-rtf", o->target_rtf, "Target: median RTF <= this ('off' to disable)")->default_str(o->target_rtf);
    sub->add_option("--target-first-audio-ms", o->target_first_audio_ms,
                    "Target: median first_audio_ms <= this, ms ('off' to disable)")
        ->default_str(o->target_first_audio_ms);
    sub->add_option("--target-gapless-start-ms", o->target_gapless_start_ms,
                    "Target: median gapless_start_ms <= this, ms ('off' to disable): the earliest playback start "
                    "after which no gap follows (first audio plus the buffer its later gaps need)")
        ->default_str(o->target_gapless_start_ms);
    sub->add_option("--target-starvation", o->target_starvation,
                    "Target: median starvation gap count <= this ('off' to disable)")
        ->default_str(o->target_starvation);
    sub->add_option("--noise", o->noise, "Noise floor, RTF (absolute): smaller differences are 'within noise'")
        ->default_str(o->noise);
    sub->add_option("--outlier-z", o->outlier_z, "Outlier threshold on the modified z-score (median/MAD)")
        ->default_str(o->outlier_z);
    sub->add_option("--set", o->set, "Workload knob KEY=VALUE[;KEY=VALUE] (repeatable); e.g. --set 'rtf=0.4' for mock");
    sub->add_option("--cost", o->cost, "simulate: cost per chunk per stage, e.g. llm=100ms,tts=300ms,t2w=300ms");
    sub->add_option("--cost-type", o->cost_type, "simulate: wait or busy (all stages or STAGE=TYPE list)");
    sub->add_option("--chunks", o->chunks, "simulate: chunks per utterance (default 20)");
    sub->add_option("--chunk-ms", o->chunk_ms, "simulate: audio per chunk, ms (default 1000)");
    sub->add_option("--schedule", o->schedule, "simulate: pipelined, lockstep or sequential (default pipelined)");
    sub->add_option("--d1", o->d1, "simulate: depth of queue q1 (llm -> tts), items (default 16)");
    sub->add_option("--d2", o->d2, "simulate: depth of queue q2 (tts -> t2w), items (default 16)");
    sub->add_option("--jitter-ms", o->jitter_ms, "simulate: playback jitter buffer for starvation, ms (default 0)");
    sub->add_option("--cpus", o->cpus, "simulate: bind stages to CPUs, e.g. llm=0,t2w=1");
    sub->add_option("--clock", o->clock, "simulate: real or virtual (default real)");
    sub->add_option("--fail", o->fail, "simulate: force a stage failure STAGE@N (the stage throws on its item N)");
    sub->add_option("--sweep", o->sweep,
                    "Sweep a knob: KEY=V1,V2,... (';' separates values containing commas); repeatable: the "
                    "cartesian product, each config its own row");
    sub->add_option("--ab", o->ab, "A/B comparison, runs interleaved A B A B: two knob sets, e.g. --ab 'd1=1' 'd1=16'")
        ->expected(2);
    sub->add_option("--floor", o->floor,
                    "Stage floors for the leverage table, STAGE=RTF list (seconds of work per second of audio, as "
                    "`rtf limits` prints floor_rtf)");
    sub->add_option("--limits", o->limits_path, "Read stage floors from `rtf limits --models DIR --json FILE` output");
    sub->add_option("--sample-ms", o->sample_ms, "Device sampling interval during measured runs, ms, <= 500; 0 = off")
        ->default_str(o->sample_ms);
    sub->add_option("--duty-compute-pct", o->duty_compute, "Duty cycle: compute threshold, %")->default_str(o->duty_compute);
    sub->add_option("--duty-memory-pct", o->duty_memory, "Duty cycle: memory-traffic threshold, %")->default_str(o->duty_memory);
    o->history.add_to(sub);
    o->profile.add_to(sub);
    sub->add_option("--json", o->json_path, "Write the result (schema rtfkit.bench/1) to FILE ('-' = stdout)");
    sub->add_option("--md", o->md_path, "Write the Markdown report to FILE");
    sub->add_option("--csv", o->csv_path, "Write one CSV row per config to FILE");
    sub->add_option("--html", o->html_path, "Write the HTML report (charts, self-contained; as `rtf report`) to FILE");
    sub->add_option("--trace", o->trace_path,
                    "Write the last measured run's Chrome/Perfetto trace, with device utilisation counters, to FILE");
    // A repeated scalar flag takes its last value (scripts append overrides), as in getopt.
    for (auto *opt : sub->get_options())
        if (opt->get_items_expected_max() == 1 && opt->get_type_size_max() == 1) opt->take_last();
    sub->callback([&action, o] { action = [o] { return run_bench(*o); }; });
}

RTF_COMMAND(50, add_bench_command);

}  // namespace rtf::cli
