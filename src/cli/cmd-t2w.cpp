// rtf t2w: Token2Wav alone (token2mel + HiFT vocoder) on a kit's token2wav-gguf/ files:
// audio codes from a file or a seeded random list -> 24 kHz WAV, with per-window
// sub-stage timings (RTF_T2W_PROFILE=1 summary, =2 a line per window) and --json.
#include <algorithm>
#include <chrono>
#include <cmath>
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
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-profile.h"
#include "models/t2w/t2w-stream.h"

namespace rtf::cli {

namespace {

struct T2wOptions {
    std::string models, tokens_file, out, json;
    int random_n = 0;
    uint32_t seed = 0;
    int chunk = 25;
    SpeakOptions knobs;  // the Token2Wav group of the speak knob table (speak/knobs.h)
};

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
    auto model = t2w::T2wModel::load(o.models, cfg.device_t2m, cfg.device_voc);
    t2w::T2wStream stream(*model, cfg);
    const double init_ms = t2w::ms_since(t_init);
    prof.set_init_ms(init_ms);
    for (int32_t t : tokens) {
        if (t < 0 || t >= model->enc_dims().vocab) {
            throw_usage("t2w: token " + std::to_string(t) + " out of range (audio codes are 0.." +
                        std::to_string(model->enc_dims().vocab - 1) + ")");
        }
    }
    std::vector<float> pcm;
    std::vector<t2w::WindowRecord> recs;
    for (size_t i = 0; i < tokens.size(); i += static_cast<size_t>(o.chunk)) {
        const size_t e = std::min(tokens.size(), i + static_cast<size_t>(o.chunk));
        const bool fin = e == tokens.size();
        std::vector<t2w::WindowRecord> r;
        auto out = stream.push({tokens.begin() + static_cast<std::ptrdiff_t>(i), tokens.begin() + static_cast<std::ptrdiff_t>(e)},
                               fin, &r);
        for (auto &w : r) prof.record(w);
        pcm.insert(pcm.end(), out.begin(), out.end());
        recs.insert(recs.end(), r.begin(), r.end());
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
                      {"weight_bytes", model->weight_bytes()}};
        j["tokens"] = tokens.size();
        j["samples"] = pcm.size();
        j["audio_s"] = audio_s;
        j["init_ms"] = init_ms;
        j["compute_s"] = prof.compute_s();
        j["rtf"] = audio_s > 0 ? prof.compute_s() / audio_s : 0.0;
        j["audio_check"] = {{"finite", finite}, {"min", lo}, {"max", hi}, {"max_step_within", max_step}, {"max_step_seam", max_seam}};
        nlohmann::json wins = nlohmann::json::array();
        for (auto &w : recs) {
            wins.push_back({{"call", w.call}, {"tokens", w.n_tokens}, {"final", w.final}, {"samples", w.samples},
                            {"t2m", {{"upload_ms", w.times.t2m.upload_ms}, {"compute_ms", w.times.t2m.compute_ms},
                                     {"download_ms", w.times.t2m.download_ms}, {"total_ms", w.times.t2m.total_ms}}},
                            {"voc", {{"upload_ms", w.times.voc.upload_ms}, {"compute_ms", w.times.voc.compute_ms},
                                     {"download_ms", w.times.voc.download_ms}, {"total_ms", w.times.voc.total_ms}}},
                            {"total_ms", w.times.total_ms}});
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
                                          "(token2mel + HiFT vocoder), streamed in 28-token windows");
    sub->add_option("--models", o->models, "Kit dir containing token2wav-gguf/, or that dir itself")->required();
    auto *tok = sub->add_option("--tokens", o->tokens_file, "File of audio codes 0..6560 (whitespace/comma separated)");
    auto *rnd = sub->add_option("--random", o->random_n, "Use N seeded random codes instead of --tokens")->check(CLI::Range(0, 1000000));
    tok->excludes(rnd);
    sub->add_option("--seed", o->seed, "Seed of --random (default 0)");
    sub->add_option("-o,--out", o->out, "Output WAV (16-bit PCM, 24 kHz mono)")->required();
    // The engine's knobs, from the speak knob table: spelt as in `rtf speak` (--t2w-threads-t2m, ...)
    add_speak_options(sub, o->knobs, KnobSet::t2w_engine);
    sub->add_option("--chunk", o->chunk, "Codes per push, like the TTS hand-off (default 25)")->check(CLI::Range(1, 1000000));
    sub->add_option("--json", o->json, "Write the run (config, windows, timings, audio checks) as JSON ('-' = stdout)");
    sub->callback([&action, o, tok, rnd] {
        if (tok->count() == 0 && rnd->count() == 0) throw_usage("t2w: give --tokens FILE or --random N");
        action = [o] { return run_t2w(*o); };
    });
}

RTF_COMMAND(30, add_t2w_command);

}  // namespace rtf::cli
