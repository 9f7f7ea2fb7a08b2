#include "quality/equivalence.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "quality/audio-checks.h"
#include "quality/resample.h"
#include "quality/spectrum.h"

namespace rtf::quality {

namespace {

double rms_of(const std::vector<float> &x) {
    double acc = 0;
    for (float v : x)
        if (std::isfinite(v)) acc += static_cast<double>(v) * v;
    return x.empty() ? 0.0 : std::sqrt(acc / static_cast<double>(x.size()));
}

}  // namespace

double log_mel_distance_db(const std::vector<float> &candidate, const std::vector<float> &baseline, int sample_rate) {
    if (candidate.empty() || baseline.empty()) return std::nan("");
    const Spectrogram sc = power_spectrogram(candidate.data(), candidate.size(), sample_rate, 25, 10);
    const Spectrogram sb = power_spectrogram(baseline.data(), baseline.size(), sample_rate, 25, 10);
    const double fmax = std::min(12000.0, sample_rate / 2.0);
    const double floor_p = std::max(max_band_power(sb, 80, 0, fmax) * 1e-8, 1e-20);
    const LogMel mc = log_mel(sc, 80, 0, fmax, floor_p), mb = log_mel(sb, 80, 0, fmax, floor_p);
    const int frames = std::min(mc.n_frames, mb.n_frames);
    if (frames == 0) return std::nan("");
    double total = 0;
    for (int t = 0; t < frames; ++t) {
        const float *a = mc.frame(t), *b = mb.frame(t);
        double sq = 0;
        for (int m = 0; m < mc.n_mels; ++m) {
            const double d = static_cast<double>(a[m]) - b[m];
            sq += d * d;
        }
        total += std::sqrt(sq / mc.n_mels);
    }
    return total / frames;
}

QualityReport compare_audio(const std::vector<float> &candidate_in, int candidate_rate,
                            const std::vector<float> &baseline, int baseline_rate, const QualityConfig &cfg) {
    if (candidate_rate <= 0 || baseline_rate <= 0) {
        throw_usage("compare_audio: sample rates must be > 0 (candidate " + std::to_string(candidate_rate) +
                    ", baseline " + std::to_string(baseline_rate) + ")");
    }
    cfg.validate();
    const std::vector<float> candidate = resample(candidate_in, candidate_rate, baseline_rate);
    const int sr = baseline_rate;
    QualityReport r;
    if (candidate.empty() || baseline.empty()) {
        const std::string why = std::string(candidate.empty() ? "candidate" : "baseline") + " has no samples";
        r.checks.push_back(make_check("duration_diff", "fraction", std::nan(""), "<=", cfg.max_duration_diff,
                                      candidate.empty() && baseline.empty(), why));
        r.checks.push_back(make_skipped("rms_ratio_db", "dB", "<=", cfg.max_rms_ratio_db, "skipped: " + why));
        r.checks.push_back(make_skipped("log_mel_distance_db", "dB", "<=", cfg.max_log_mel_distance_db,
                                        "skipped: " + why));
        return r;
    }
    const double len_c = static_cast<double>(candidate_in.size()) / candidate_rate;
    const double len_b = static_cast<double>(baseline.size()) / baseline_rate;
    const double dur = std::fabs(len_c / len_b - 1.0);
    r.checks.push_back(make_check("duration_diff", "fraction", dur, "<=", cfg.max_duration_diff,
                                  dur <= cfg.max_duration_diff,
                                  "candidate " + fmt(len_c, 4) + " s vs baseline " + fmt(len_b, 4) + " s"));

    const double rc = rms_of(candidate), rb = rms_of(baseline);
    const double ratio_db = (rc == 0 && rb == 0) ? 0.0 : to_dbfs(rc) - to_dbfs(rb);
    const bool level_ok = std::fabs(ratio_db) <= cfg.max_rms_ratio_db;
    r.checks.push_back(make_check("rms_ratio_db", "dB", std::fabs(ratio_db), "<=", cfg.max_rms_ratio_db, level_ok,
                                  std::string(level_ok ? "same level" : "level changed") + ": candidate " +
                                      fmt(std::fabs(ratio_db)) + " dB " + (ratio_db >= 0 ? "louder" : "quieter") +
                                      " than baseline"));

    const double lsd = log_mel_distance_db(candidate, baseline, sr);
    const bool spec_ok = lsd <= cfg.max_log_mel_distance_db;
    r.checks.push_back(make_check("log_mel_distance_db", "dB", lsd, "<=", cfg.max_log_mel_distance_db, spec_ok,
                                  lsd == 0 ? "spectra identical"
                                  : spec_ok ? "spectra match within " + fmt(cfg.max_log_mel_distance_db) + " dB"
                                            : "spectra differ: mean log-mel distance " + fmt(lsd) +
                                                  " dB"));
    return r;
}

double snr_db(const std::vector<float> &reference, const std::vector<float> &candidate) {
    if (reference.empty()) return std::numeric_limits<double>::quiet_NaN();
    double s = 0, n = 0;
    for (size_t i = 0; i < reference.size(); ++i) {
        const double r = reference[i];
        const double d = (i < candidate.size() ? static_cast<double>(candidate[i]) : 0.0) - r;
        s += r * r;
        n += d * d;
    }
    if (n == 0) return std::numeric_limits<double>::infinity();
    return 10.0 * std::log10(s / n);
}

}  // namespace rtf::quality
