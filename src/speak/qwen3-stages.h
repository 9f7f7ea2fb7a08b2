#pragma once
// Qwen3-TTS as the speak path's family (family.h): two stages over models/gen-audio's engines.
//
//   Qwen3GenStage     (source)  request text -> items of code frames (Item::audio_tokens, 16 codes a
//                               frame): family.first_frames in the first item, doubling up to
//                               family.frames
//   Qwen3DecodeStage            code items -> PCM items (24 kHz mono, 1920 samples a frame): code2wav
//                               streamed (qwen3tts-engine.h: each call decodes its 72-frame window
//                               again, so small chunks cost whole windows)
//
// The talker's sampler: llama-tts's defaults, --seed, --family-temp (0 = 0.8). --max-audio-s caps the
// frames. --speaker-file: a reference voice, its x-vector encoded once at load (fixed for the engines).
// Sub-stage samples: gen.prefill_ms, gen.ms_per_frame, decoder.ms_per_frame.
#include <memory>
#include <string>

#include "models/gen-audio/qwen3tts-engine.h"
#include "pipeline/stage.h"
#include "speak/family.h"

namespace rtf::speak {

class Qwen3GenStage : public pipe::Stage {
public:
    Qwen3GenStage(pipe::StageSpec spec, gen_audio::Qwen3Generator &gen, int first_frames, int frames,
                  std::string voice = "default");
    void process(pipe::Item &&request, pipe::Emitter &out) override;

private:
    gen_audio::Qwen3Generator &gen_;
    int first_, every_;
    std::string voice_;
};

class Qwen3DecodeStage : public pipe::Stage {
public:
    Qwen3DecodeStage(pipe::StageSpec spec, gen_audio::Code2Wav &dec);
    void process(pipe::Item &&in, pipe::Emitter &out) override;

private:
    gen_audio::Code2Wav &dec_;
};

class Qwen3Family : public FamilyEngines {
public:
    Qwen3Family(const Kit &kit, const SpeakConfig &cfg);
    std::string family() const override { return "qwen3-tts"; }
    int sample_rate() const override { return 24000; }
    FamilyRun stages(const SpeakConfig &cfg) override;
    nlohmann::json engines_json() const override;
    int64_t n_text_tokens() const override { return gen_->n_prompt_rows(); }
    int64_t n_units() const override { return gen_->n_frames(); }
    double load_ms() const override { return load_ms_; }

private:
    std::unique_ptr<gen_audio::Qwen3Generator> gen_;
    std::unique_ptr<gen_audio::Code2Wav> dec_;
    double load_ms_ = 0;
};

}  // namespace rtf::speak
