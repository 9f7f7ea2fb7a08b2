#include "cli/speak-run.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>

#include "cli/cli-util.h"
#include "core/audio-stream.h"
#include "core/error.h"
#include "core/format.h"
#include "core/wav.h"
#include "pipeline/cancel.h"
#include "speak/knobs.h"
#include "profile/trace.h"

namespace rtf::cli {

namespace {

void write_raw_s16(const std::vector<float> &pcm) {
    const std::string bytes = to_s16le(pcm);
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    std::fflush(stdout);
}

// The -o file: a WAV through WavWriter (its header sizes patched at close), or, by the file's
// extension, an encoded stream written as the chunks arrive (core/audio-stream.h).
class AudioOut {
public:
    AudioOut(const std::string &path, int rate) : path_(path) {
        const auto fmt = format_of(path);
        if (!fmt) {
            wav_ = std::make_unique<WavWriter>(path, rate);
            return;
        }
        enc_ = std::make_unique<AudioStreamEncoder>(*fmt, rate);
        f_ = std::fopen(path.c_str(), "wb");
        if (!f_) throw_setup("-o/--output: cannot create " + path + ": " + std::strerror(errno));
        put(enc_->begin());
    }
    ~AudioOut() {
        try {
            close();
        } catch (...) {  // a destructor must not throw; the explicit close() reports
        }
    }
    void write(const std::vector<float> &pcm) {
        if (wav_) wav_->write(pcm);
        if (enc_) put(enc_->encode(pcm.data(), pcm.size()));
    }
    void close() {  // idempotent; what was written stays a valid file
        if (wav_) wav_->close();
        if (f_) {
            put(enc_->finish());
            std::fclose(f_);
            f_ = nullptr;
        }
    }
    // .flac | .opus/.ogg (Ogg/Opus) | .mp3; any other path is a WAV (nullopt).
    static std::optional<AudioFormat> format_of(const std::string &path) {
        std::string ext = std::filesystem::path(path).extension().string();
        for (auto &ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (ext == ".flac") return AudioFormat::Flac;
        if (ext == ".opus" || ext == ".ogg") return AudioFormat::Opus;
        if (ext == ".mp3") return AudioFormat::Mp3;
        return std::nullopt;
    }

private:
    void put(const std::string &b) {
        if (!b.empty() && std::fwrite(b.data(), 1, b.size(), f_) != b.size())
            throw_setup("-o/--output: cannot write " + path_ + ": " + std::strerror(errno));
        std::fflush(f_);
    }
    std::string path_;
    std::unique_ptr<WavWriter> wav_;
    std::unique_ptr<AudioStreamEncoder> enc_;
    std::FILE *f_ = nullptr;
};

}  // namespace

speak::SpeakResult run_speak_cli(speak::Engines &engines, speak::SpeakConfig cfg, const SpeakOutputs &out,
                                 bool &interrupted) {
    std::unique_ptr<AudioOut> wav;
    if (!out.wav_path.empty() && out.wav_path != "-") wav = std::make_unique<AudioOut>(out.wav_path, engines.t2w->sample_rate());
    pipe::CancelToken cancel;
    pipe::SigintGuard guard(cancel);
    cfg.pipeline.cancel = &cancel;

    auto t0 = std::chrono::steady_clock::now();
    double audio_s = 0, first_ms = -1;
    int64_t chunks = 0;
    auto sink = [&](const pipe::Item &c) {
        if (wav) wav->write(c.pcm);
        if (out.wav_path == "-") write_raw_s16(c.pcm);
        double now = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (first_ms < 0) first_ms = now;
        ++chunks;
        audio_s += static_cast<double>(c.pcm.size()) / c.sample_rate;
        if (out.progress) {
            std::fprintf(stderr, "\r  chunks %lld  audio %.2f s  RTF so far %.3f  first audio %.0f ms   ",
                         static_cast<long long>(chunks), audio_s, audio_s > 0 ? now / 1000.0 / audio_s : 0.0,
                         first_ms);
            std::fflush(stderr);
        }
    };
    speak::SpeakResult r;
    try {
        r = speak::speak(engines, cfg, sink);
    } catch (...) {
        if (out.progress) std::fprintf(stderr, "\n");
        if (wav) wav->close();
        if (wav && audio_s > 0) {
            std::fprintf(stderr, "rtf: %s keeps the %.2f s of audio made before the failure\n", out.wav_path.c_str(),
                         audio_s);
        }
        throw;
    }
    if (out.progress) std::fprintf(stderr, "\n");
    if (wav) wav->close();
    interrupted = r.run.cancelled;
    nlohmann::json doc = speak::to_json(r);
    if (!out.profile.is_null()) doc["profile"] = out.profile;
    if (!out.json_path.empty()) write_json(doc, out.json_path);
    if (!r.run.cancelled) append_speak_history(out.history, doc, speak::knobs_json(cfg), cfg.models_dir);
    if (!out.trace_path.empty()) {
        prof::write_trace_file(prof::chrome_trace(r.run.record, &r.run.metrics.starvation), out.trace_path);
    }
    return r;
}

void print_speak_summary(const speak::SpeakResult &r, const SpeakOutputs &out, std::ostream &os) {
    const auto &m = r.run.metrics;
    os << (r.run.cancelled ? "interrupted (Ctrl-C): partial result\n" : "");
    if (r.family != "minicpmo45")
        os << "audio     " << fmt(m.audio_ms / 1000.0, 2) << " s in " << m.n_chunks << " chunks (family " << r.family
           << ": " << r.family_units << " frames of 80 ms from " << r.family_text_tokens
           << (r.family == "qwen3-tts" ? " prompt rows)\n" : " text tokens)\n");
    else
        os << "audio     " << fmt(m.audio_ms / 1000.0, 2) << " s in " << m.n_chunks << " chunks ("
           << r.audio_codes.size() << " audio tokens, " << r.text_tokens.size() << " text tokens, LLM stop: "
           << (r.llm_stop.empty() ? "-" : r.llm_stop) << ")\n";
    if (r.twin_text_cap > 0)
        os << "twin cap  LLM reply capped at " << r.twin_text_cap << " text tokens (--twin-text-rate "
           << fmt(r.config.value("twin_text_rate", 0.0), 1) << "/s of audio): a twin artefact, real kits are never capped\n";
    if (!out.profile_line.empty()) os << "profile   " << out.profile_line << "\n";
    os << "rtf       " << fmt(m.rtf) << "   (xRT " << fmt(m.xrt, 2) << ")   rtf_steady " << fmt(m.rtf_steady)
       << "   first_audio_ms " << fmt(m.first_audio_ms, 0) << "   gapless_start_ms " << fmt(m.gapless_start_ms, 0)
       << "\n";
    if (r.family == "minicpmo45") os << "first     " << speak::to_line(r.first_audio) << "\n";
    if (r.t2w_graphs_built > 0 || r.t2w_rebuilt)
        os << "warning   Token2Wav built " << r.t2w_graphs_built << " graphs during the run"
           << (r.t2w_rebuilt ? " (its stream was rebuilt for another T2W config)" : "") << ": not a warm run\n";
    os << "starvation " << m.starvation.count << " gaps, " << fmt(m.starvation.total_ms, 0) << " ms\n";
    os << "stages    ";
    for (const auto &s : m.stages) os << "rtf_stage." << s.name << " " << fmt(s.rtf_stage) << "   ";
    os << "\n";
    os << "bounds    overlap " << fmt(m.bound_overlap) << "   serial " << fmt(m.bound_serial)
       << "   pipeline_efficiency " << fmt(m.pipeline_efficiency) << "   schedule " << pipe::to_string(r.run.schedule)
       << "\n";
    for (const auto &[name, s] : m.substages) {
        os << "  " << std::left << std::setw(20) << name << " p50 " << fmt(s.p50, 1) << "  p95 " << fmt(s.p95, 1)
           << "  max " << fmt(s.max, 1) << "  (n " << s.n << ")\n";
    }
    std::string b = speak::bottleneck_stage(r);
    if (!b.empty()) {
        os << "bottleneck " << b << ": it alone costs rtf_stage." << b << " = " << fmt(m.bound_overlap)
           << " per second of audio; no schedule can beat that without making " << b << " faster\n";
    }
    if (!out.wav_path.empty() && out.wav_path != "-") os << "wav       " << out.wav_path << "\n";
    if (!out.json_path.empty() && out.json_path != "-") os << "json      " << out.json_path << "\n";
    if (!out.trace_path.empty()) os << "trace     " << out.trace_path << " (open in ui.perfetto.dev)\n";
}

}  // namespace rtf::cli
