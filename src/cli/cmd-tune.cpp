// rtf tune: the loop of docs/method.md as one command (bench/tune.h): candidates top layer first,
// each measured against the current best with interleaved A/B runs, kept only when it
// beats the noise floor with its quality gates passing; writes tuned.json (a knob file
// that speak, demo and bench take with --config) and the report (Markdown, JSON); the result
// is appended to the history (kind "tune"; --no-history to skip).
// Exit: 0 finished (whether or not anything was kept); 1 usage/setup error.
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "tune/tune.h"
#include "bench/speak-workload.h"
#include "bench/workload.h"
#include "cli/cli-util.h"
#include "cli/commands.h"
#include "cli/history-append.h"
#include "cli/profile-select.h"
#include "core/error.h"
#include "core/parse.h"
#include "report/report.h"
#include "speak/kit.h"
#include "speak/knobs.h"

namespace rtf::cli {

namespace {

struct TuneOptions {
    std::string models, workload;
    std::vector<std::string> set, candidates;
    std::string budget = "30m", target_rtf = "0", runs = "5", warmup = "1", noise = "0.03", objective = "rtf",
                objective_noise_ms = "100";
    bool allow_math = false, list_only = false, no_confirm = false;
    std::string out = "tuned.json", json_path, md_path;
    HistoryFlags history;
    ProfileFlags profile;
};

// The speak workload starts from the machine profile, as `rtf speak` does (--profile auto:
// this machine's newest tune row for the kit, else the built-in choices for this CPU), under
// the --set knobs. So a trial measures a change against what the machine runs today, and the
// tune row it leaves in the history (the profile's knobs + the kept changes) is a complete
// configuration: `--profile auto` replaces the built-in choices with it, and loses none.
// Returns the profile (its knobs as applied in `applied`).
speak::MachineProfile start_from_profile(const TuneOptions &o, bench::Knobs &base, nlohmann::json &applied) {
    ProfileFlags f = o.profile;
    f.history_db = o.history.db;
    return apply_machine_profile(f, o.models, base, applied);
}

// "40m", "1.5h", "90s", "500ms" (core/parse.h durations).
double budget_seconds(const std::string &t) { return parse_duration_ms(t, "--budget (e.g. 40m, 1h, 90s)") / 1000.0; }

int run_tune(const TuneOptions &o) {
    tune::TuneConfig tc;
    tc.pc.runs = static_cast<int>(parse_int(o.runs, "--runs", 1, 1000));
    tc.pc.warmup = static_cast<int>(parse_int(o.warmup, "--warmup", 0, 100));
    tc.pc.noise = parse_double(o.noise, "--noise", 0, 100);
    tc.pc.targets.rtf = std::numeric_limits<double>::quiet_NaN();  // a missed target is not a failed trial
    tc.budget_s = budget_seconds(o.budget);
    tc.target_rtf = parse_double(o.target_rtf, "--target-rtf", 0, 1000);
    tc.allow_math = o.allow_math;
    tc.confirm = !o.no_confirm;
    tc.objective = o.objective;
    tc.objective_noise_ms = parse_double(o.objective_noise_ms, "--objective-noise-ms", 0, 1e6);
    tc.validate();

    const std::string workload = !o.workload.empty() ? o.workload : (o.models.empty() ? "" : "speak");
    if (workload.empty()) throw_usage("--models: give a kit (the speak workload), or --workload mock|simulate with --candidate");
    const auto &info = bench::find_workload(workload);
    bench::Knobs base;
    if (!o.models.empty()) bench::set_knob(base, "models", o.models);
    for (const auto &s : o.set)
        for (const auto &[k, v] : bench::parse_knob_list(s, "--set")) bench::set_knob(base, k, v);

    // The speak workload's base is checked before any trial (a missing input or a bad knob is a
    // usage error, not a failed trial each), and its kit's family chooses the candidates.
    std::string family = "minicpmo45";
    if (workload == "speak" && !o.list_only) family = speak::resolve_kit(bench::speak_config(base).models_dir, false).family;
    else if (workload == "speak" && !o.models.empty()) family = speak::resolve_kit(o.models, false).family;
    nlohmann::json profile_knobs = nlohmann::json::object();
    std::optional<speak::MachineProfile> profile;
    if (workload == "speak") profile = start_from_profile(o, base, profile_knobs);
    std::vector<tune::TuneCandidate> cands;
    for (const auto &c : o.candidates) cands.push_back(tune::TuneCandidate::parse(c, "--candidate"));
    if (cands.empty()) {
        if (workload != "speak") throw_usage("--candidate: the " + workload + " workload has no built-in candidates; give some");
        cands = tune::speak_candidates(base, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), family);
    }
    std::cerr << "rtf tune: workload " << workload << (family != "minicpmo45" ? " (family " + family + ")" : std::string()) << ", " << cands.size() << " candidate(s), " << tc.pc.runs
              << " runs per side, objective " << tc.objective << " (noise "
              << (tc.objective == "rtf" ? o.noise : o.objective_noise_ms + " ms") << "), budget " << o.budget
              << (tc.allow_math ? ", math-changing candidates allowed" : "") << "\n";
    if (profile) std::cerr << "rtf tune: starting from the profile " << profile->line() << "\n";
    if (o.list_only) {
        for (const auto &c : cands)
            std::cout << tune::kTuneLayers[c.layer] << "  " << c.label() << "  stage " << (c.stage.empty() ? "all" : c.stage)
                      << (c.changes_math ? "  (changes the math)" : "") << "\n";
        return 0;
    }
    auto r = tune::tune(info, base, cands, tc, [](const std::string &l) { std::cerr << "rtf tune: " << l << "\n"; });
    nlohmann::json doc = tune::to_json(r);
    doc["workload"] = workload;
    if (workload == "speak") doc["family"] = family;
    if (profile) {
        doc["profile"] = profile->to_json();
        doc["profile_knobs"] = profile_knobs;  // the trials' common base, besides --set
    }
    const std::string md = report::tune_markdown(doc);
    if (o.md_path != "-" && o.json_path != "-") std::cout << md;
    if (!o.out.empty()) {
        write_json(tune::tuned_config(r), o.out);
        std::cerr << "rtf tune: wrote " << o.out << " (" << r.changes.size() << " kept change(s); use it with --config)\n";
    }
    if (!o.json_path.empty()) write_json(doc, o.json_path);
    if (!o.md_path.empty()) report::write_report(doc, o.md_path, report::Format::Markdown);
    append_tune_history(o.history, doc, o.models);
    return 0;
}

}  // namespace

static void add_tune_command(CLI::App &app, Action &action) {
    auto *sub = app.add_subcommand(
        "tune", "Tune the speak path by the loop of docs/method.md: candidates from the top layer down (placement, types, "
                "pipeline, runtime), each measured against the current best with interleaved A/B runs and kept only "
                "when it beats the noise floor with the quality gates passing. Writes tuned.json (use with --config)");
    auto o = std::make_shared<TuneOptions>();
    sub->add_option("--models", o->models, "Kit directory (the speak workload)");
    sub->add_option("--workload", o->workload, "speak (default with --models), or mock / simulate with --candidate");
    sub->add_option("--set", o->set, "Starting knobs KEY=VALUE[;KEY=VALUE] (repeatable), e.g. 'text=...;max-audio-s=4'");
    sub->add_option("--candidate", o->candidates,
                    "LAYER:KEY=VALUE[+KEY=VALUE...][:STAGE] (repeatable; replaces the built-in speak candidates; "
                    "+ joins knobs changed in one trial), LAYER = 0-4 or placement|types|pipeline|runtime|operators");
    sub->add_option("--budget", o->budget, "Wall-time budget, e.g. 40m; a trial that would not fit is skipped")->default_str(o->budget);
    sub->add_option("--target-rtf", o->target_rtf, "Stop once the best median RTF is at or below this (0 = no target)")
        ->default_str(o->target_rtf);
    sub->add_option("--runs", o->runs, "Measured runs per side of each A/B trial (>= 3; >= 4 allows a significance test)")
        ->default_str(o->runs);
    sub->add_option("--warmup", o->warmup, "Warm-up runs per side")->default_str(o->warmup);
    sub->add_option("--noise", o->noise, "Noise floor, RTF: a smaller gain is not kept")->default_str(o->noise);
    sub->add_option("--objective", o->objective,
                    "What a trial must improve (lower is better): rtf, gapless_start_ms (the listener's wait before "
                    "playback after which no gap follows: the first-audio levers' measure) or first_audio_ms")
        ->check(CLI::IsMember(tune::tune_objectives()))
        ->default_str(o->objective);
    sub->add_option("--objective-noise-ms", o->objective_noise_ms,
                    "Noise floor of the ms objectives: a smaller gain is not kept")
        ->default_str(o->objective_noise_ms);
    sub->add_flag("--allow-math-changes", o->allow_math,
                  "Also try candidates that change the output (compute/KV types, flow steps): the red-line opt-in");
    sub->add_flag("--no-confirm", o->no_confirm,
                  "Skip the confirmation pair: by default, after the descent the starting knobs and the tuned ones run "
                  "one more interleaved A/B (--runs a side), and the kept changes stand only if it shows them beyond the "
                  "noise (a dozen trials at alpha 0.05 make one lucky pair likely); not confirmed, nothing is kept");
    sub->add_flag("--list", o->list_only, "Print the candidates in the order of their layers and exit");
    sub->add_option("-o,--out", o->out, "tuned.json: the kept changes as a knob file ('' = none)")->default_str(o->out);
    sub->add_option("--json", o->json_path, "Write the tune result (every trial) as JSON ('-' = stdout)");
    sub->add_option("--md", o->md_path, "Write the report as Markdown");
    o->history.add_to(sub);
    o->profile.add_to(sub);
    sub->callback([&action, o] { action = [o] { return run_tune(*o); }; });
}

RTF_COMMAND(58, add_tune_command);

}  // namespace rtf::cli
