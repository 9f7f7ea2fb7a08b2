#include "speak/qwen3-stages.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "profile/profiler.h"

namespace rtf::speak {

namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr double kFrameMs = 80.0;  // 1920 samples at 24 kHz

}  // namespace

Qwen3GenStage::Qwen3GenStage(pipe::StageSpec spec, gen_audio::Qwen3Generator &gen, int first_frames, int frames,
                             std::string voice)
    : Stage(std::move(spec)), gen_(gen), first_(first_frames), every_(frames), voice_(std::move(voice)) {}

void Qwen3GenStage::process(pipe::Item &&request, pipe::Emitter &out) {
    const double t0 = now_ms();
    gen_.start(request.text, voice_);
    prof::record("gen.prefill_ms", now_ms() - t0);
    pipe::Item item;
    int want = first_;
    gen_audio::Qwen3Frame f;
    double t = now_ms();
    while (gen_.next(f)) {
        const double t1 = now_ms();
        prof::record("gen.ms_per_frame", t1 - t);
        t = t1;
        item.audio_tokens.insert(item.audio_tokens.end(), f.codes.begin(), f.codes.end());
        if (static_cast<int>(item.audio_tokens.size() / gen_audio::Code2Wav::kCodes) >= want) {
            item.audio_ms = kFrameMs * static_cast<double>(item.audio_tokens.size() / gen_audio::Code2Wav::kCodes);
            out.emit(std::move(item));
            item = pipe::Item{};
            want = std::min(every_, 2 * want);  // as Pocket TTS's stage: sizes double up to family-frames
            t = now_ms();
        }
    }
    item.last = true;
    if (!item.audio_tokens.empty()) {
        item.audio_ms = kFrameMs * static_cast<double>(item.audio_tokens.size() / gen_audio::Code2Wav::kCodes);
        out.emit(std::move(item));
    }
}

Qwen3DecodeStage::Qwen3DecodeStage(pipe::StageSpec spec, gen_audio::Code2Wav &dec) : Stage(std::move(spec)), dec_(dec) {}

void Qwen3DecodeStage::process(pipe::Item &&in, pipe::Emitter &out) {
    const size_t n = in.audio_tokens.size() / gen_audio::Code2Wav::kCodes;
    const double t0 = now_ms();
    pipe::Item o;
    o.pcm = dec_.decode(in.audio_tokens.data(), n);
    if (n > 0) prof::record("decoder.ms_per_frame", (now_ms() - t0) / static_cast<double>(n));
    o.sample_rate = 24000;
    o.audio_ms = 1000.0 * static_cast<double>(o.pcm.size()) / o.sample_rate;
    o.last = in.last;
    out.emit(std::move(o));
}

Qwen3Family::Qwen3Family(const Kit &kit, const SpeakConfig &cfg) {
    const auto t0 = std::chrono::steady_clock::now();
    gen_audio::Qwen3Config c;
    c.backbone_path = kit.backbone;
    c.mmproj_path = kit.mmproj;
    c.placement = cfg.tts.placement;
    c.seed = cfg.llm.seed;
    c.speaker_file = cfg.family.speaker_file;
    if (cfg.family.temp > 0) c.temp = static_cast<float>(cfg.family.temp);
    gen_ = std::make_unique<gen_audio::Qwen3Generator>(c);
    for (const auto &[name, file] : kit.voices) gen_->add_voice(name, file);  // voices/NAME.wav, encoded once
    dec_ = std::make_unique<gen_audio::Code2Wav>(*gen_, cfg.t2w.threads_voc);
    load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

FamilyRun Qwen3Family::stages(const SpeakConfig &cfg) {
    const std::string voice = family_voice(cfg, gen_->config().speaker_file, gen_->voice_names());
    dec_->reset();
    FamilyRun r;
    // The frame cap lives in the generator's config: the stage asks for it per utterance.
    const int64_t cap = cfg.max_audio_s > 0 ? static_cast<int64_t>(std::ceil(cfg.max_audio_s * 1000.0 / kFrameMs - 1e-9)) : 0;
    gen_->set_max_frames(static_cast<int>(cap));
    r.stages.push_back(std::make_unique<Qwen3GenStage>(
        stage_spec("gen", cfg.tts.placement.threads(), cfg.place_tts, cfg.tts.placement.device), *gen_,
        cfg.family.first_frames, cfg.family.frames, voice));
    r.stages.push_back(std::make_unique<Qwen3DecodeStage>(
        stage_spec("decoder", cfg.t2w.threads_voc, cfg.place_t2w, cfg.tts.placement.device), *dec_));
    return r;
}

nlohmann::json Qwen3Family::engines_json() const {
    return {{"family", "qwen3-tts"},
            {"seed", gen_->config().seed},
            {"voices", gen_->voice_names()},
            {"temp", gen_->config().temp},
            {"speaker_file", gen_->config().speaker_file},
            {"voice_ms", gen_->voice_ms()},
            {"n_prompt_rows", gen_->n_prompt_rows()},
            {"gen", {{"n_frames", gen_->n_frames()}, {"load_ms", load_ms_}}}};
}

}  // namespace rtf::speak
