// rtf t2w-prompt: build a Token2Wav prompt cache (prompt_cache.gguf) for N flow steps from
// a prompt bundle (spk_f32.bin, prompt_tokens_i32.bin, prompt_mel_btc_f32.bin) with the
// kit's token2wav weights: docs/minicpmo45.md §4.9, models/t2w/prompt-cache-builder.h.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/error.h"
#include "models/t2w/prompt-cache-builder.h"
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-timing.h"

namespace rtf::cli {

namespace {

struct T2wPromptOptions {
    std::string bundle, models, t2w_dir, out, json;
    t2w::PromptCacheOptions build;
    bool quiet = false;
};

int run_t2w_prompt(const T2wPromptOptions &o) {
    o.build.validate();
    if (o.models.empty() == o.t2w_dir.empty()) throw_usage("t2w-prompt: give exactly one of --models KIT or --t2w-dir DIR");
    const auto t0 = std::chrono::steady_clock::now();
    const t2w::PromptBundle bundle = t2w::PromptBundle::load(o.bundle);
    // Weights only, F32 (the reference's math): the kit's own prompt cache is not needed.
    auto model = t2w::T2wModel::load(o.models.empty() ? o.t2w_dir : o.models, {}, t2w::T2wLoadOptions::weights_only());
    const double load_ms = t2w::ms_since(t0);
    t2w::PromptCacheOptions opt = o.build;
    const bool tty = isatty(fileno(stderr)) != 0;
    if (!o.quiet) {
        std::fprintf(stderr, "t2w-prompt: %d prompt codes -> L = %d frames, %d flow steps, %d threads (%s)\n", bundle.n_tokens(),
                     bundle.n_frames(), opt.steps, opt.threads, model->dir().c_str());
        opt.progress = [tty](const std::string &what, int done, int total) {
            std::fprintf(stderr, "%st2w-prompt: graph %d/%d (%s)%s", tty ? "\r" : "", done, total, what.c_str(),
                         tty && done < total ? "   " : "\n");
            std::fflush(stderr);
        };
    }
    const auto t1 = std::chrono::steady_clock::now();
    const t2w::PromptCache cache = t2w::build_prompt_cache(*model, bundle, opt);
    const double build_ms = t2w::ms_since(t1);
    // A new voice of a kit goes to KIT/voices/NAME/prompt_cache.gguf: make the folder.
    if (const auto parent = std::filesystem::path(o.out).parent_path(); !parent.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(parent, ec);
        if (ec) throw_setup("t2w-prompt: cannot create " + parent.string() + ": " + ec.message());
    }
    t2w::write_prompt_cache(cache, o.out);
    std::cout << "t2w-prompt: wrote " << o.out << " (n_timesteps " << cache.n_timesteps << ", L " << cache.att_len << ", built in "
              << static_cast<int>(build_ms) << " ms)\n";
    if (!o.json.empty()) {
        nlohmann::json j = cache.to_json();
        j["bundle"] = o.bundle;
        j["prompt_tokens"] = bundle.n_tokens();
        j["models"] = model->dir();
        j["out"] = o.out;
        j["threads"] = opt.threads;
        j["load_ms"] = load_ms;
        j["build_ms"] = build_ms;
        j["reference_math"] = cache.n_timesteps == 5;  // the reference runtime ships 5 steps
        write_json(j, o.json);
    }
    return 0;
}

}  // namespace

static void add_t2w_prompt_command(CLI::App &app, Action &action) {
    auto o = std::make_shared<T2wPromptOptions>();
    auto *sub = app.add_subcommand(
        "t2w-prompt",
        "Build a Token2Wav prompt cache (prompt_cache.gguf) for N flow steps from a prompt bundle: the voice's speaker "
        "vector, prompt codes and prompt mel (docs/minicpmo45.md §2.9, §4.9). A cache works for exactly its step count, so "
        "`rtf t2w --flow-steps N` needs one built for N (rtf t2w --prompt-cache FILE). Deterministic: the same inputs give the same bytes.");
    sub->add_option("--bundle", o->bundle,
                    "Folder with spk_f32.bin (192 f32), prompt_tokens_i32.bin (T_p > 3 int32 codes) and prompt_mel_btc_f32.bin "
                    "(2*(T_p-3) x 80 f32, time-major); twin kits have one in token2wav-gguf/")
        ->required();
    auto *km = sub->add_option("--models", o->models, "Kit dir containing token2wav-gguf/ (its weights are used)");
    auto *kd = sub->add_option("--t2w-dir", o->t2w_dir, "The token2wav-gguf dir itself (encoder, flow_extra, flow_matching, hifigan2.gguf)");
    km->excludes(kd);
    sub->add_option("--steps", o->build.steps, "Euler steps N the cache is for (1..100; the reference ships 5, default 5)");
    sub->add_option("--temperature", o->build.temperature, "Noise scale written into the cache and used for its setup (default 1.0)");
    sub->add_option("--threads", o->build.threads, "CPU threads (default 2; the bytes do not depend on it)");
    sub->add_option("-o,--out", o->out, "Output prompt_cache.gguf (written to OUT.part, then renamed; its folder is made). "
                                        "KIT/voices/NAME/prompt_cache.gguf adds the voice NAME to a kit (rtf speak --voice NAME)")->required();
    sub->add_option("--json", o->json, "Write a summary (shapes, settings, timings) as JSON ('-' = stdout)");
    sub->add_flag("--quiet", o->quiet, "No progress lines on stderr");
    sub->callback([&action, o] { action = [o] { return run_t2w_prompt(*o); }; });
}

RTF_COMMAND(31, add_t2w_prompt_command);

}  // namespace rtf::cli
