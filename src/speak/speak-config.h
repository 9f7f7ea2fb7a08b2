#pragma once
// SpeakConfig — every knob of one speak-path run, in one struct (the knob table, knobs.h;
// docs/architecture.md). Each field is a flag of `rtf speak` / `rtf demo` and a key of the JSON
// result.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/lm/llm-engine.h"
#include "models/lm/tts-engine.h"
#include "models/t2w/t2w-config.h"
#include "pipeline/pipeline.h"

namespace rtf::speak {

// Where a stage's worker thread runs (the engine's compute threads are in its own config).
struct StagePlacement {
    std::vector<int> cpus;  // OS CPU ids; empty = no binding
    int numa_node = -1;     // -1 = none
};

// MiniCPM-o 4.5's audio token rate (docs/minicpmo45.md §3.4), owned by the TTS engine.
inline constexpr int kCodesPerSecond = lm::TtsEngine::codes_per_second();

// A pipeline stage's spec from its knobs: the worker's CPUs and NUMA node, the engine's threads and device.
pipe::StageSpec stage_spec(const char *name, int threads, const StagePlacement &p, const std::string &device);

// Knobs of the families other than MiniCPM-o 4.5 (family.h; Pocket TTS today). Their backbone
// runs with the TTS stage's placement (tts.placement), their decoder with t2w.threads_voc threads;
// the sampling seed is llm.seed (--seed).
struct FamilyKnobs {
    std::string speaker_file;  // reference voice the model clones (WAV/MP3/FLAC); "" = none
    int first_frames = 2;      // frames (80 ms of audio each) in the first PCM chunk
    int frames = 8;            // frames per PCM chunk once the sizes have doubled up from first_frames
                               // (llama.cpp's helper decodes 8 at a time)
    double temp = 0;           // noise temperature of the flow step; 0 = the model variant's
};

struct SpeakConfig {
    std::string models_dir;     // the kit (kit.h)
    // Input: exactly one of prompt (the LLM answers it) or text (forced as the reply: the
    // LLM only computes the hidden states the TTS conditions on; no sampling).
    std::string prompt;
    std::string text;
    std::string text_file;      // where `text` was read from ("" = given directly)

    lm::LlmConfig llm;          // model_path filled from the kit
    lm::TtsConfig tts;          // model_path / projector_path filled from the kit
    t2w::T2wConfig t2w;
    pipe::PipelineConfig pipeline;  // schedule, D1/D2, profiling, jitter buffer
    StagePlacement place_llm, place_tts, place_t2w;

    // Fixed work sizes for reproducible runs (twins rarely emit EOS):
    double max_audio_s = 0;     // stop once this much audio (25 codes per second) is made; 0 = no cap
    // The TTS may not end a turn (EOS masked) before this much audio; 0 = the reference's
    // sampling. With min = max the work size is exact whatever the weights (twins' EOS rate
    // is arbitrary). Sets tts.min_codes_per_turn.
    double min_audio_s = 0;
    // (the LLM's reply length cap is llm.max_tokens)
    // Twin kits only, prompt mode with a --max-audio-s cap: a random-weight LLM never ends
    // its turn and would write hundreds of text tokens for a few seconds of audio, a shape
    // no real model has (the reference speaks ~3-5 text tokens per second of audio). The
    // reply is cut at max(llm_step, ceil(twin_text_rate * max_audio_s)) tokens; the run
    // says so ("LLM stop: twin_text_cap"), and unless --min-audio-s is given the TTS's EOS
    // is masked until max_audio_s (load_engines), so the audio has the capped length and
    // not the twin's arbitrary one. Tokens per second of audio; 0 = off. Real kits are
    // never capped.
    double twin_text_rate = 4.0;
    // First-audio priority: until the first PCM is out, only the critical path computes.
    // The LLM, after its first step, computes another only when the TTS has used up its
    // text; the TTS, once it has handed on the codes of Token2Wav's first window, waits
    // for that window's PCM. Each wait is at most first_audio_wait_max_ms. So the TTS's
    // first codes and the first window get every core instead of sharing them with text
    // the listener does not need yet. Same math; costs the LLM and TTS that much head start
    // on the rest (watch starvation).
    bool first_audio_priority = false;
    // The bound on each of those waits. Not a knob: a safety net, so that a slow first window
    // (a loaded machine, a sanitizer build) costs head start, never a hang; tests that check
    // no wait ran out raise it so that the machine's speed cannot decide them.
    double first_audio_wait_max_ms = 5000;

    // The voice Token2Wav speaks with: "" or "default" = the kit's prompt cache
    // (token2wav-gguf/prompt_cache.gguf), else a name under the kit's voices/ (kit.h). Per
    // utterance: the engines keep every voice used once loaded (voices.h).
    std::string voice;
    // Output speed, 0.25..4 (OpenAI's `speed`): the PCM is time-stretched with its pitch kept
    // (core/time-stretch.h) on its way to the sink; 1 = the model's PCM untouched. The run's
    // metrics stay the model's (RTF of the audio the pipeline made); the result says how much
    // audio left after the stretch.
    double speed = 1.0;

    FamilyKnobs family;         // kit families other than MiniCPM-o 4.5 only

    // Throws rtf::Error(Usage) naming the flag.
    void validate() const;
    nlohmann::json to_json() const;
};

}  // namespace rtf::speak
