// rtf encode-audio: the duplex input's audio side alone — a recording (any rate, any channel
// count) cut into frames (1 s by default, as a duplex client sends them), each frame through
// the audio encoder of a kit (models/apm: log-mel, Whisper encoder with its streaming KV
// cache, projector, pooling) — printing per frame the encode time and the embedding shape.
// Exit 0 done, 1 usage/setup (missing or unreadable input, a kit without the encoder),
// 3 when an embedding is not finite (the run is not valid).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/robust-stats.h"
#include "models/apm/apm-encoder.h"
#include "models/apm/audio-input.h"
#include "machine/provenance.h"
#include "speak/kit.h"

namespace rtf::cli {

namespace {

struct EncodeAudioCmd {
    std::string models, input, json_path, embeddings_path;
    int threads = 0;  // 0: min(4, hardware threads)
    std::string weight_type = "file";
    int frame_ms = 1000;
    bool no_streaming = false;
    bool quiet = false;
};

int run_encode_audio(EncodeAudioCmd c) {
    if (c.json_path == "-") c.quiet = true;  // stdout carries the JSON alone
    if (c.frame_ms < 100 || c.frame_ms > 30000)
        throw_usage("--frame-ms: " + std::to_string(c.frame_ms) + " is out of range (100..30000)");
    if (c.threads == 0) c.threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
    apm::ApmConfig cfg;
    cfg.n_threads = c.threads;
    cfg.streaming = !c.no_streaming;
    cfg.weight_type = c.weight_type;
    cfg.validate();
    // Input first: a missing recording is named before any model is loaded.
    const apm::AudioInput audio = apm::load_audio_16k(c.input);
    const std::string apm_path = speak::resolve_apm(c.models);

    using clk = std::chrono::steady_clock;
    const auto t_load = clk::now();
    apm::ApmModel model(apm_path, cfg.weight_type);
    apm::ApmEncoder enc(model, cfg);
    // Another weight type than the file's: the file's runs beside it (after each frame, not
    // timed) and the embeddings' SNR against it is the type's fidelity.
    std::unique_ptr<apm::ApmModel> ref_model;
    std::unique_ptr<apm::ApmEncoder> ref;
    if (cfg.weight_type != "file") {
        ref_model = std::make_unique<apm::ApmModel>(apm_path);
        apm::ApmConfig rc = cfg;
        rc.weight_type = "file";
        ref = std::make_unique<apm::ApmEncoder>(*ref_model, rc);
    }
    double sig = 0.0, err = 0.0;
    const double load_ms = std::chrono::duration<double, std::milli>(clk::now() - t_load).count();
    const auto &hp = model.hparams();

    const size_t frame_samples = static_cast<size_t>(c.frame_ms) * apm::kSampleRate / 1000;
    const auto frames = apm::split_frames(audio.samples, frame_samples);
    if (!c.quiet)
        std::printf("encode-audio: %s (%d Hz, %d ch, %.2f s) -> %zu frames of %d ms; encoder %s (%lld x %lld, %lld "
                    "heads -> %lld), %d threads, streaming %s\n",
                    audio.path.c_str(), audio.source_rate, audio.source_channels, audio.seconds(), frames.size(),
                    c.frame_ms, apm_path.c_str(), static_cast<long long>(hp.n_layer), static_cast<long long>(hp.d),
                    static_cast<long long>(hp.n_head), static_cast<long long>(hp.n_out), c.threads,
                    cfg.streaming ? "on" : "off");

    std::FILE *emb = nullptr;
    if (!c.embeddings_path.empty()) {
        emb = std::fopen(c.embeddings_path.c_str(), "wb");
        if (!emb) throw_setup("--embeddings " + c.embeddings_path + ": cannot write");
    }
    struct FileCloser {
        std::FILE *f;
        ~FileCloser() {
            if (f) std::fclose(f);
        }
    } closer{emb};
    nlohmann::json jframes = nlohmann::json::array();
    std::vector<double> full_ms;
    double total_ms = 0.0;
    int64_t total_rows = 0;
    size_t n_nonfinite = 0;
    for (size_t i = 0; i < frames.size(); ++i) {
        const auto t0 = clk::now();
        const apm::ApmOutput out = enc.encode_pcm(frames[i]);
        const double ms = std::chrono::duration<double, std::milli>(clk::now() - t0).count();
        double ss = 0.0;
        size_t bad = 0;
        for (float v : out.data) {
            if (!std::isfinite(v)) ++bad;
            else ss += static_cast<double>(v) * v;
        }
        n_nonfinite += bad;
        if (ref) {
            const apm::ApmOutput r = ref->encode_pcm(frames[i]);
            for (size_t k = 0; k < std::min(r.data.size(), out.data.size()); ++k) {
                sig += static_cast<double>(r.data[k]) * r.data[k];
                err += static_cast<double>(r.data[k] - out.data[k]) * (r.data[k] - out.data[k]);
            }
        }
        if (emb && std::fwrite(out.data.data(), sizeof(float), out.data.size(), emb) != out.data.size())
            throw_setup("--embeddings " + c.embeddings_path + ": write failed (disk full?)");
        const double rms = out.data.empty() ? 0.0 : std::sqrt(ss / static_cast<double>(out.data.size()));
        const double t_start = static_cast<double>(i * frame_samples) / apm::kSampleRate;
        const double dur = static_cast<double>(frames[i].size()) / apm::kSampleRate;
        total_ms += ms;
        total_rows += out.n_rows;
        if (frames[i].size() == frame_samples) full_ms.push_back(ms);
        if (!c.quiet)
            std::printf("frame %3zu  %7.2f s +%.2f s  mel %6.2f ms  encoder %8.2f ms  total %8.2f ms  -> %lld x %lld  "
                        "(attends %lld past tokens%s)\n",
                        i, t_start, dur, out.mel_ms, out.graph_ms, ms, static_cast<long long>(out.n_rows),
                        static_cast<long long>(out.n_embd), static_cast<long long>(out.n_past),
                        out.cache_reset ? ", cache restarted" : "");
        jframes.push_back({{"index", i},
                           {"t_start_s", t_start},
                           {"duration_s", dur},
                           {"n_mel_frames", out.n_mel_frames},
                           {"n_tokens", out.n_tokens},
                           {"n_past", out.n_past},
                           {"cache_reset", out.cache_reset},
                           {"n_rows", out.n_rows},
                           {"n_embd", out.n_embd},
                           {"embedding_rms", rms},
                           {"non_finite", bad},
                           {"mel_ms", out.mel_ms},
                           {"encoder_ms", out.graph_ms},
                           {"encode_ms", ms}});
    }
    // No full frame (a recording shorter than one frame): the line and summary.median_encode_ms
    // say 0, as they always have, where core's median_of would give NaN (JSON null).
    const double med = full_ms.empty() ? 0.0 : median_of(full_ms);
    const double rtf = audio.seconds() > 0 ? total_ms / 1000.0 / audio.seconds() : 0.0;
    if (!c.quiet) {
        std::printf("%zu frames, %lld embeddings of %lld; encode per %d ms frame: median %.2f ms (%zu full frames); "
                    "RTF %.3f; load %.0f ms; weights %s, KV cache %s, activations %s\n",
                    frames.size(), static_cast<long long>(total_rows), static_cast<long long>(hp.n_out), c.frame_ms, med,
                    full_ms.size(), rtf, load_ms, human_bytes(static_cast<double>(model.weight_bytes())).c_str(),
                    human_bytes(static_cast<double>(enc.cache_bytes())).c_str(),
                    human_bytes(static_cast<double>(enc.compute_bytes())).c_str());
        if (n_nonfinite) std::printf("INVALID: %zu embedding values are not finite\n", n_nonfinite);
    }
    const double snr_db = ref ? (err > 0 ? 10.0 * std::log10(sig / err) : 999.0) : 0.0;
    if (ref && !c.quiet)
        std::printf("weight type %s: embeddings SNR %.1f dB vs the file's weights (same frames, same cache history)\n",
                    cfg.weight_type.c_str(), snr_db);
    if (!c.json_path.empty()) {
        nlohmann::json j = {
            {"schema", "rtfkit.encode-audio/1"},
            {"created", utc_timestamp()},
            {"input", {{"path", audio.path}, {"sample_rate", audio.source_rate}, {"channels", audio.source_channels},
                       {"seconds", audio.seconds()}}},
            {"model", {{"path", apm_path}, {"n_layer", hp.n_layer}, {"d", hp.d}, {"n_head", hp.n_head},
                       {"n_ff", hp.n_ff}, {"n_mel", hp.n_mel}, {"n_ctx", hp.n_ctx}, {"n_proj", hp.n_proj},
                       {"n_out", hp.n_out}, {"weight_bytes", model.weight_bytes()}}},
            {"config", {{"threads", c.threads}, {"frame_ms", c.frame_ms}, {"streaming", cfg.streaming},
                        {"kv_type", ggml_type_name(cfg.kv_type)}, {"weight_type", cfg.weight_type}}},
            {"fidelity", ref ? nlohmann::json{{"vs", "file"}, {"embeddings_snr_db", snr_db}} : nlohmann::json(nullptr)},
            {"frames", jframes},
            {"embeddings", c.embeddings_path.empty() ? nlohmann::json(nullptr)
                                                     : nlohmann::json{{"path", c.embeddings_path},
                                                                      {"format", "f32 little-endian, row-major"},
                                                                      {"shape", {total_rows, hp.n_out}}}},
            {"summary", {{"n_frames", frames.size()}, {"n_full_frames", full_ms.size()}, {"n_rows", total_rows},
                         {"n_embd", hp.n_out}, {"median_encode_ms", med}, {"total_encode_ms", total_ms},
                         {"rtf", rtf}, {"load_ms", load_ms}, {"non_finite", n_nonfinite},
                         {"valid", n_nonfinite == 0}}},
            {"machine", machine_json()},
            {"versions", versions_json()}};
        write_json(j, c.json_path);
    }
    return n_nonfinite ? 3 : 0;
}

void add_encode_audio_command(CLI::App &app, Action &action) {
    auto c = std::make_shared<EncodeAudioCmd>();
    auto *sub = app.add_subcommand(
        "encode-audio",
        "Run a recording through a kit's audio encoder (the duplex input side) frame by frame: any WAV "
        "(resampled to 16 kHz mono), log-mel, Whisper encoder with its streaming cache, projector, pooling. "
        "Prints each frame's encode time and embedding shape (10 x the LLM width per 1 s frame).\n"
        "Example: rtf encode-audio --models kit --input speech.wav --json enc.json");
    sub->add_option("--models", c->models, "Kit directory (needs audio/MiniCPM-o-4_5-audio-F16.gguf)")->required();
    sub->add_option("--input", c->input, "Recording (WAV or any file libsndfile reads; any rate and channels)")->required();
    sub->add_option("--threads", c->threads,
                    "ggml CPU threads of the encoder graph (default 0 = min(4, CPUs); on a busy machine fewer threads "
                    "than cores avoid ggml's spinning barriers)")
        ->default_val(c->threads);
    sub->add_option("--weight-type", c->weight_type,
                    "The encoder's matrices at load: file (the kit's F16), f16, bf16, q8_0, q4_0; another than file also "
                    "runs the file's weights beside it and prints the embeddings' SNR against them")
        ->check(CLI::IsMember(apm::apm_weight_types()))->default_str(c->weight_type);
    sub->add_option("--frame-ms", c->frame_ms, "Frame length, ms (a duplex client sends 1000)")->default_val(c->frame_ms);
    sub->add_flag("--no-streaming", c->no_streaming,
                  "Every frame from an empty cache (default: each frame attends to the earlier ones, up to 30 s)");
    sub->add_option("--json", c->json_path, "Write the result (schema rtfkit.encode-audio/1) to FILE ('-' = stdout)");
    sub->add_option("--embeddings", c->embeddings_path,
                    "Write every frame's embedding rows to FILE (f32, row-major [rows][LLM width], frames in order)");
    sub->add_flag("--quiet", c->quiet, "No per-frame lines");
    sub->callback([&action, c] { action = [c] { return run_encode_audio(*c); }; });
}

}  // namespace

RTF_COMMAND(84, add_encode_audio_command);

}  // namespace rtf::cli
