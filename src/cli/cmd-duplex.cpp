// rtf duplex: a duplex session on a kit (speak/duplex.h) — 1 s frames of a recording pushed on
// a fixed cadence through the audio encoder, the LLM's listen/speak turn, the duplex TTS and
// Token2Wav — then the duplex analyzer (bench/duplex-analysis.h) on the recorded timeline:
// the five checks and the verdict. Exit 0 pass, 2 fail, 3 incomplete (a stage failed, the run
// was cancelled, or the analyzer could not judge it), 1 usage/setup (a missing input is named).
//
// Test hooks (environment, for the e2e tests): RTF_DUPLEX_TEST_FAIL=STAGE:FRAME makes a stage
// throw at that frame; RTF_DUPLEX_TEST_DELAY=STAGE:MS makes it sleep that long per frame.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "bench/duplex-analysis.h"
#include "cli/cli-util.h"
#include "cli/commands.h"
#include "cli/profile-select.h"
#include "core/cpu-features.h"
#include "core/error.h"
#include "core/format.h"
#include "core/parse.h"
#include "machine/provenance.h"
#include "pipeline/cancel.h"
#include "report/report.h"
#include "speak/duplex-knobs.h"
#include "speak/duplex.h"

namespace rtf::cli {

namespace {

struct DuplexCmd {
    speak::DuplexConfig cfg;
    std::string json_path, html_path, md_path;
    bool quiet = false;
    bool twin_text_rate_given = false;  // --twin-text-rate on the command line (a real kit says it ignores it)
    ProfileFlags profile;               // --profile (profile-select.h): the machine profile under the flags
    speak::MachineProfile applied_profile;
    std::set<std::string> given;        // knobs given on the command line (the profile leaves them)
};

// "STAGE:VALUE" of a test hook variable.
std::pair<std::string, std::string> hook_env(const char *var) {
    const char *v = std::getenv(var);
    if (!v || !*v) return {};
    const std::string s = v;
    const auto c = s.find(':');
    if (c == std::string::npos) throw_usage(std::string(var) + "='" + s + "': use STAGE:VALUE, e.g. llm:5");
    return {s.substr(0, c), s.substr(c + 1)};
}

void print_frame(const nlohmann::json &f) {
    const bool ok = f["ok"].get<bool>();
    std::printf("frame %3d  push %9.1f  done %9.1f  total %7.1f ms  apm %6.1f  prefill %6.1f  decode %7.1f ms  %-6s%s",
                f["frame_id"].get<int>(), f["t_push_ms"].get<double>(), f["t_done_ms"].get<double>(),
                f["ms_total"].get<double>(), f["apm_ms"].get<double>(), f["llm_prefill_ms"].get<double>(),
                f["ms_decode"].get<double>(), !ok ? "FAILED" : f["is_speak"].get<bool>() ? "SPEAK" : "listen",
                f["forced"].get<bool>() ? " (forced)" : f["force_listen"].get<bool>() ? " (force_listen)" : "");
    if (ok && f["is_speak"].get<bool>())
        std::printf("  %d tokens, end %s%s", f["n_text_tokens"].get<int>(), f["end"].get<std::string>().c_str(),
                    f["end_of_turn"].get<bool>() ? ", end of turn" : "");
    std::printf("  n_past %d", f["n_past_after"].get<int>());
    if (f.value("n_discarded", 0) > 0) std::printf(" (context slid: %d dropped)", f["n_discarded"].get<int>());
    std::printf("\n");
}

int run_duplex_cmd(DuplexCmd &c) {
    auto &cfg = c.cfg;
    if (c.json_path == "-" || c.md_path == "-") c.quiet = true;  // stdout carries the document alone
    if (auto [st, v] = hook_env("RTF_DUPLEX_TEST_FAIL"); !st.empty()) {
        cfg.fail_stage = st;
        cfg.fail_frame = static_cast<int>(parse_int(v, "RTF_DUPLEX_TEST_FAIL frame", 0, 1000000));
    }
    if (auto [st, v] = hook_env("RTF_DUPLEX_TEST_DELAY"); !st.empty()) {
        cfg.delay_stage = st;
        cfg.delay_ms = parse_duration_ms(v, "RTF_DUPLEX_TEST_DELAY");
    }
    // The machine profile: its choices that are duplex knobs, under the user's flags.
    {
        const auto mode = speak::parse_profile_mode(c.profile.mode);
        std::optional<speak::TunedRow> tuned;
        if (mode == speak::ProfileMode::automatic) tuned = find_tuned_row(c.profile.history_db, cfg.models_dir);
        c.applied_profile = speak::select_profile(mode, cpu_features(), tuned);
        speak::apply_profile(cfg, c.applied_profile, c.given);
    }
    cfg.validate();
    bench::DuplexOptions opt;
    opt.interval_ms = cfg.interval_ms;
    opt.startup_buffer_ms = cfg.startup_buffer_ms;
    opt.max_gap_ms = cfg.max_gap_ms;
    bench::validate(opt);
    cfg.finalize();

    // Input first: a missing recording is named before any model is loaded.
    const apm::AudioInput audio = apm::load_audio_16k(cfg.input);
    int n_silence = 0;
    const auto frames = speak::input_frames(cfg, audio, &n_silence);
    if (!cfg.speak_frames.empty()) {
        auto r = speak::parse_frame_ranges(cfg.speak_frames, "speak-frames");
        if (r.back().last >= static_cast<int>(frames.size()))
            throw_usage("--speak-frames '" + cfg.speak_frames + "': frame " + std::to_string(r.back().last) +
                        " is past the last frame (" + std::to_string(frames.size()) + " frames: give --frames N)");
    }
    if (!c.quiet) {
        std::printf("duplex: %s (%d Hz, %d ch, %.2f s) -> %zu frames of %d ms, one every %.0f ms\n", audio.path.c_str(),
                    audio.source_rate, audio.source_channels, audio.seconds(), frames.size(), cfg.frame_ms, cfg.interval_ms);
        if (n_silence > 0)
            std::printf("note: the recording holds %zu frame(s); the last %d of the %zu pushed are silence\n",
                        frames.size() - static_cast<size_t>(n_silence), n_silence, frames.size());
    }
    auto engines = speak::load_duplex_engines(cfg);
    cfg = engines->config;  // with the kit's paths and a twin's text cap
    if (!c.quiet) {
        std::printf("profile %s\n", c.applied_profile.line().c_str());
        std::printf("kit %s%s; threads %d per stage; queues encoder %d, prefill %d, llm->tts %d, tts->t2w %d; load %.0f ms\n",
                    cfg.models_dir.c_str(), engines->kit.is_twin ? " (twin: random weights)" : "", cfg.threads,
                    cfg.encoder_queue_cap, cfg.prefill_queue_cap, cfg.tts_queue_cap, cfg.t2w_queue_cap,
                    engines->load_ms_apm + engines->load_ms_llm + engines->load_ms_tts + engines->load_ms_t2w);
        if (!cfg.speak_frames.empty())
            std::printf("decision: FORCED by --speak-frames %s (speak in those frames, listen in the others; the "
                        "model's own decision is not used)\n",
                        cfg.speak_frames.c_str());
        else if (engines->kit.is_twin)
            std::printf("decision: sampled — on a twin it is noise (random weights); --speak-frames gives a schedule\n");
        else
            std::printf("decision: sampled (the model's own)\n");
        const int cap = engines->llm->config().text_cap;
        if (engines->kit.is_twin && cap > 0)
            std::printf("text: twin cap %d text tokens per sampled speak frame (--twin-text-rate %s/s of audio x %d ms "
                        "frames; a random LLM writes all %d; 0 = uncapped)%s\n",
                        cap, fmt(cfg.twin_text_rate, 1).c_str(), cfg.frame_ms, cfg.llm.max_speak_tokens,
                        cfg.speak_frames.empty()
                            ? ""
                            : ("; forced frames: --speak-tokens " + std::to_string(cfg.llm.forced_speak_tokens)).c_str());
        else if (engines->kit.is_twin)
            std::printf("text: uncapped (--twin-text-rate 0): a sampled speak frame writes up to %d text tokens\n",
                        cfg.llm.max_speak_tokens);
        else if (c.twin_text_rate_given)
            std::printf("note: --twin-text-rate ignored: real model files end their own speak units\n");
        const auto &tk = engines->llm->tokens();
        if (!tk.unit_special())
            std::printf("note: the LLM vocabulary has no single <unit> / </unit> token: a frame opens with the %zu "
                        "tokens of \"<unit>\" and closes with the %zu of \"</unit>\"\n",
                        tk.unit_open.size(), tk.unit_close.size());
    }

    pipe::CancelToken cancel;
    pipe::SigintGuard guard(cancel);
    cfg.cancel = &cancel;
    speak::DuplexResult r = speak::run_duplex(*engines, cfg, frames);
    nlohmann::json doc = speak::to_json(r);
    doc["created"] = utc_timestamp();
    doc["machine"] = machine_json();
    doc["profile"] = c.applied_profile.to_json();
    doc["versions"] = versions_json();

    bench::DuplexAnalysis a = bench::analyze_duplex(doc, opt);
    a.source = c.json_path.empty() ? "rtf duplex" : c.json_path;
    nlohmann::json analysis = bench::to_json(a);
    const int code = r.completed ? bench::exit_code(a.verdict) : 3;
    analysis["exit_code"] = code;
    doc["analysis"] = analysis;

    if (!c.quiet) {
        for (const auto &f : doc["frames"]) print_frame(f);
        std::printf("%zu audio chunks, %d TTS calls; session %.0f ms; stage busy:", doc["audio_chunks"].size(), r.tts_calls,
                    r.session_ms);
        for (const auto &s : doc["stages"])
            std::printf(" %s %.0f ms (%.0f%%)", s["name"].get<std::string>().c_str(), s["busy_ms"].get<double>(),
                        100.0 * s["utilization"].get<double>());
        std::printf("; binding stage: %s\n", r.busy_ms.empty() ? "n/a" : speak::binding_stage(r).c_str());
        std::cout << report::duplex_markdown(analysis);
        if (!r.completed)
            std::printf("INCOMPLETE: %s%s\n", r.error.c_str(),
                        r.failed_stage.empty() ? "" : (" (stage " + r.failed_stage + ")").c_str());
    }
    if (!c.json_path.empty()) write_json(doc, c.json_path);
    if (!c.md_path.empty()) report::write_report(analysis, c.md_path, report::Format::Markdown);
    if (!c.html_path.empty()) report::write_report(doc, c.html_path, report::Format::Html);
    if (!r.completed && c.quiet) std::cerr << "rtf duplex: incomplete: " << r.error << "\n";
    return code;
}

void add_duplex_command(CLI::App &app, Action &action) {
    auto c = std::make_shared<DuplexCmd>();
    auto &cfg = c->cfg;
    auto *sub = app.add_subcommand(
        "duplex",
        "Run a duplex session (listen while speaking): the recording's 1 s frames are pushed every --interval on "
        "absolute deadlines through the audio encoder (queue cap 16), the LLM's duplex turn (prefill, listen/speak "
        "decision, <= 26 text tokens; on a twin kit capped at --twin-text-rate), the duplex TTS (variant D, 26 codes per call) and Token2Wav, each stage on its "
        "own thread. Then the duplex analyzer: [1] decision latency P95 < interval, [2] first audio P95 < interval, "
        "[3] every turn's TTS RTF < 1, no failed frames, [5] playback gaps ([4] chunk durations as info). "
        "Exit 0 pass / 2 fail / 3 incomplete (a stage failed: the JSON holds the partial timeline) / 1 usage.\n"
        "On a twin kit the decision is noise: --speak-frames 4-12,20-28 forces it (and the output says so).\n"
        "Example: rtf duplex --models kit --input speech.wav --frames 30 --speak-frames 4-12,20-28 --json r.json");
    // The session's knobs come from the duplex knob table (speak/duplex-knobs.h), also the
    // bench duplex workload's: one name, one parser, aliases for the older spellings.
    for (const auto &k : speak::duplex_knob_table()) {
        std::string names = "--" + k.name;
        for (const auto &a : k.aliases) names += ",--" + a;
        std::string help = k.help;
        if (!k.allowed.empty()) {
            std::string list;
            for (const auto &v : k.allowed) list += (list.empty() ? "" : ", ") + v;
            help += " (" + list + ")";
        }
        if (!k.unit.empty()) help += " [" + k.unit + "]";
        if (k.changes_math) help += " (changes the output, not only its speed)";
        const std::string name = k.name;
        auto *opt = sub->add_option_function<std::string>(
            names,
            [c, name](const std::string &v) {
                speak::apply_duplex_knob(c->cfg, name, v);
                if (name == "twin-text-rate") c->twin_text_rate_given = true;
                c->given.insert(name);
            },
            help);
        opt->type_name(!k.allowed.empty() ? [&] {
            std::string t;
            for (const auto &v : k.allowed) t += (t.empty() ? "" : "|") + v;
            return t;
        }() : k.unit.empty() ? "TEXT" : "NUM");
        if (k.required) opt->required();
        else if (const std::string d = k.get(cfg); !d.empty()) opt->default_str(d);
    }
    c->profile.add_to(sub);
    sub->add_option("--json", c->json_path,
                    "Write the result to FILE ('-' = stdout): meta, frames[], audio_chunks[] (the analyzer's input, "
                    "docs/minicpmo45.md §7.4), stages, and the analysis (schema rtfkit.duplex-report/1)");
    sub->add_option("--md", c->md_path, "Write the analysis as Markdown to FILE ('-' = stdout)");
    sub->add_option("--html", c->html_path, "Write the HTML report to FILE");
    sub->add_flag("--quiet,-q", c->quiet, "No per-frame lines and no report on stdout (the exit code still says the verdict)");
    sub->callback([&action, c] { action = [c] { return run_duplex_cmd(*c); }; });
}

}  // namespace

RTF_COMMAND(81, add_duplex_command);

}  // namespace rtf::cli
