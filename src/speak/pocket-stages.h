#pragma once
// Pocket TTS as the speak path's family (family.h): two stages over models/gen-audio's engines.
//
//   PocketGenStage     (source)  request text -> items of latent frames (Item::hidden, n_embd =
//                                32 per frame): family.first_frames in the first item, doubling
//                                up to family.frames; an item never spans two text chunks
//   PocketDecodeStage            latent items -> PCM items (24 kHz mono, 1920 samples a frame),
//                                the mimi decoder's state carried from item to item and reset
//                                where a later text chunk starts (Item::marks & kRestart)
//
// The work-size cap (--max-audio-s) stops the generator once that much audio is made.
// Sub-stage samples (profile/profiler.h): gen.prefill_ms, gen.ms_per_frame, decoder.ms_per_frame.
#include <memory>
#include <string>

#include "models/gen-audio/pocket-engine.h"
#include "pipeline/stage.h"
#include "speak/family.h"

namespace rtf::speak {

class PocketGenStage : public pipe::Stage {
public:
    static constexpr uint32_t kRestart = 1;  // Item::marks: the decoder restarts before this item
    PocketGenStage(pipe::StageSpec spec, pocket::PocketGenerator &gen, int first_frames, int frames, int64_t max_frames,
                   std::string voice = "default");
    void process(pipe::Item &&request, pipe::Emitter &out) override;
    void interrupt() noexcept override {}

private:
    pocket::PocketGenerator &gen_;
    int first_, every_;
    std::string voice_;
    int64_t max_frames_;
};

class PocketDecodeStage : public pipe::Stage {
public:
    PocketDecodeStage(pipe::StageSpec spec, pocket::MimiDecoder &dec, int n_latent, int sample_rate);
    void process(pipe::Item &&in, pipe::Emitter &out) override;

private:
    pocket::MimiDecoder &dec_;
    int n_latent_, sample_rate_;
};

// The loaded engines (FamilyEngines for kit family "pocket-tts").
class PocketFamily : public FamilyEngines {
public:
    PocketFamily(const Kit &kit, const SpeakConfig &cfg);
    std::string family() const override { return "pocket-tts"; }
    int sample_rate() const override { return gen_->sample_rate(); }
    FamilyRun stages(const SpeakConfig &cfg) override;
    nlohmann::json engines_json() const override;
    int64_t n_text_tokens() const override { return gen_->n_text_tokens(); }
    int64_t n_units() const override { return gen_->timings().n_frames; }
    double load_ms() const override { return load_ms_; }

private:
    std::unique_ptr<pocket::PocketGenerator> gen_;
    std::unique_ptr<pocket::MimiDecoder> dec_;
    double load_ms_ = 0;
};

}  // namespace rtf::speak
