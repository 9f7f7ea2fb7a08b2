#include "quality/asr.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "quality/resample.h"

#if RTF_HAVE_POCKETSPHINX
#include <pocketsphinx.h>
#include <err.h>
#endif

namespace rtf::quality {

namespace fs = std::filesystem;

bool asr_available() noexcept { return RTF_HAVE_POCKETSPHINX != 0; }

std::string default_asr_model_dir() {
#if RTF_HAVE_POCKETSPHINX
    return RTF_POCKETSPHINX_MODELDIR "/en-us";
#else
    return {};
#endif
}

std::string AsrConfig::resolved_model_dir() const {
    if (!model_dir.empty()) return model_dir;
    if (const char *env = std::getenv("RTF_ASR_MODEL_DIR"); env && *env) return env;
    return default_asr_model_dir();
}

void AsrConfig::validate() const {
    if (!asr_available()) throw_setup("ASR is not available: rtfkit was built without pocketsphinx "
                                      "(install libpocketsphinx-dev and pocketsphinx-en-us, then reconfigure)");
    const std::string dir = resolved_model_dir();
    for (const char *part : {"en-us/mdef", "en-us.lm.bin", "cmudict-en-us.dict"}) {
        const fs::path p = fs::path(dir) / part;
        if (!fs::exists(p)) {
            throw_setup("ASR model file " + p.string() + " not found; point --asr-model or RTF_ASR_MODEL_DIR at a "
                        "pocketsphinx en-us directory (holding en-us/, en-us.lm.bin, cmudict-en-us.dict)");
        }
    }
}

nlohmann::json AsrConfig::to_json() const {
    return {{"engine", asr_available() ? "pocketsphinx" : "none"}, {"model_dir", resolved_model_dir()}};
}

#if RTF_HAVE_POCKETSPHINX
struct Asr::Impl {
    cmd_ln_t *config = nullptr;
    ps_decoder_t *decoder = nullptr;
    ~Impl() {
        if (decoder) ps_free(decoder);
        if (config) cmd_ln_free_r(config);
    }
};
#else
struct Asr::Impl {};
#endif

Asr::Asr(const AsrConfig &cfg) : impl_(std::make_unique<Impl>()) {
    cfg.validate();
    model_dir_ = cfg.resolved_model_dir();
#if RTF_HAVE_POCKETSPHINX
    // pocketsphinx logs every parameter to stderr; the quality report is the output.
    err_set_logfp(nullptr);
    const std::string hmm = (fs::path(model_dir_) / "en-us").string();
    const std::string lm = (fs::path(model_dir_) / "en-us.lm.bin").string();
    const std::string dict = (fs::path(model_dir_) / "cmudict-en-us.dict").string();
    impl_->config = cmd_ln_init(nullptr, ps_args(), TRUE, "-hmm", hmm.c_str(), "-lm", lm.c_str(), "-dict",
                                dict.c_str(), "-logfn", "/dev/null", static_cast<char *>(nullptr));
    if (!impl_->config) throw_setup("pocketsphinx rejected its configuration for model " + model_dir_);
    impl_->decoder = ps_init(impl_->config);
    if (!impl_->decoder) throw_setup("pocketsphinx could not load the model in " + model_dir_);
#endif
}

Asr::~Asr() = default;

std::string Asr::transcribe(const std::vector<float> &pcm, int sample_rate) {
    if (sample_rate <= 0) throw_usage("ASR: sample rate " + std::to_string(sample_rate) + " must be > 0");
#if RTF_HAVE_POCKETSPHINX
    const std::vector<float> x16 = resample(pcm, sample_rate, 16000);
    std::vector<int16_t> s16(x16.size());
    for (size_t i = 0; i < x16.size(); ++i) {
        const float v = std::isfinite(x16[i]) ? std::clamp(x16[i], -1.0f, 1.0f) : 0.0f;
        s16[i] = static_cast<int16_t>(std::lrint(v * 32767.0f));
    }
    ps_decoder_t *ps = impl_->decoder;
    if (ps_start_utt(ps) < 0) throw_runtime("ASR: pocketsphinx could not start an utterance");
    if (!s16.empty() && ps_process_raw(ps, s16.data(), s16.size(), FALSE, TRUE) < 0) {
        ps_end_utt(ps);
        throw_runtime("ASR: pocketsphinx failed to decode " + std::to_string(s16.size()) + " samples");
    }
    if (ps_end_utt(ps) < 0) throw_runtime("ASR: pocketsphinx could not end the utterance");
    int32 score = 0;
    const char *hyp = ps_get_hyp(ps, &score);
    return hyp ? std::string(hyp) : std::string();
#else
    (void)pcm;
    throw_setup("ASR is not available: rtfkit was built without pocketsphinx");
#endif
}

nlohmann::json AsrResult::to_json() const {
    // The shape of every other check section (quality-report.h), plus the flat figure.
    QualityReport r;
    r.checks.push_back(check);
    nlohmann::json j = r.to_json();
    j["ran"] = ran;
    j["wer_pct"] = ran ? nlohmann::json(wer.wer_pct) : nlohmann::json(nullptr);
    if (ran) {
        j["transcript"] = transcript;
        j["wer_detail"] = wer.to_json();
    }
    return j;
}

AsrResult asr_wer(Asr *asr, const std::vector<float> &pcm, int sample_rate, const std::string &reference,
                  const QualityConfig &cfg) {
    AsrResult r;
    if (normalise_text(reference).empty()) throw_usage("reference text '" + reference + "' has no words to score against");
    if (!asr || !asr_available()) {
        r.check = make_skipped("wer_pct", "%", "<=", cfg.max_wer_pct, "skipped (no ASR)");
        return r;
    }
    r.transcript = asr->transcribe(pcm, sample_rate);
    r.wer = word_error_rate(reference, r.transcript);
    r.check = wer_check(r.wer, cfg);
    r.ran = true;
    return r;
}

}  // namespace rtf::quality
