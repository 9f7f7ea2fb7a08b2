#pragma once
// Intelligibility through a real recogniser: pocketsphinx (Debian's 5prealpha C API) with
// its en-us acoustic model, language model and dictionary, run in-process. Audio at any
// rate is resampled to 16 kHz (libsamplerate) and decoded as one utterance.
//
// Model directory: AsrConfig::model_dir, else $RTF_ASR_MODEL_DIR, else the directory the
// pocketsphinx-en-us package installs (pkg-config pocketsphinx modeldir + "/en-us"). It
// must hold en-us/ (acoustic model), en-us.lm.bin and cmudict-en-us.dict.
//
// When rtfkit is built without pocketsphinx, asr_available() is false and asr_wer()
// reports the check as "skipped (no ASR)" — never a made-up number.
//
// Usage:
//   rtf::quality::Asr asr(rtf::quality::AsrConfig{});          // loads the model (~1 s)
//   auto r = rtf::quality::asr_wer(&asr, pcm, 24000, "the reference text", cfg);
//   r.check  // "wer_pct", pass/fail;  r.transcript, r.wer.wer_pct
//
// Thread-safety: an Asr decodes one utterance at a time; use one instance per thread.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quality/check.h"
#include "quality/quality-config.h"
#include "quality/wer.h"

namespace rtf::quality {

bool asr_available() noexcept;
// Empty when pocketsphinx is not built in.
std::string default_asr_model_dir();

struct AsrConfig {
    std::string model_dir;  // "" = $RTF_ASR_MODEL_DIR or the package's en-us directory

    std::string resolved_model_dir() const;
    // Throws rtf::Error(Setup) naming the missing file and how to point elsewhere
    // (--asr-model / RTF_ASR_MODEL_DIR), or that ASR is not built in.
    void validate() const;
    nlohmann::json to_json() const;
};

class Asr {
public:
    // Loads the model. Throws rtf::Error(Setup) as AsrConfig::validate(), or when
    // pocketsphinx refuses the model.
    explicit Asr(const AsrConfig &cfg);
    ~Asr();
    Asr(const Asr &) = delete;
    Asr &operator=(const Asr &) = delete;

    // Lowercase words as pocketsphinx hears them ("" for no speech). Throws
    // rtf::Error(Usage) for sample_rate <= 0, rtf::Error(Runtime) when decoding fails.
    std::string transcribe(const std::vector<float> &pcm, int sample_rate);
    const std::string &model_dir() const { return model_dir_; }

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string model_dir_;
};

struct AsrResult {
    bool ran = false;         // false: skipped (no ASR)
    std::string transcript;   // raw hypothesis
    WerResult wer;            // meaningful when ran
    CheckResult check;        // "wer_pct"

    // {"passed", "n_failed", "n_skipped", "checks": [the wer_pct check], "ran",
    //  "wer_pct": number or null, "transcript", "wer_detail": {...}} — the same section
    // shape as the audio/token checks, with the figure flat for scripts.
    nlohmann::json to_json() const;
};

// Transcribes and scores against `reference`. `asr` may be nullptr (-> skipped (no ASR)).
// Throws rtf::Error(Usage) when the reference has no words.
AsrResult asr_wer(Asr *asr, const std::vector<float> &pcm, int sample_rate, const std::string &reference,
                  const QualityConfig &cfg);

}  // namespace rtf::quality
