// rtf t2w: Token2Wav alone (token2mel + HiFT vocoder) on a kit's token2wav-gguf/ files:
// audio codes from a file or a seeded random list -> 24 kHz WAV, with per-window
// sub-stage timings (RTF_T2W_PROFILE=1 summary, =2 a line per window) and --json.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli-util.h"
#include "cli/commands.h"
#include "cli/speak-options.h"
#include "core/error.h"
#include "core/parse.h"
#include "core/wav.h"
#include "models/gguf/gguf-file.h"
#include "models/t2w/onednn-linear.h"
#include "models/t2w/packed-gemm.h"
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-op-profile.h"
#include "models/t2w/t2w-profile.h"
#include "models/t2w/t2w-stream.h"
#include "profile/stats.h"
#include "quality/check.h"
#include "quality/equivalence.h"

namespace rtf::cli {

namespace {

// Euler steps of the reference runtime (omni requests 5; docs/minicpmo45.md §4.5).
constexpr int kReferenceFlowSteps = 5;

struct T2wOptions {
    std::string models, tokens_file, out, json;
    std::string prompt_cache, ref_prompt_cache;  // "" = the kit's prompt_cache.gguf
    int random_n = 0;
    uint32_t seed = 0;
    int chunk = 25;
    bool no_fidelity = false;
    SpeakOptions knobs;  // the Token2Wav group of the speak knob table (speak/knobs.h)
};

// n_timesteps of a prompt cache file, read from its header (-1 when absent).
int prompt_cache_steps(const std::string &path) {
    if (!std::filesystem::exists(path)) throw_usage("t2w: prompt cache " + path +
                    " not found (give a prompt_cache.gguf; `rtf t2w-prompt --bundle DIR --steps N -o FILE` builds one)");
    const gguf::GgufFile g(path);
    return g.has_key("mtmd.prompt_cache.n_timesteps") ? static_cast<int>(g.get_int("mtmd.prompt_cache.n_timesteps")) : -1;
}

std::vector<int32_t> read_token_file(const std::string &path) {
    std::ifstream f(path);
    if (!f) throw_usage("--tokens: cannot read " + path);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    std::replace(text.begin(), text.end(), ',', ' ');
    std::istringstream in(text);
    std::vector<int32_t> v;
    std::string w;
    while (in >> w) v.push_back(static_cast<int32_t>(parse_int(w, "--tokens " + path, -2147483647LL, 2147483647LL)));
    return v;
}

// Streams `tokens` through `stream` in pushes of `chunk`; returns the PCM, appends the
// window records and (optional) every window's token2mel output as frames of 80 bins, in time
// order (so runs with other window sizes line up frame by frame).
std::vector<float> synthesize(t2w::T2wStream &stream, const std::vector<int32_t> &tokens, int chunk,
                              std::vector<t2w::WindowRecord> &recs, std::vector<float> *mels) {
    if (mels) {
        t2w::WindowTap tap;
        tap.t2m_out = [mels](int64_t, const std::vector<float> &mel, int T) {
            for (int t = 0; t < T; ++t)
                for (int c = 0; c < t2w::kMelBins; ++c) mels->push_back(mel[static_cast<size_t>(c) * T + t]);
        };
        stream.set_tap(tap);
    }
    std::vector<float> pcm;
    for (size_t i = 0; i < tokens.size(); i += static_cast<size_t>(chunk)) {
        const size_t e = std::min(tokens.size(), i + static_cast<size_t>(chunk));
        std::vector<t2w::WindowRecord> r;
        auto out = stream.push({tokens.begin() + static_cast<std::ptrdiff_t>(i), tokens.begin() + static_cast<std::ptrdiff_t>(e)},
                               e == tokens.size(), &r);
        pcm.insert(pcm.end(), out.begin(), out.end());
        recs.insert(recs.end(), r.begin(), r.end());
    }
    return pcm;
}

int run_t2w(const T2wOptions &o) {
    const t2w::T2wConfig cfg = make_speak_config(o.knobs, /*finalize=*/false).t2w;
    cfg.validate();
    std::vector<int32_t> tokens;
    if (!o.tokens_file.empty()) {
        tokens = read_token_file(o.tokens_file);
    } else {
        std::mt19937 rng(o.seed);
        std::uniform_int_distribution<int32_t> dist(0, 6560);
        for (int i = 0; i < o.random_n; ++i) tokens.push_back(dist(rng));
    }
    if (tokens.empty()) throw_usage("t2w: the token list is empty (--tokens file holds no codes, or --random 0)");

    t2w::T2wProfile prof;
    const auto t_init = std::chrono::steady_clock::now();
    auto model = t2w::T2wModel::load(o.models, cfg, t2w::T2wLoadOptions::prompt(o.prompt_cache));
    // one line: which kernels run the products (and why oneDNN does not, when it does not)
    std::cerr << "t2w: kernels: " << model->packed_weights() << " weights on our packed kernels";
    if (model->packed_weights() > 0) std::cerr << " (" << t2w::gemm::isa_name(t2w::gemm::kernel_isa()) << ")";
    std::cerr << ", " << model->onednn_weights() << " on oneDNN";
    if (!t2w::onednn::compiled()) std::cerr << " (not in this build: install libdnnl-dev and rebuild)";
    else if (!t2w::onednn::available()) std::cerr << " (switched off: RTF_T2W_ONEDNN=0 or RTF_T2W_PACKED=0)";
    else std::cerr << " " << t2w::onednn::version() << ", ISA " << t2w::onednn::isa();
    std::cerr << "\n";
    t2w::T2wStream stream(*model, cfg);
    const t2w::Token2Mel &t2m = stream.token2mel();
    const std::string cfg_plan = t2m.cfg_batched() ? "one batch-2 graph" : std::to_string(t2m.lanes()) + " lane(s)";
    const char *attention = t2m.fused_attention() ? "fused (dit-attention)" : "ggml graph";
    std::cerr << "t2w: token2mel: CFG branches as " << cfg_plan << ", DiT attention " << attention << "\n";
    const auto t_warm = std::chrono::steady_clock::now();
    stream.warm();  // as the speak path does at load: no window pays graph set-up (RTF_T2W_WARM_RUN)
    const double warm_ms = t2w::ms_since(t_warm);
    const int64_t graphs_at_load = stream.graphs_built();
    const double init_ms = t2w::ms_since(t_init);
    prof.set_init_ms(init_ms);
    for (int32_t t : tokens) {
        if (t < 0 || t >= model->enc_dims().vocab) {
            throw_usage("t2w: token " + std::to_string(t) + " out of range (audio codes are 0.." +
                        std::to_string(model->enc_dims().vocab - 1) + ")");
        }
    }
    // A compute type other than f32, a shorter first window or another flow-step count than
    // the reference's 5 changes the math: the same tokens go through the reference path (f32,
    // 28-token first window, 5 steps with a 5-step prompt cache) afterwards and the output is
    // scored against it (mel and PCM SNR).
    const int steps = stream.flow_steps();
    const bool steps_differ = steps != kReferenceFlowSteps;
    // The reference's 5 steps need a cache built for 5: --ref-prompt-cache, else the kit's own
    // when it is one (else the step count cannot be scored: the pass keeps this run's steps).
    std::string ref_prompt = !o.ref_prompt_cache.empty() ? o.ref_prompt_cache : o.prompt_cache;
    int ref_steps = steps;
    if (steps_differ) {
        const std::string cand = !o.ref_prompt_cache.empty() ? o.ref_prompt_cache : model->dir() + "/prompt_cache.gguf";
        const int n = prompt_cache_steps(cand);
        if (n == kReferenceFlowSteps) {
            ref_prompt = cand;
            ref_steps = kReferenceFlowSteps;
        } else if (!o.ref_prompt_cache.empty()) {
            throw_usage("--ref-prompt-cache " + cand + ": n_timesteps " + std::to_string(n) + ", expected 5 (build one with `rtf t2w-prompt --steps 5`)");
        }
        std::cerr << "t2w: " << steps << " flow steps (prompt cache " << model->prompt_file() << "): not the reference's "
                  << kReferenceFlowSteps << ", so the math differs from the reference runtime's"
                  << (o.no_fidelity                          ? ""
                      : ref_steps == kReferenceFlowSteps ? "; the output is scored against 5 steps below"
                                                         : "; no 5-step prompt cache to score it against (give --ref-prompt-cache)")
                  << "\n";
    }
    const bool typed = cfg.type_t2m != "f32" || cfg.type_voc != "f32" || !cfg.reference_windows() ||
                       ref_steps != steps || !o.ref_prompt_cache.empty();
    const bool fidelity = typed && !o.no_fidelity;
    std::vector<float> mels;
    std::vector<t2w::WindowRecord> recs;
    std::vector<float> pcm = synthesize(stream, tokens, o.chunk, recs, fidelity ? &mels : nullptr);
    for (auto &w : recs) prof.record(w);
    nlohmann::json fid = nullptr;
    if (fidelity) {
        std::string ramp;
        for (int w : cfg.ramp) ramp += (ramp.empty() ? ", ramp " : ",") + std::to_string(w);
        std::cerr << "t2w: scoring " << cfg.type_t2m << "/" << cfg.type_voc << ", first window " << cfg.first_window << ramp << ", "
                  << steps << " flow steps against the f32, 28-token-first-window, " << ref_steps << "-step path on the same tokens ...\n";
        t2w::T2wConfig ref_cfg = cfg;
        ref_cfg.type_t2m = ref_cfg.type_voc = "f32";
        ref_cfg.first_window = t2w::kWindowTokens;
        ref_cfg.ramp.clear();
        ref_cfg.flow_steps = ref_steps;
        auto ref_model = t2w::T2wModel::load(o.models, ref_cfg, t2w::T2wLoadOptions::prompt(ref_prompt));
        t2w::T2wStream ref_stream(*ref_model, ref_cfg);
        std::vector<float> ref_mels;
        std::vector<t2w::WindowRecord> ref_recs;
        const auto ref_pcm = synthesize(ref_stream, tokens, o.chunk, ref_recs, &ref_mels);
        double ref_s = 0;
        for (const auto &w : ref_recs) ref_s += (w.times.t2m.total_ms + w.times.voc.total_ms) / 1000.0;
        // after the first second: how much of the difference a short first window leaves
        // to the rest of the utterance (caches and noise draws follow another history)
        const size_t s1 = static_cast<size_t>(t2w::kSampleRate);
        const std::vector<float> ref_rest(ref_pcm.begin() + static_cast<std::ptrdiff_t>(std::min(s1, ref_pcm.size())), ref_pcm.end());
        const std::vector<float> rest(pcm.begin() + static_cast<std::ptrdiff_t>(std::min(s1, pcm.size())), pcm.end());
        fid = {{"reference", "f32, first window 28, " + std::to_string(ref_steps) + " flow steps"},
               {"reference_flow_steps", ref_steps},
               {"reference_prompt_cache", ref_model->prompt_file()},
               {"flow_steps", steps},
               {"type_t2m", cfg.type_t2m},
               {"type_voc", cfg.type_voc},
               {"first_window", cfg.first_window},
               {"ramp", cfg.ramp},
               {"mel_snr_db", prof::json_number(quality::snr_db(ref_mels, mels))},
               {"pcm_snr_db", prof::json_number(quality::snr_db(ref_pcm, pcm))},
               {"pcm_snr_after_1s_db", prof::json_number(quality::snr_db(ref_rest, rest))},
               {"reference_compute_s", ref_s}};
        auto db = [](const nlohmann::json &v) { return v.is_null() ? std::string("identical") : quality::fmt(v.get<double>(), 2) + " dB"; };
        std::cout << "t2w: fidelity vs the reference path: mel SNR " << db(fid["mel_snr_db"]) << ", PCM SNR "
                  << db(fid["pcm_snr_db"]) << " (after the first second " << db(fid["pcm_snr_after_1s_db"])
                  << "; reference compute " << quality::fmt(ref_s, 2) << " s)\n";
    }
    // boundaries: cumulative sample offsets where a window ends
    std::vector<size_t> boundaries;
    size_t acc = 0;
    for (auto &w : recs) {
        acc += static_cast<size_t>(w.samples);
        boundaries.push_back(acc);
    }
    write_wav(o.out, pcm, t2w::kSampleRate);

    // audio sanity: finite, not constant, seams no larger than within-window steps
    bool finite = true;
    float lo = 0, hi = 0;
    double max_step = 0, max_seam = 0;
    for (size_t i = 0; i < pcm.size(); ++i) {
        if (!std::isfinite(pcm[i])) finite = false;
        lo = std::min(lo, pcm[i]);
        hi = std::max(hi, pcm[i]);
        if (i == 0) continue;
        const double step = std::fabs(static_cast<double>(pcm[i]) - pcm[i - 1]);
        const bool seam = std::find(boundaries.begin(), boundaries.end(), i) != boundaries.end();
        if (seam) max_seam = std::max(max_seam, step);
        else max_step = std::max(max_step, step);
    }
    const double audio_s = static_cast<double>(pcm.size()) / t2w::kSampleRate;
    if (prof.level() >= 1) prof.print_summary(stderr);
    nlohmann::json ops = nullptr;
    if (t2w::op_profile_enabled()) {
        // With a fidelity pass (typed run) the table also holds the f32 path's nodes: say so.
        ops = nlohmann::json::array();
        double total = 0;
        for (const auto &s : t2w::op_profile()) total += s.ms;
        std::fprintf(stderr, "op profile (RTF_T2W_PROFILE_OPS: node by node, for shares)%s\n",
                     fidelity ? " — includes the f32 fidelity pass" : "");
        std::fprintf(stderr, "  %-16s %-22s %8s %10s %6s\n", "graph", "op", "n", "ms", "share");
        for (const auto &s : t2w::op_profile()) {
            ops.push_back({{"graph", s.graph}, {"op", s.op}, {"n", s.n}, {"ms", s.ms}, {"share", total > 0 ? s.ms / total : 0.0}});
            if (total > 0 && s.ms / total >= 0.002)
                std::fprintf(stderr, "  %-16s %-22s %8lld %10.1f %5.1f%%\n", s.graph.c_str(), s.op.c_str(),
                             static_cast<long long>(s.n), s.ms, 100.0 * s.ms / total);
        }
    }
    std::cout << "t2w: " << tokens.size() << " tokens -> " << pcm.size() << " samples (" << audio_s << " s) in "
              << recs.size() << " windows, compute " << prof.compute_s() << " s, RTF "
              << (audio_s > 0 ? prof.compute_s() / audio_s : 0.0) << ", wrote " << o.out << "\n";
    if (!o.json.empty()) {
        nlohmann::json j;
        j["config"] = cfg.to_json();
        j["config"]["chunk_tokens"] = o.chunk;
        j["models"] = model->dir();
        const auto &E = model->enc_dims();
        const auto &D = model->dit_dims();
        j["model"] = {{"encoder", {{"d_model", E.d_model}, {"heads", E.n_heads}, {"token_layers", E.n_token_layers}, {"mel_layers", E.n_mel_layers}}},
                      {"dit", {{"hidden", D.hidden}, {"heads", D.n_heads}, {"depth", D.depth}}},
                      {"prompt_len", model->prompt().att_len},
                      {"flow_steps", stream.flow_steps()},
                      {"prompt_cache", model->prompt_file()},
                      {"weight_bytes", model->weight_bytes()},
                      {"packed_weights", model->packed_weights()},
                      {"onednn_weights", model->onednn_weights()}};
        // which implementation ran the products: our packed kernels, or oneDNN's (its impl
        // string per compute type, with the products it computed in this run)
        nlohmann::json impls = nlohmann::json::array();
        for (const auto &ic : t2w::onednn::impls_used()) impls.push_back({{"impl", ic.impl}, {"calls", ic.calls}});
        // packed_isa: which micro-kernels our packed GEMM / direct conv / fused attention ran
        // ("avx512", "avx2"; "off" with RTF_T2W_PACKED=0 or a CPU with neither)
        j["kernels"] = {{"packed_weights", model->packed_weights()},
                        {"packed_isa", t2w::gemm::packed_enabled() ? t2w::gemm::isa_name(t2w::gemm::kernel_isa()) : "off"},
                        {"onednn_weights", model->onednn_weights()},
                        {"token2mel", {{"cfg", t2m.cfg_batched() ? "batched" : "lanes"},
                                       {"lanes", t2m.lanes()},
                                       {"attention", t2m.fused_attention() ? "fused" : "ggml"}}},
                        {"onednn", {{"compiled", t2w::onednn::compiled()},
                                    {"available", t2w::onednn::available()},
                                    {"version", t2w::onednn::version()},
                                    {"isa", t2w::onednn::isa()},
                                    {"impls", impls}}}};
        j["tokens"] = tokens.size();
        j["samples"] = pcm.size();
        j["audio_s"] = audio_s;
        j["init_ms"] = init_ms;
        j["warm_ms"] = warm_ms;
        j["graphs_built_in_run"] = stream.graphs_built() - graphs_at_load;
        j["compute_s"] = prof.compute_s();
        j["rtf"] = audio_s > 0 ? prof.compute_s() / audio_s : 0.0;
        j["fidelity"] = fid;
        // fewer (or more) Euler steps than the reference's 5: other math, said here and on stderr
        j["flow_steps_differ_from_reference"] = steps_differ;
        j["op_profile"] = ops;  // null unless RTF_T2W_PROFILE_OPS=1  // null: f32 (the reference path itself) or --no-fidelity
        j["audio_check"] = {{"finite", finite}, {"min", lo}, {"max", hi}, {"max_step_within", max_step}, {"max_step_seam", max_seam}};
        nlohmann::json wins = nlohmann::json::array();
        auto part = [](const t2w::PartTimes &p) {
            return nlohmann::json{{"upload_ms", p.upload_ms},       {"compute_ms", p.compute_ms},
                                  {"download_ms", p.download_ms},   {"total_ms", p.total_ms},
                                  {"upload_bytes", p.upload_bytes}, {"download_bytes", p.download_bytes}};
        };
        for (auto &w : recs) {
            wins.push_back({{"call", w.call}, {"tokens", w.n_tokens}, {"final", w.final}, {"samples", w.samples},
                            {"t2m", part(w.times.t2m)}, {"voc", part(w.times.voc)}, {"total_ms", w.times.total_ms}});
        }
        j["windows"] = wins;
        nlohmann::json st;
        for (const char *s : {"token2mel", "vocoder", "total", "t2m.compute", "voc.compute"}) {
            auto v = prof.stats(s);
            if (!v.empty()) st[s] = {{"n", v[0]}, {"min", v[1]}, {"p50", v[2]}, {"p95", v[3]}, {"p99", v[4]}, {"max", v[5]}, {"mean", v[6]}};
        }
        j["stages_ms"] = st;
        write_json(j, o.json);
    }
    if (!finite) throw_runtime("t2w: output contains NaN/Inf samples");
    return 0;
}

}  // namespace

static void add_t2w_command(CLI::App &app, Action &action) {
    auto o = std::make_shared<T2wOptions>();
    auto *sub = app.add_subcommand("t2w", "Token2Wav alone: audio codes -> 24 kHz speech with the kit's token2wav-gguf/ "
                                          "(token2mel + HiFT vocoder), streamed in 28-token windows. Env: RTF_T2W_PROFILE=1|2 per-window "
                                          "timings; RTF_T2W_PROFILE_OPS=1 time per graph and ggml op (node by node: "
                                          "for shares, slower than a normal run); RTF_T2W_WARM_RUN=0 builds the graphs at load without the "
                                          "warm-up run of the first window (shows what the first window pays cold; honoured by every command "
                                          "that loads Token2Wav); "
                                          "RTF_T2W_DEBUG_MEM=1 graph buffer sizes and warm-up times; RTF_T2W_PACKED=0 ggml's mul_mat instead of our packed F32 GEMM (AVX-512F or AVX2 + FMA) for F32 weights and the AVX512-BF16 one for bf16 token2mel weights (A/B, or to rule it out); RTF_T2W_PACKED=avx2 our AVX2 kernels on an AVX-512 CPU (A/B); "
                                          "RTF_T2W_CONV=0 the vocoder's convolutions as im2col + the packed GEMM instead of the direct convolution; "
                                          "RTF_T2W_VOC_ONEDNN_F32=1 the f32 vocoder's convolutions on oneDNN's f32 convolution (A/B; off by default: slower where measured); "
                                          "RTF_T2W_ATTN=ggml the DiT's attention as ggml's graph instead of the fused op; RTF_T2W_CFG_BATCH=1|0 forces the two CFG branches into one batch-2 graph per Euler step (each DiT weight read once per step; a thread barrier per node) or two graphs on two threads (default with >= 2 token2mel threads)");
    sub->add_option("--models", o->models, "Kit dir containing token2wav-gguf/, or that dir itself")->required();
    auto *tok = sub->add_option("--tokens", o->tokens_file, "File of audio codes 0..6560 (whitespace/comma separated)");
    auto *rnd = sub->add_option("--random", o->random_n, "Use N seeded random codes instead of --tokens")->check(CLI::Range(0, 1000000));
    tok->excludes(rnd);
    sub->add_option("--seed", o->seed, "Seed of --random (default 0)");
    sub->add_option("-o,--out", o->out, "Output WAV (16-bit PCM, 24 kHz mono)")->required();
    // The engine's knobs, from the speak knob table: spelt as in `rtf speak` (--t2w-threads-t2m, ...)
    add_speak_options(sub, o->knobs, KnobSet::t2w_engine);
    sub->add_option("--chunk", o->chunk, "Codes per push, like the TTS hand-off (default 25)")->check(CLI::Range(1, 1000000));
    sub->add_option("--prompt-cache", o->prompt_cache,
                    "Prompt cache file instead of the kit's token2wav-gguf/prompt_cache.gguf (e.g. one `rtf t2w-prompt --steps N` built; "
                    "--flow-steps must match its n_timesteps)");
    sub->add_option("--ref-prompt-cache", o->ref_prompt_cache,
                    "5-step prompt cache of the fidelity pass when --flow-steps is not 5 (default: the kit's prompt_cache.gguf); "
                    "build it from the same bundle so that only the step count differs");
    sub->add_flag("--no-fidelity", o->no_fidelity,
                  "With a --t2w-type-* other than f32, --t2w-first-window < 28, a --t2w-ramp or flow steps other than 5: skip the second pass (f32, "
                  "28-token first window, 5 steps) that scores the output (mel and PCM SNR)");
    sub->add_option("--json", o->json, "Write the run (config, windows, timings, audio checks) as JSON ('-' = stdout)");
    sub->callback([&action, o, tok, rnd] {
        if (tok->count() == 0 && rnd->count() == 0) throw_usage("t2w: give --tokens FILE or --random N");
        action = [o] { return run_t2w(*o); };
    });
}

RTF_COMMAND(30, add_t2w_command);

}  // namespace rtf::cli
