#pragma once
// The family seam: every speech family plugs into the speak path through one shape, a
// FamilyRun per utterance: its stages (source first), the request's input, and optional hooks
// around the pipeline. speak() (speak.h) runs any FamilyRun through the same pipeline, sink,
// metrics and result:
//
//   FamilyRun run = minicpmo45_run(engines, cfg, on_text);   // MiniCPM-o 4.5 (minicpmo45-run.h)
//   FamilyRun run = engines.family->stages(cfg);             // another family (FamilyEngines)
//   run_pipeline(run.pointers(), {input}, run.wrap_sink(sink), cfg.pipeline); run.finish(result);
//
// Implementations: MiniCPM-o 4.5 (speak/minicpmo45-run.h: LLM -> TTS -> Token2Wav, its text
// timing, voices, first-audio priority, speed and decode batching; its engines live in Engines),
// "pocket-tts" (speak/pocket-stages.h) and "qwen3-tts" (speak/qwen3-stages.h), whose engines
// load through FamilyEngines below (load_engines() does it when the kit says its family, kit.h).
//
// A family's stages follow pipeline/stage.h: the source takes the request item (text = what to
// speak) and emits units (codes, latents); the last emits PCM items at its sample rate.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/pipeline.h"
#include "pipeline/stage.h"
#include "speak/kit.h"
#include "speak/speak-config.h"

namespace rtf::speak {

struct SpeakResult;

struct FamilyRun {
    std::vector<std::unique_ptr<pipe::Stage>> stages;  // source first
    std::string input;                                 // the request item's text
    // Optional hooks (empty: chunks go to the caller's sink as they are; nothing added):
    // the sink the pipeline feeds, made from the one the caller gives (MiniCPM-o: text timing
    // and time-stretch on the way out), and after the pipeline the family's result fields
    // (and what it still owes that sink: the stretch's tail).
    std::function<pipe::Sink(const pipe::Sink &out)> wrap_sink;
    std::function<void(SpeakResult &r)> finish;
    std::shared_ptr<void> state;                       // what the stages and hooks share, kept alive for the run
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

// The voice an utterance of a family kit speaks with: cfg.voice ("" = "default", the load-time
// --speaker-file or the model's own) if `loaded` has it (the kit's voices/NAME.wav are loaded
// with the engines); else rtf::Error(Usage) on --voice naming the loaded ones. A
// cfg.family.speaker_file other than the engines' `load_speaker` is rtf::Error(Usage) too
// (the default voice is encoded at load).
std::string family_voice(const SpeakConfig &cfg, const std::string &load_speaker, const std::vector<std::string> &loaded);

// The engines of `kit`'s family (kit.family != "minicpmo45"); throws rtf::Error(Usage) for a
// family this build has no engines for.
std::unique_ptr<FamilyEngines> load_family(const Kit &kit, const SpeakConfig &cfg);

}  // namespace rtf::speak
