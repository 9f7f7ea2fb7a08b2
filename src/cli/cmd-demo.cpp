// rtf demo: the main job on a fresh machine. Makes (once, cached) a `cpu`-scale twin kit of
// MiniCPM-o 4.5's speak path, speaks a built-in paragraph through the full pipeline and
// prints the summary with the bottleneck named.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/speak-options.h"
#include "cli/speak-run.h"
#include "core/error.h"
#include "twin/twin.h"

namespace rtf::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char *kParagraph =
    "Real time means the listener never waits. Each second of speech must be made in less than a "
    "second, chunk after chunk, while the model is still thinking about what to say next.";

struct DemoCmd {
    SpeakOptions opts;
    std::string scale = "cpu";
    std::string family = "minicpmo45";
    std::string kit_dir;
    std::string out_dir = "rtf-demo";
    bool quiet = false;
    HistoryFlags history;
};

std::string default_kit_dir(const std::string &family, const std::string &scale) {
    std::string base;
    if (const char *c = std::getenv("RTF_CACHE_DIR"); c && *c) {
        base = c;
    } else if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) {
        base = std::string(x) + "/rtfkit";
    } else if (const char *h = std::getenv("HOME"); h && *h) {
        base = std::string(h) + "/.cache/rtfkit";
    } else {
        base = ".rtf-cache";
    }
    return base + "/kits/" + family + "-" + scale + "-f16-seed0";
}

// Generates the twin kit unless a complete one (rtf-kit.json written last) is there.
void ensure_kit(const std::string &dir, const std::string &family, const std::string &scale_name, bool quiet) {
    if (fs::is_regular_file(fs::path(dir) / "rtf-kit.json")) return;
    twin::KitOptions o;
    o.family = family;
    o.scale = gguf::minicpmo45::parse_scale(scale_name, "--scale");
    o.dims = gguf::minicpmo45::dims_for_scale(o.scale);
    o.pocket = gguf::pockettts::dims_for_scale(o.scale);
    o.qwen3 = gguf::qwen3tts::dims_for_scale(o.scale);
    if (family != "minicpmo45") o.roles.assign(gguf::mtmd_family_roles.begin(), gguf::mtmd_family_roles.end());
    o.out_dir = dir;
    std::cout << "making a " << scale_name << "-scale twin kit of "
              << (family == "minicpmo45" ? std::string("MiniCPM-o 4.5") : family) << " in " << dir
              << " (once; later runs reuse it)\n";
    if (!quiet) {
        o.progress = [last = std::string()](const std::string &file, uint64_t done, uint64_t total) mutable {
            if (total == 0) return;
            std::fprintf(stderr, "\r  %-48s %5.1f%%  %7.1f MiB", file.c_str(), 100.0 * done / total, total / 1048576.0);
            if (done >= total) std::fprintf(stderr, "\n");
        };
    }
    fs::create_directories(dir);
    twin::make_kit(o);
}

int run_demo(DemoCmd &d) {
    speak::SpeakConfig cfg = make_speak_config(d.opts, /*finalize=*/false);
    speak::parse_profile_mode(d.opts.profile.mode);  // a bad --profile before minutes of kit making
    std::string kit = !cfg.models_dir.empty() ? cfg.models_dir
                      : (!d.kit_dir.empty() ? d.kit_dir : default_kit_dir(d.family, d.scale));
    if (cfg.models_dir.empty()) ensure_kit(kit, d.family, d.scale, d.quiet);
    cfg.models_dir = kit;
    d.opts.profile.history_db = d.history.db;
    const auto profile = apply_profile(d.opts, cfg);
    if (cfg.prompt.empty() && cfg.text.empty()) cfg.text = kParagraph;
    // The demo's minimum follows a smaller --max-audio-s (both default to 6 s).
    if (cfg.max_audio_s > 0 && cfg.min_audio_s > cfg.max_audio_s) speak::apply_knob(cfg, "min-audio-s", speak::find_knob("max-audio-s")->get(cfg));
    speak::finalize(cfg);
    fs::create_directories(d.out_dir);
    SpeakOutputs out;
    out.wav_path = (fs::path(d.out_dir) / "demo.wav").string();
    out.json_path = (fs::path(d.out_dir) / "demo.json").string();
    out.trace_path = (fs::path(d.out_dir) / "demo.trace.json").string();
    out.progress = !d.quiet;
    out.history = d.history;
    out.profile = profile.to_json();
    out.profile_line = profile.line();

    std::cout << "loading kit " << kit << " ...\n";
    auto engines = speak::load_engines(cfg);
    cfg = engines->config;  // the twin's EOS mask, printed below
    std::cout << "speaking " << (cfg.text.empty() ? "the LLM's answer to: " + cfg.prompt : "\"" + cfg.text + "\"")
              << "\n  schedule " << pipe::to_string(cfg.pipeline.schedule) << ", audio cap " << cfg.max_audio_s
              << (engines->family ? std::string(" s (a fixed work size)\n")
                                  : " s (EOS masked until " + std::to_string(cfg.min_audio_s).substr(0, 4) + " s: a fixed work size)\n");
    bool interrupted = false;
    auto r = run_speak_cli(*engines, cfg, out, interrupted);
    print_speak_summary(r, out, std::cout);
    if (engines->kit.is_twin && engines->family) {
        std::cout << "\nThis kit is a twin of " << engines->kit.family << ": real tensor layout, random weights, its own\n"
                     "vocabulary. Its timings are real; its audio is noise. Real files: convert the model with the\n"
                     "pinned llama.cpp's convert_hf_to_gguf.py (the backbone and its mmproj-*.gguf in one\n"
                     "directory) and run:  rtf speak --models DIR --text \"Hello\" -o out.wav\n";
    } else if (engines->kit.is_twin) {
        std::cout << "\nThis kit is a twin: real tensor layout, random weights. Its timings are real; its audio is\n"
                     "noise. For real speech put MiniCPM-o 4.5's GGUF files in one directory (README \"Real model\n"
                     "files\") and run:  rtf speak --models DIR -p \"Hello\" -o out.wav   (or rtf demo --models DIR)\n";
    }
    return interrupted ? 3 : 0;
}

void add_demo_command(CLI::App &app, Action &action) {
    auto d = std::make_shared<DemoCmd>();
    // A fixed work size: exactly 6 s of audio (EOS masked until then); --help shows it.
    speak::apply_knobs(d->opts.base, {{"max-audio-s", "6"}, {"min-audio-s", "6"}});
    auto *sub = app.add_subcommand(
        "demo", "The main job: make (once, cached) a cpu-scale twin kit, speak a built-in paragraph through "
                "the full pipeline, print the metrics with the bottleneck named. Writes demo.wav, demo.json and "
                "demo.trace.json to --out-dir");
    add_speak_options(sub, d->opts);
    sub->add_option("--scale", d->scale, "Twin kit scale when generating: tiny (seconds) or cpu (full-shape TTS "
                                         "and Token2Wav, Qwen3-0.6B-shaped LLM)")
        ->default_str(d->scale)->check(CLI::IsMember({"tiny", "cpu"}))->group("demo");
    sub->add_option("--family", d->family, "Speech family of the generated twin kit: minicpmo45 (LLM -> TTS -> "
                                           "Token2Wav), pocket-tts (backbone + flow -> mimi decoder) or qwen3-tts (talker + code predictor -> "
                                           "code2wav), the last two on libmtmd")
        ->default_str(d->family)->check(CLI::IsMember({"minicpmo45", "pocket-tts", "qwen3-tts"}))->group("demo");
    sub->add_option("--kit-dir", d->kit_dir, "Where the twin kit is cached (default: $RTF_CACHE_DIR, "
                                             "$XDG_CACHE_HOME/rtfkit or ~/.cache/rtfkit, then kits/<name>)")
        ->group("demo");
    sub->add_option("--out-dir", d->out_dir, "Directory for demo.wav, demo.json, demo.trace.json")
        ->default_str(d->out_dir)->group("demo");
    sub->add_flag("-q,--quiet", d->quiet, "No progress lines")->group("demo");
    d->history.add_to(sub);
    sub->callback([&action, d] { action = [d] { return run_demo(*d); }; });
}

}  // namespace

RTF_COMMAND(10, add_demo_command);

}  // namespace rtf::cli
