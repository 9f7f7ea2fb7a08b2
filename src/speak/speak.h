#pragma once
// The speak path, end to end: load a kit's engines once, then speak any number of
// utterances through the pipeline (LLM -> TTS -> Token2Wav -> sink).
//
//   SpeakConfig cfg; cfg.models_dir = "kit"; cfg.prompt = "Hello";
//   cfg.validate();
//   auto engines = load_engines(cfg);                  // seconds; reuse across runs
//   cfg = engines->config;                             // with the kit's paths filled in
//   WavWriter wav("out.wav", 24000);
//   auto r = speak(*engines, cfg, [&](const pipe::Item &c) { wav.write(c.pcm); });
//   std::cout << to_json(r).dump(2);                   // every metric of docs/metrics.md
//
// Errors: a bad kit or input -> rtf::Error(Usage) before anything runs; a stage failing
// mid-run -> rtf::Error naming the stage (pipeline.h), after the sink received every chunk
// made so far (so a WAV written by the sink stays valid and complete up to that point).
// Cancellation (cfg.pipeline.cancel) -> a result with run.cancelled = true.
// Thread-safety: one speak() at a time per Engines.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/lm/llm-engine.h"
#include "models/lm/tts-engine.h"
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-stream.h"
#include "pipeline/pipeline.h"
#include "speak/family.h"
#include "speak/first-audio.h"
#include "speak/kit.h"
#include "speak/speak-config.h"
#include "speak/voices.h"

namespace rtf::speak {

// Loaded once, spoken with many times (demo, bench repetitions, a server): the models and
// a warm Token2Wav stream whose every graph shape is built at load (T2wStream::warm), so
// no utterance pays graph set-up. The stream serves the T2W config it was built for;
// speak() with another one rebuilds it (and says so: t2w_rebuilt in the result).
struct Engines {
    // The config the engines were built from: load_engines()'s argument with the kit's model
    // paths filled in and, on a twin whose reply is capped, the EOS mask at --max-audio-s
    // (min_audio_s). speak() takes it, or a copy whose per-utterance knobs differ.
    SpeakConfig config;
    Kit kit;
    std::unique_ptr<lm::LlmEngine> llm;
    std::unique_ptr<lm::TtsEngine> tts;
    std::shared_ptr<const t2w::T2wModel> t2w;  // read-only after load: engine sets may share one
    std::shared_ptr<VoiceSet> voices;          // the kit's voices on `t2w`, shared with it
    std::unique_ptr<t2w::T2wStream> t2w_stream;
    // A kit of another family (kit.family != "minicpmo45", family.h): its engines, and llm, tts,
    // t2w, voices and t2w_stream above stay empty. speak() runs its stages instead.
    std::unique_ptr<FamilyEngines> family;
    double load_ms_llm = 0, load_ms_tts = 0, load_ms_t2w = 0;
    double warm_ms_t2w = 0;  // building (and first-touching) the stream's graphs, within load_ms_t2w
};

// Decode batching across engine sets (rtf serve --batch on): the LLM and the TTS of every
// set that load_engines builds with the same DecodeBatching are sequences of one shared
// context each (models/lm/decode-batcher.h), their decode steps merged; the Token2Wav stream
// stays per set. The first load_engines makes the two batchers.
struct DecodeBatching {
    int n_streams = 2;       // sequences per context: the engine sets that will join
    double gather_ms = 2.0;  // BatcherConfig::gather_ms
    // Compute threads (decode and batch) of the shared LLM / TTS context; 0 = the first engine
    // set's placement. A shared context serves every stream, so a server whose slots each got
    // a share of the cores gives it the sum of the shares (serve --slot-threads).
    int llm_threads = 0, tts_threads = 0;
    std::shared_ptr<lm::DecodeBatcher> llm, tts;
    nlohmann::json stats_json() const;  // {"llm": BatcherStats, "tts": ...}
};

// Resolves and checks the kit, loads the three engines and warms the Token2Wav stream for
// cfg.t2w (with cfg.voice, so the first utterance pays no voice load). `cfg` is not changed:
// what loading derives from it (model paths, the twin's EOS mask) is in Engines::config. `share`: another engine set whose Token2Wav model and voices this set's
// stream is built on (a server's slots share one copy of the weights and of each voice;
// each slot keeps its own stream, LLM and TTS contexts); null = load them.
// `batching`: the LLM and TTS join its shared contexts instead (see DecodeBatching).
std::unique_ptr<Engines> load_engines(const SpeakConfig &cfg, const Engines *share = nullptr,
                                      DecodeBatching *batching = nullptr);

// Which text is spoken from which output sample (approximate): a piece of the reply (one LLM
// step's text) and the first output sample that can speak it. The TTS had sampled
// `first_code` codes when the piece was fed to it, so the codes from there on are the first it
// conditions; code i is output samples from (i + leading silence) x 960 on (Token2Wav: 25
// codes per second at 24 kHz, its stream primed with t2w.leading_silence silence codes),
// divided by speed. Approximate because the TTS may still be speaking earlier text with
// those codes (it looks ahead; MiniCPM-o's TTS is conditioned on text, not aligned to it).
struct TextTiming {
    std::string text;
    int64_t n_tokens = 0;
    int64_t first_code = 0;
    int64_t start_sample = 0;  // in the output (after speed)
    bool in_audio = true;      // false: its codes were never made (the audio cap came first)
};
using TextSink = std::function<void(const TextTiming &)>;

struct SpeakResult {
    std::string family = "minicpmo45";  // the kit's (kit.h); the JSON's "family"
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
    int sample_rate = t2w::T2wModel::sample_rate();
    FirstAudio first_audio;            // where the wait for the first chunk went
    int64_t t2w_graphs_built = 0;      // Token2Wav graphs built during this run (0 when warm)
    bool t2w_rebuilt = false;          // the stream was rebuilt for another T2W config
    std::string voice = "default";     // the voice spoken with (SpeakConfig::voice)
    double voice_switch_ms = 0;        // loading it (first use) and uploading it to the stream; 0 = already there
    double speed = 1.0;                // SpeakConfig::speed
    int64_t n_samples_out = 0;         // samples the sink received: n_samples / speed (n_samples at 1)
    std::vector<TextTiming> text_timing;  // every piece of the reply, in order
    int64_t family_units = 0;          // another family's units made (Pocket TTS: latent frames)
    int64_t family_text_tokens = 0;    // and the text tokens it spoke
};

// `on_text` (optional) gets each TextTiming on the sink's thread just before the chunk that
// holds its start sample goes to `sink` (those never reached: after the last chunk).
SpeakResult speak(Engines &engines, const SpeakConfig &cfg, const pipe::Sink &sink, const TextSink &on_text = {});

// The LLM reply cap speak() applies: on a twin kit in prompt mode with max_audio_s > 0 and
// twin_text_rate > 0, max(llm_step, ceil(rate * max_audio_s)) text tokens; else 0 (none).
int64_t twin_text_cap(const SpeakConfig &cfg, bool kit_is_twin);

nlohmann::json to_json(const SpeakResult &r);
// {"text", "n_tokens", "first_code", "start_sample", "start_s", "in_audio"}
nlohmann::json to_json(const TextTiming &t, int sample_rate);

// The stage with the largest rtf_stage.<s> (the wall when stages overlap), "" if none.
std::string bottleneck_stage(const SpeakResult &r);

}  // namespace rtf::speak
