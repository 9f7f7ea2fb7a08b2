// rtf lm-bench: the LLM or TTS stage alone, decoding N tokens like llama-bench's tg test,
// optionally interleaved with llama.cpp's own llama-bench on the same file and knobs
// (bench/lm-bench.h says exactly what is timed). Exit 2 when --min-ratio is missed.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "bench/lm-bench.h"
#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/format.h"
#include "core/parse.h"
#include "models/lm/placement.h"
#include "speak/kit.h"

namespace rtf::cli {

namespace {

struct LmBenchOptions {
    std::string models, model, stages = "llm,tts", cpus, json_path;
    bool no_mmap = false, no_floor = false;
    double min_ratio = 0;
    bench::LmBenchConfig cfg;
};

int run_lm_bench_cmd(LmBenchOptions o) {
    const std::vector<std::string> stages = lm_stages("lm-bench", o.stages, o.models, o.model);
    if (o.min_ratio < 0 || o.min_ratio > 10) throw_usage("--min-ratio: must be 0..10, got " + fmt(o.min_ratio, 2));
    if (o.min_ratio > 0 && o.cfg.llama_bench.empty()) throw_usage("--min-ratio needs --llama-bench PATH");
    o.cfg.placement.mmap = !o.no_mmap;
    o.cfg.memory_floor = !o.no_floor;
    if (!o.cpus.empty()) o.cfg.placement.cpus = parse_int_list(o.cpus, "--cpus");
    speak::Kit kit;
    if (!o.models.empty()) kit = speak::resolve_kit(o.models);
    if (!o.models.empty()) speak::require_minicpmo45(kit, "rtf lm-bench");

    nlohmann::json out = {{"schema", "rtfkit.lm-bench-set/1"}, {"results", nlohmann::json::array()}};
    bool missed = false;
    for (const auto &s : stages) {
        bench::LmBenchConfig c = o.cfg;
        c.stage = s;
        if (!o.model.empty()) c.model_path = o.model;
        else c.model_path = s == "llm" ? kit.llm : kit.tts;
        if (s == "tts" && !o.models.empty()) c.projector_path = kit.projector;
        std::cerr << "lm-bench " << s << ": " << c.model_path << ", " << c.n_gen << " tokens x " << c.runs << " runs, "
                  << c.placement.threads() << " threads" << (c.llama_bench.empty() ? "" : ", interleaved with llama-bench")
                  << "\n";
        auto r = bench::run_lm_bench(c, [](const std::string &line) { std::cerr << "  " << line << "\n"; });
        std::cout << s << ": stage " << fmt(r.median_stage_tps, 2) << " tok/s (llama_decode alone " << fmt(r.median_decode_tps, 2)
                  << ")";
        if (!c.llama_bench.empty()) {
            std::cout << ", llama-bench tg" << c.n_gen << " " << fmt(r.median_llama_bench_tps, 2) << " tok/s, ratio "
                      << fmt(r.ratio, 3) << " (medians of " << c.runs << ")";
            if (o.min_ratio > 0) {
                const bool ok = r.ratio >= o.min_ratio;
                missed = missed || !ok;
                std::cout << (ok ? "  >= " : "  BELOW ") << fmt(o.min_ratio, 3);
            }
        }
        std::cout << "\n";
        if (c.memory_floor)
            std::cout << "  memory floor: " << fmt(r.floor_tps, 1) << " tok/s = read " << fmt(r.bandwidth_gib_s, 2) << " GiB/s / "
                      << fmt(r.floor_bytes_per_token / 1048576.0, 1) << " MiB per token (" << c.placement.weight_type
                      << " weights); the stage runs at " << fmt(100.0 * r.of_floor, 0) << " % of it\n";
        if (s == "tts") std::cout << "  llama-bench file: " << r.measured_file << " (derived plain-llama TTS transformer)\n";
        out["results"].push_back(r.to_json());
    }
    if (!o.json_path.empty()) write_json(out, o.json_path);
    return missed ? 2 : 0;
}

void add_lm_bench_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<LmBenchOptions>();
    auto *sub = app.add_subcommand(
        "lm-bench", "The LLM or TTS stage alone: decode N tokens like llama-bench tg, optionally interleaved with "
                    "llama.cpp's own llama-bench on the same GGUF and knobs (ratio = ours / llama-bench)");
    sub->add_option("--models", o->models, "Kit directory (real or twin); the stage picks its file");
    sub->add_option("--model", o->model, "A GGUF file instead of a kit (exactly one --stage)");
    sub->add_option("--stage", o->stages, "Stages, comma-separated: llm, tts")->default_str(o->stages);
    sub->add_option("-n,--n-gen", o->cfg.n_gen, "Tokens (LLM) or audio codes (TTS, EOS masked) per run")
        ->default_str("128")->check(CLI::Range(1, 100000));
    sub->add_option("--runs", o->cfg.runs, "Measured runs per side, after one warm-up (>= 3 for a median)")
        ->default_str("3")->check(CLI::Range(1, 1000));
    sub->add_option("--seed", o->cfg.seed, "Sampler seed (and the TTS's synthetic condition rows)")->default_str("42");
    sub->add_option("-p,--prompt", o->cfg.prompt, "LLM prompt (prefill, untimed)");
    auto &pl = o->cfg.placement;
    sub->add_option("-t,--threads", pl.n_threads, "Decode threads (0 = all CPUs)")->default_str("0")->check(CLI::Range(0, 4096));
    sub->add_option("--device", pl.device, "Backend device (a name from `rtf devices`, or auto)")->default_str("auto");
    sub->add_option("--ngl", pl.n_gpu_layers, "Layers on the device (-1 = all)")->default_str("-1");
    sub->add_option("--fa", pl.flash_attn, "Flash attention: auto, on, off")
        ->default_str("auto")->check(CLI::IsMember({"auto", "on", "off"}));
    sub->add_option("--kv-type", pl.kv_type, "KV cache type: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1")
        ->default_str("f16")
        ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}));
    sub->add_option("--weight-type", pl.weight_type,
                    "Weight type of the matrices: file = the file's own; another is converted once into the kit's "
                    ".rtf-cache (rtf lm-fidelity prices it)")
        ->default_str("file")
        ->check(CLI::IsMember(lm::weight_types()));
    sub->add_flag("--no-floor", o->no_floor, "Skip the memory-floor line (it measures the read bandwidth, ~1 s)");
    sub->add_flag("--no-mmap", o->no_mmap, "Read the weights into memory instead of mmap");
    sub->add_option("--cpus", o->cpus, "Pin compute threads to these CPUs, e.g. 0-3 (strict)");
    sub->add_option("--poll", pl.poll, "Idle-thread spin 0..100 (ggml default 50)")->default_str("50")->check(CLI::Range(0, 100));
    sub->add_option("--llama-bench", o->cfg.llama_bench,
                    "Path of llama.cpp's llama-bench (scripts/build-llama-bench.sh builds the pinned one); "
                    "runs interleaved with ours");
    sub->add_option("--min-ratio", o->min_ratio, "Exit 2 when a stage's ratio to llama-bench is below this (e.g. 0.97)")
        ->default_str("0 = no check");
    sub->add_option("--json", o->json_path, "Write every run, medians and ratios as JSON ('-' = stdout)");
    sub->callback([&action, o] { action = [o] { return run_lm_bench_cmd(*o); }; });
}

}  // namespace

RTF_COMMAND(32, add_lm_bench_command);

}  // namespace rtf::cli
