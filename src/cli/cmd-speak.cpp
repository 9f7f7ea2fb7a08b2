// rtf speak: one utterance through the speak path (LLM -> TTS -> Token2Wav), streamed to a
// WAV file or stdout, with the live progress line and every metric of docs/metrics.md.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/speak-options.h"
#include "cli/speak-run.h"
#include "core/error.h"
#include "report/report.h"

namespace rtf::cli {

namespace {

struct SpeakCmd {
    SpeakOptions opts;
    SpeakOutputs out;
    std::string html_path;
    bool quiet = false;
};

int run_speak(SpeakCmd &c) {
    auto cfg = make_speak_config(c.opts, /*finalize=*/false);
    c.opts.profile.history_db = c.out.history.db;
    const auto profile = apply_profile(c.opts, cfg);
    speak::finalize(cfg);
    c.out.profile = profile.to_json();
    c.out.profile_line = profile.line();
    c.out.progress = !c.quiet;
    if (c.out.wav_path.empty()) throw_usage("-o/--output: give a WAV path, or '-' for raw PCM on stdout");
    std::ostream &info = c.out.wav_path == "-" || c.out.json_path == "-" ? std::cerr : std::cout;
    if (!c.quiet) info << "loading kit " << cfg.models_dir << " ...\n";
    auto engines = speak::load_engines(cfg);
    cfg = engines->config;
    if (!c.quiet && engines->kit.is_twin) {
        info << "note: this kit is a twin (random weights): its timings are real, its audio is noise\n";
    }
    bool interrupted = false;
    auto r = run_speak_cli(*engines, cfg, c.out, interrupted);
    if (!c.quiet) print_speak_summary(r, c.out, info);
    if (!c.html_path.empty()) {
        report::write_report(speak::to_json(r), c.html_path, report::Format::Html);
        if (!c.quiet) info << "html      " << c.html_path << "\n";
    }
    return interrupted ? 3 : 0;
}

void add_speak_command(CLI::App &app, Action &action) {
    auto c = std::make_shared<SpeakCmd>();
    auto *sub = app.add_subcommand(
        "speak", "Speak one utterance through the speak path (LLM -> TTS -> Token2Wav) and measure it.\n"
                 "Example: rtf speak --models KIT -p \"Tell me a story\" --max-audio-s 10 -o out.wav --json r.json");
    add_speak_options(sub, c->opts);
    sub->add_option("-o,--output", c->out.wav_path,
                    "Output WAV (24 kHz mono, 16-bit; valid even if interrupted); FILE.flac, FILE.opus (or .ogg: "
                    "Ogg/Opus) and FILE.mp3 are encoded as chunks arrive; '-' for raw PCM "
                    "(s16le, 24 kHz mono) on stdout as chunks arrive")
        ->required()->group("output");
    sub->add_option("--json", c->out.json_path, "Write the result (config, metrics, per-chunk records) as JSON "
                                                "to FILE ('-' = stdout)")
        ->group("output");
    sub->add_option("--html", c->html_path, "Write the HTML report (charts, self-contained; as `rtf report`) to FILE")
        ->group("output");
    sub->add_option("--trace", c->out.trace_path, "Write a Chrome trace / Perfetto JSON timeline to FILE")
        ->group("output");
    sub->add_flag("-q,--quiet", c->quiet, "No progress line and no summary")->group("output");
    c->out.history.add_to(sub);
    sub->callback([&action, c] { action = [c] { return run_speak(*c); }; });
}

}  // namespace

RTF_COMMAND(20, add_speak_command);

}  // namespace rtf::cli
