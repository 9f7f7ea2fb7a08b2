// rtf twin: write a twin kit (random weights, exact layout of MiniCPM-o 4.5's speak-path files),
// or a twin of any GGUF file from its header (--like).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/parse.h"
#include "twin/twin.h"

namespace rtf::cli {

namespace {

namespace m45 = rtf::gguf::minicpmo45;

struct TwinCliOptions {
    std::string family = "minicpmo45", scale = "tiny", type = "f16", out, like, only, vocab, json, voices = "twin-a,twin-b";
    uint64_t seed = 0;
    bool dry_run = false, quiet = false, vision = false;
    // Dimension overrides (0 = the scale's value).
    int64_t llm_layers = 0, llm_hidden = 0, llm_ff = 0, llm_heads = 0, llm_kv_heads = 0, llm_head_dim = 0;
    int64_t tts_layers = 0, tts_hidden = 0, tts_ff = 0, tts_heads = 0;
    int64_t enc_blocks = 0, enc_up_blocks = 0, dit_blocks = 0, apm_layers = 0;
};

twin::ProgressFn make_progress(bool quiet) {
    if (quiet) return {};
    const bool tty = isatty(STDERR_FILENO) != 0;
    struct State {
        std::string file;
        int pct = -1;
    };
    auto st = std::make_shared<State>();
    return [tty, st](const std::string &file, uint64_t done, uint64_t total) {
        const int pct = total ? static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total)) : 100;
        if (file != st->file) {
            st->file = file;
            st->pct = -1;
        }
        if (pct == st->pct) return;
        if (!tty && pct / 25 == st->pct / 25) return;  // logs: a line per quarter
        st->pct = pct;
        std::fprintf(stderr, "%stwin: %-48s %3d%%  %s / %s%s", tty ? "\r" : "", file.c_str(), pct,
                     human_bytes(static_cast<double>(done)).c_str(), human_bytes(static_cast<double>(total)).c_str(),
                     tty && pct != 100 ? "" : "\n");
        std::fflush(stderr);
    };
}

int run_twin(const TwinCliOptions &c) {
    if (!c.like.empty()) {
        if (c.out.empty()) throw_usage("--out: the output file is required with --like");
        const auto r = twin::make_like(c.like, c.out, c.seed, make_progress(c.quiet));
        std::cout << "twin of " << c.like << " -> " << c.out << ": " << r.n_tensors << " tensors, " << r.bytes
                  << " bytes, " << r.seconds << " s\n";
        if (!c.json.empty())
            write_json({{"like", c.like}, {"out", c.out}, {"bytes", r.bytes}, {"n_tensors", r.n_tensors},
                        {"seconds", r.seconds}, {"seed", c.seed}},
                       c.json);
        return 0;
    }
    twin::KitOptions o;
    o.family = c.family;
    o.scale = m45::parse_scale(c.scale, "--scale");
    o.type = gguf::parse_weight_type(c.type, "--type");
    o.seed = c.seed;
    o.out_dir = c.out;
    o.vocab_path = c.vocab;
    o.dry_run = c.dry_run;
    o.dims = m45::dims_for_scale(o.scale);
    o.pocket = gguf::pockettts::dims_for_scale(o.scale);
    o.qwen3 = gguf::qwen3tts::dims_for_scale(o.scale);
    if (o.family == "pocket-tts" || o.family == "qwen3-tts") o.roles.assign(gguf::mtmd_family_roles.begin(), gguf::mtmd_family_roles.end());
    auto &d = o.dims;
    if (c.llm_layers) d.llm.n_layer = c.llm_layers;
    if (c.llm_hidden) d.llm.n_embd = c.llm_hidden;
    if (c.llm_ff) d.llm.n_ff = c.llm_ff;
    if (c.llm_heads) d.llm.n_head = c.llm_heads;
    if (c.llm_kv_heads) d.llm.n_head_kv = c.llm_kv_heads;
    if (c.llm_head_dim) d.llm.head_dim = c.llm_head_dim;
    if (c.tts_layers) d.tts.n_layer = c.tts_layers;
    if (c.tts_hidden) d.tts.n_embd = c.tts_hidden;
    if (c.tts_ff) d.tts.n_ff = c.tts_ff;
    if (c.tts_heads) d.tts.n_head = d.tts.n_head_kv = c.tts_heads;
    if (c.enc_blocks) d.encoder.n_blocks = c.enc_blocks;
    if (c.enc_up_blocks) d.encoder.n_up_blocks = c.enc_up_blocks;
    if (c.dit_blocks) d.flow_matching.n_blocks = c.dit_blocks;
    if (c.apm_layers) d.apm.n_layer = c.apm_layers;
    gguf::minicpmo45::derive_dependent_dims(d);
    // The projectors follow the LLM and TTS widths.
    d.tts.n_llm_embd = d.projector.n_in = d.llm.n_embd;
    d.projector.n_out = d.tts.n_embd;
    if (!c.only.empty()) {
        o.roles.clear();
        for (const auto &s : split(c.only, ',')) o.roles.push_back(gguf::parse_role(trim(s), "--only"));
    }
    o.voices.clear();
    if (c.voices != "none")
        for (const auto &s : split(c.voices, ',')) o.voices.push_back(trim(s));
    if (c.vision && std::find(o.roles.begin(), o.roles.end(), gguf::Role::vpm) == o.roles.end())
        o.roles.push_back(gguf::Role::vpm);
    o.progress = make_progress(c.quiet || c.dry_run);
    const auto r = twin::make_kit(o);
    for (const auto &f : r.files)
        std::printf("%-14s %-44s %14llu bytes  %5lld tensors%s\n", gguf::role_name(f.role), f.path.c_str(),
                    static_cast<unsigned long long>(f.bytes), static_cast<long long>(f.n_tensors),
                    c.dry_run ? "" : ("  " + std::to_string(f.seconds).substr(0, 5) + " s").c_str());
    for (const auto &f : r.voices)
        std::printf("%-14s %-44s %14llu bytes  %5lld tensors%s\n", "voice", f.path.c_str(),
                    static_cast<unsigned long long>(f.bytes), static_cast<long long>(f.n_tensors),
                    c.dry_run ? "" : ("  " + std::to_string(f.seconds).substr(0, 5) + " s").c_str());
    std::printf("total %llu bytes (%s)%s\n", static_cast<unsigned long long>(r.total_bytes),
                human_bytes(static_cast<double>(r.total_bytes)).c_str(),
                c.dry_run ? ", dry run: nothing written" : (", " + std::to_string(r.seconds).substr(0, 6) + " s -> " + c.out).c_str());
    if (!c.json.empty()) {
        auto j = r.to_json(o);
        j["dry_run"] = c.dry_run;
        j["seconds"] = r.seconds;
        write_json(j, c.json);
    }
    return 0;
}

}  // namespace

static void add_twin_command(CLI::App &app, Action &action) {
    auto *sub = app.add_subcommand(
        "twin", "Write a twin kit: GGUF files with the exact layout of a model family's files and seeded random "
                "weights (timings real, audio noise); or, with --like, a twin of any GGUF file");
    auto c = std::make_shared<TwinCliOptions>();
    sub->add_option("--family", c->family,
                    "Model family: minicpmo45 (default) | pocket-tts (pocket-tts.gguf + mmproj-pocket-tts.gguf) | "
                    "qwen3-tts (qwen3-tts.gguf + mmproj-qwen3-tts.gguf): the layouts the pinned llama.cpp's libllama "
                    "and libmtmd load; --scale tiny or full");
    sub->add_option("--scale", c->scale,
                    "tiny (seconds; small LLM/TTS, token2wav with 1+1 encoder and 2 DiT blocks) | cpu (full TTS and "
                    "token2wav, Qwen3-0.6B-shaped LLM) | full (real shapes, LLM Qwen3-8B). Default tiny");
    sub->add_option("--type", c->type, "Weight type of the LLM and TTS matrices: f16 | q8_0 | q4_k_m (default f16; "
                                       "projector and token2wav files stay F32, the audio encoder F16)");
    sub->add_option("--seed", c->seed, "Random seed (default 0); the same seed gives identical bytes");
    sub->add_option("--out", c->out, "Output directory of the kit (with --like: the output file)");
    sub->add_option("--like", c->like, "Twin of this GGUF file from its header alone (all keys, tensor names, "
                                       "shapes, types; random data)");
    sub->add_option("--only", c->only, "Comma-separated files to write: llm,tts,projector,encoder,flow_matching,"
                                       "flow_extra,hifigan2,prompt_cache,apm,vpm (default all but vpm; apm / vpm = the "
                                       "duplex audio / vision encoder). Into an existing kit: rtf-kit.json keeps the "
                                       "files not rewritten");
    sub->add_option("--voices", c->voices, "Extra voices written with the prompt cache, comma-separated names "
                                           "(voices/NAME/prompt_cache.gguf, seeded apart: other audio for the same "
                                           "codes; default twin-a,twin-b; 'none' = only the kit's default voice)");
    sub->add_option("--vocab", c->vocab, "Vocabulary GGUF for the tokenizers (default: llama.cpp's "
                                         "ggml-vocab-qwen2.gguf in the build's vocab folder)");
    sub->add_flag("--vision", c->vision, "Also write the vision encoder (vision/MiniCPM-o-4_5-vision-F16.gguf: SigLIP "
                                         "+ resampler; its ViT widths are the converter's defaults, unverified)");
    sub->add_flag("--dry-run", c->dry_run, "Print each file's size (computed from the header it would write); write nothing");
    sub->add_flag("--quiet", c->quiet, "No progress lines on stderr");
    sub->add_option("--json", c->json, "Write the kit description (as rtf-kit.json) to this file ('-' = stdout)");
    sub->add_option("--llm-layers", c->llm_layers, "LLM blocks (default by scale: 2 / 28 / 36)");
    sub->add_option("--llm-hidden", c->llm_hidden, "LLM hidden size n_embd (default 128 / 1024 / 4096)");
    sub->add_option("--llm-ff", c->llm_ff, "LLM FFN size (default 256 / 3072 / 12288)");
    sub->add_option("--llm-heads", c->llm_heads, "LLM query heads (default 4 / 16 / 32)");
    sub->add_option("--llm-kv-heads", c->llm_kv_heads, "LLM KV heads (default 2 / 8 / 8)");
    sub->add_option("--llm-head-dim", c->llm_head_dim, "LLM head size (default 32 / 128 / 128)");
    sub->add_option("--tts-layers", c->tts_layers, "TTS blocks (default 2 / 20 / 20)");
    sub->add_option("--tts-hidden", c->tts_hidden, "TTS hidden size (default 64 / 768 / 768)");
    sub->add_option("--tts-ff", c->tts_ff, "TTS FFN size (default 128 / 3072 / 3072)");
    sub->add_option("--tts-heads", c->tts_heads, "TTS heads (query = KV; default 2 / 12 / 12)");
    sub->add_option("--encoder-blocks", c->enc_blocks, "token2wav encoder token-rate conformer blocks (default 1 / 6 / 6)");
    sub->add_option("--encoder-up-blocks", c->enc_up_blocks, "token2wav encoder mel-rate conformer blocks (default 1 / 4 / 4)");
    sub->add_option("--dit-blocks", c->dit_blocks, "flow-matching DiT blocks (default 2 / 16 / 16)");
    sub->add_option("--apm-layers", c->apm_layers, "audio encoder (Whisper) blocks (default 2 / 24 / 24)");
    sub->callback([&action, c] { action = [c] { return run_twin(*c); }; });
}

RTF_COMMAND(90, add_twin_command);

}  // namespace rtf::cli
