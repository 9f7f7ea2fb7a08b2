#pragma once
// The family seam: a speech family whose engines are not MiniCPM-o 4.5's three (LLM -> TTS ->
// Token2Wav) plugs into the same speak path through this interface. load_engines() loads one
// when the kit says its family (kit.h), and speak() runs the stages it makes through the same
// pipeline, sink, metrics and result as MiniCPM-o's: rtf speak, rtf demo and everything that
// reads a SpeakResult work unchanged.
//
//   auto fam = load_family(kit, cfg);          // seconds; reused by every utterance
//   FamilyRun run = fam->stages(cfg);          // this utterance's stages, source first
//   run_pipeline(run.pointers(), request, sink, cfg.pipeline);
//   fam->engines_json();                       // load times, engine timings (SpeakResult::engines)
//
// A family's stages follow pipeline/stage.h: the source takes the request item (text =
// what to speak) and emits units (codes, latents); the last emits PCM items at sample_rate().
// Families today: "pocket-tts" (speak/pocket-stages.h), "qwen3-tts" (speak/qwen3-stages.h). MiniCPM-o 4.5 keeps its own path in
// speak.cpp (its text timing, voices, first-audio priority and decode batching are its own).
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/stage.h"
#include "speak/kit.h"
#include "speak/speak-config.h"

namespace rtf::speak {

struct FamilyRun {
    std::vector<std::unique_ptr<pipe::Stage>> stages;  // source first
    std::vector<pipe::Stage *> pointers() const {
        std::vector<pipe::Stage *> p;
        for (const auto &s : stages) p.push_back(s.get());
        return p;
    }
};

class FamilyEngines {
public:
    virtual ~FamilyEngines() = default;
    virtual std::string family() const = 0;
    virtual int sample_rate() const = 0;
    // The stages of one utterance with `cfg`'s per-utterance knobs (one utterance at a time).
    virtual FamilyRun stages(const SpeakConfig &cfg) = 0;
    // After a run: what the result's "engines" and "output" sections add (load times, timings,
    // text tokens, units made).
    virtual nlohmann::json engines_json() const = 0;
    virtual int64_t n_text_tokens() const = 0;
    virtual int64_t n_units() const = 0;  // latent frames / code frames made in the last run
    virtual double load_ms() const = 0;
};

// Whether a family kit's stages read the knob `name` (speak/knobs.h): the gen stage runs on the
// TTS placement (tts-threads, tts-cpus, tts-fa, ...: not tts-weight-type, the backbone loads as
// its file is), the decoder on the vocoder's threads and the Token2Wav stage's CPU set
// (t2w-threads-voc, t2w-cpus); the one queue is d1; plus the family-* knobs and the run's
// input, work size and seed. rtf tune offers a family kit only these.
bool family_reads_knob(const std::string &name);

// The engines of `kit`'s family (kit.family != "minicpmo45"); throws rtf::Error(Usage) for a
// family this build has no engines for.
std::unique_ptr<FamilyEngines> load_family(const Kit &kit, const SpeakConfig &cfg);

}  // namespace rtf::speak
