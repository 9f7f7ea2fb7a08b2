#pragma once
// The speak path, end to end: load a kit's engines once, then speak any number of
// utterances through the pipeline (LLM -> TTS -> Token2Wav -> sink).
//
//   SpeakConfig cfg; cfg.models_dir = "kit"; cfg.prompt = "Hello";
//   cfg.validate();
//   auto engines = load_engines(cfg);                  // seconds; reuse across runs
//   WavWriter wav("out.wav", 24000);
//   auto r = speak(*engines, cfg, [&](const pipe::Item &c) { wav.write(c.pcm); });
//   std::cout << to_json(r).dump(2);                   // every DESIGN.md metric
//
// Errors: a bad kit or input -> rtf::Error(Usage) before anything runs; a stage failing
// mid-run -> rtf::Error naming the stage (pipeline.h), after the sink received every chunk
// made so far (so a WAV written by the sink stays valid and complete up to that point).
// Cancellation (cfg.pipeline.cancel) -> a result with run.cancelled = true.
// Thread-safety: one speak() at a time per Engines.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/lm/llm-engine.h"
#include "models/lm/tts-engine.h"
#include "models/t2w/t2w-model.h"
#include "pipeline/pipeline.h"
#include "speak/kit.h"
#include "speak/speak-config.h"

namespace rtf::speak {

struct Engines {
    Kit kit;
    std::unique_ptr<lm::LlmEngine> llm;
    std::unique_ptr<lm::TtsEngine> tts;
    std::unique_ptr<t2w::T2wModel> t2w;
    double load_ms_llm = 0, load_ms_tts = 0, load_ms_t2w = 0;
};

// Resolves and checks the kit, fills the model paths into `cfg`, loads the three engines.
std::unique_ptr<Engines> load_engines(SpeakConfig &cfg);

struct SpeakResult {
    pipe::RunResult run;             // metrics + per-chunk record (profile/metrics.h)
    nlohmann::json config;           // SpeakConfig::to_json()
    nlohmann::json engines;          // kit, load times, engine timings
    std::vector<int32_t> text_tokens;  // the LLM's reply (valid tokens)
    std::vector<int32_t> audio_codes;  // every code the TTS made
    std::string reply_text;
    std::string llm_stop;
    int64_t twin_text_cap = 0;         // the LLM reply cap applied on a twin (SpeakConfig::twin_text_rate), 0 = none
    int64_t n_chunks = 0;
    int64_t n_samples = 0;
    int sample_rate = 24000;
};

SpeakResult speak(Engines &engines, const SpeakConfig &cfg, const pipe::Sink &sink);

// The LLM reply cap speak() applies: on a twin kit in prompt mode with max_audio_s > 0 and
// twin_text_rate > 0, max(llm_step, ceil(rate * max_audio_s)) text tokens; else 0 (none).
int64_t twin_text_cap(const SpeakConfig &cfg, bool kit_is_twin);

nlohmann::json to_json(const SpeakResult &r);

// The stage with the largest rtf_stage.<s> (the wall when stages overlap), "" if none.
std::string bottleneck_stage(const SpeakResult &r);

}  // namespace rtf::speak
