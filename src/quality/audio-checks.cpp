#include "quality/audio-checks.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "quality/spectrum.h"

namespace rtf::quality {

double to_dbfs(double linear) { return 20.0 * std::log10(std::max(linear, 1e-10)); }

std::vector<int64_t> periodic_boundaries(size_t n, int sample_rate, double chunk_ms) {
    std::vector<int64_t> out;
    if (chunk_ms <= 0 || sample_rate <= 0) return out;
    const double step = chunk_ms * sample_rate / 1000.0;
    for (double b = step; b < static_cast<double>(n); b += step) out.push_back(static_cast<int64_t>(std::llround(b)));
    return out;
}

namespace {

float finite_or_zero(float v) { return std::isfinite(v) ? v : 0.0f; }

double segment_rms(const float *x, size_t begin, size_t end) {
    double acc = 0;
    for (size_t i = begin; i < end; ++i) {
        const double v = finite_or_zero(x[i]);
        acc += v * v;
    }
    return end > begin ? std::sqrt(acc / static_cast<double>(end - begin)) : 0.0;
}

std::string ms_text(double ms) { return fmt(ms / 1000.0, 3) + " s"; }

// Median spectral flatness of the frames whose RMS is above the silence threshold.
// Returns NaN when no frame qualifies.
double median_flatness(const float *x, size_t n, const Spectrogram &s, double silence_lin) {
    const double lo_hz = 50, hi_hz = std::min(8000.0, s.sample_rate / 2.0);
    std::vector<double> values;
    for (int t = 0; t < s.n_frames; ++t) {
        const size_t b = static_cast<size_t>(t) * static_cast<size_t>(s.hop);
        if (segment_rms(x, b, std::min(n, b + static_cast<size_t>(s.win))) < silence_lin) continue;
        const float *p = s.frame(t);
        double log_sum = 0, sum = 0;
        int count = 0;
        for (int k = 0; k < s.n_bins; ++k) {
            const double hz = s.bin_hz(k);
            if (hz < lo_hz || hz > hi_hz) continue;
            const double v = static_cast<double>(p[k]) + 1e-20;
            log_sum += std::log(v);
            sum += v;
            ++count;
        }
        if (count == 0 || sum <= 0) continue;
        values.push_back(std::exp(log_sum / count) / (sum / count));
    }
    if (values.empty()) return std::nan("");
    auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
    std::nth_element(values.begin(), mid, values.end());
    return *mid;
}

struct LoopFinding {
    double duration_ms = 0;
    double period_ms = 0;
    double start_ms = 0;
};

// Longest stretch of non-silent log-mel frames that equals itself shifted by a fixed
// period k (20 ms .. 2 s) for at least two periods.
LoopFinding find_loop(const float *x, size_t n, const Spectrogram &s, double silence_lin, double frame_db) {
    LoopFinding best;
    if (s.n_frames < 4) return best;
    const double fmax = std::min(8000.0, s.sample_rate / 2.0);
    // Floor 80 dB below the peak band so near-silent bands compare as equal floors.
    const double floor_p = std::max(max_band_power(s, 80, 0, fmax) * 1e-8, 1e-20);
    const LogMel mel = log_mel(s, 80, 0, fmax, floor_p);
    std::vector<char> voiced(static_cast<size_t>(mel.n_frames));
    for (int t = 0; t < mel.n_frames; ++t) {
        const size_t b = static_cast<size_t>(t) * static_cast<size_t>(s.hop);
        voiced[static_cast<size_t>(t)] = segment_rms(x, b, std::min(n, b + static_cast<size_t>(s.win))) >= silence_lin;
    }
    const int max_lag = std::min(200, mel.n_frames / 2);
    const double limit = frame_db * mel.n_mels;
    for (int k = 2; k <= max_lag; ++k) {
        int run = 0;
        for (int t = 0; t + k < mel.n_frames; ++t) {
            bool same = voiced[static_cast<size_t>(t)] && voiced[static_cast<size_t>(t + k)];
            if (same) {
                const float *a = mel.frame(t), *b = mel.frame(t + k);
                double d = 0;
                for (int m = 0; m < mel.n_mels && d <= limit; ++m) d += std::fabs(a[m] - b[m]);
                same = d <= limit;
            }
            run = same ? run + 1 : 0;
            if (run >= k) {
                const double dur = (run + k) * mel.hop_ms;
                if (dur > best.duration_ms) {
                    best.duration_ms = dur;
                    best.period_ms = k * mel.hop_ms;
                    best.start_ms = (t - run + 1) * mel.hop_ms;
                }
            }
        }
    }
    return best;
}

}  // namespace

QualityReport check_audio(const float *x, size_t n, int sample_rate, const std::vector<int64_t> &chunk_boundaries,
                          const QualityConfig &cfg) {
    if (sample_rate <= 0) throw_usage("check_audio: sample rate " + std::to_string(sample_rate) + " must be > 0");
    cfg.validate();
    QualityReport r;
    const double sr = sample_rate;
    const double duration_ms = 1000.0 * static_cast<double>(n) / sr;
    r.checks.push_back(make_check("duration_ms", "ms", duration_ms, ">=", cfg.min_duration_ms,
                                  duration_ms >= cfg.min_duration_ms,
                                  n == 0 ? "no samples: the output is empty"
                                         : duration_ms >= cfg.min_duration_ms ? "audio present"
                                                                             : "too short to be an utterance"));
    if (n == 0) {
        for (const char *name : {"nonfinite", "peak", "clip_ratio", "rms_dbfs", "dc_offset", "silence_ratio",
                                 "longest_silence_ms", "flatness", "loop_ms", "boundary_jump"}) {
            r.checks.push_back(make_skipped(name, "", "", std::nan(""), "skipped: no samples"));
        }
        return r;
    }

    // One pass for the sample statistics.
    size_t nonfinite = 0, clipped = 0;
    double peak = 0, sum = 0, sum_sq = 0;
    for (size_t i = 0; i < n; ++i) {
        const float v = x[i];
        if (!std::isfinite(v)) {
            ++nonfinite;
            continue;
        }
        const double a = std::fabs(static_cast<double>(v));
        peak = std::max(peak, a);
        clipped += a >= cfg.clip_level;
        sum += v;
        sum_sq += static_cast<double>(v) * v;
    }
    const double dn = static_cast<double>(n);
    r.checks.push_back(make_check("nonfinite", "count", static_cast<double>(nonfinite), "<=", cfg.max_nonfinite,
                                  static_cast<double>(nonfinite) <= cfg.max_nonfinite,
                                  nonfinite == 0 ? "all samples finite"
                                                 : std::to_string(nonfinite) +
                                                       " NaN/Inf samples: the graph produced non-numbers"));
    r.checks.push_back(make_check("peak", "linear", peak, "<=", cfg.max_peak, peak <= cfg.max_peak,
                                  peak <= cfg.max_peak ? "within full scale"
                                                       : "peak " + fmt(peak) + " exceeds full scale: players will clip"));
    const double clip_ratio = static_cast<double>(clipped) / dn;
    r.checks.push_back(make_check("clip_ratio", "fraction", clip_ratio, "<=", cfg.max_clip_ratio,
                                  clip_ratio <= cfg.max_clip_ratio,
                                  clip_ratio <= cfg.max_clip_ratio
                                      ? std::to_string(clipped) + " samples at full scale"
                                      : "clipped: " + fmt(100 * clip_ratio) + " % of samples at |x| >= " +
                                            fmt(cfg.clip_level, 4) + " (saturated output)"));
    const double rms_db = to_dbfs(std::sqrt(sum_sq / dn));
    if (rms_db > cfg.max_rms_dbfs) {
        r.checks.push_back(make_check("rms_dbfs", "dBFS", rms_db, "<=", cfg.max_rms_dbfs, false,
                                      "too loud: RMS " + fmt(rms_db) + " dBFS above " + fmt(cfg.max_rms_dbfs) +
                                          " dBFS (saturated or DC-stuck)"));
    } else {
        const bool ok = rms_db >= cfg.min_rms_dbfs;
        r.checks.push_back(make_check("rms_dbfs", "dBFS", rms_db, ">=", cfg.min_rms_dbfs, ok,
                                      ok ? "level within " + fmt(cfg.min_rms_dbfs) + " .. " + fmt(cfg.max_rms_dbfs) +
                                               " dBFS"
                                         : (rms_db <= -199 ? std::string("silent: every sample is zero")
                                                           : "too quiet: RMS " + fmt(rms_db) + " dBFS below " +
                                                                 fmt(cfg.min_rms_dbfs) + " dBFS")));
    }
    const double dc = std::fabs(sum / dn);
    r.checks.push_back(make_check("dc_offset", "linear", dc, "<=", cfg.max_dc_offset, dc <= cfg.max_dc_offset,
                                  dc <= cfg.max_dc_offset ? "no DC bias"
                                                          : "DC offset " + fmt(dc) + ": biased or stuck output"));

    // Silence on non-overlapping frames (a last partial frame counts if it holds samples).
    const size_t frame = std::max<size_t>(1, static_cast<size_t>(std::lround(cfg.frame_ms * sr / 1000.0)));
    const double silence_lin = std::pow(10.0, cfg.silence_dbfs / 20.0);
    size_t n_frames = 0, n_silent = 0, run = 0, longest = 0, longest_start = 0;
    for (size_t b = 0; b < n; b += frame) {
        const size_t e = std::min(n, b + frame);
        ++n_frames;
        if (segment_rms(x, b, e) < silence_lin) {
            ++n_silent;
            if (++run > longest) {
                longest = run;
                longest_start = b + frame - run * frame;
            }
        } else {
            run = 0;
        }
    }
    const double silence_ratio = static_cast<double>(n_silent) / static_cast<double>(n_frames);
    r.checks.push_back(make_check("silence_ratio", "fraction", silence_ratio, "<=", cfg.max_silence_ratio,
                                  silence_ratio <= cfg.max_silence_ratio,
                                  (silence_ratio <= cfg.max_silence_ratio ? "" : "mostly silent: ") +
                                      fmt(100 * silence_ratio) + " % of " + fmt(cfg.frame_ms) + " ms frames below " +
                                      fmt(cfg.silence_dbfs) + " dBFS"));
    const double longest_ms = std::min(static_cast<double>(longest * frame), dn) * 1000.0 / sr;
    r.checks.push_back(make_check(
        "longest_silence_ms", "ms", longest_ms, "<=", cfg.max_silence_ms, longest_ms <= cfg.max_silence_ms,
        longest == 0 ? "no silent frame"
                     : (longest_ms <= cfg.max_silence_ms ? "longest pause " : "gap: silence of ") + ms_text(longest_ms) +
                           " starting at " + ms_text(1000.0 * static_cast<double>(longest_start) / sr)));

    // Speech-likeness: spectral flatness and self-repetition.
    if (!cfg.expect_speech) {
        r.checks.push_back(make_skipped("flatness", "ratio", "<=", cfg.max_flatness, "skipped: expect_speech is off"));
        r.checks.push_back(make_skipped("loop_ms", "ms", "<=", cfg.max_loop_ms, "skipped: expect_speech is off"));
    } else {
        const Spectrogram spec = power_spectrogram(x, n, sample_rate, 25, 10);
        const double flat = median_flatness(x, n, spec, silence_lin);
        if (std::isnan(flat)) {
            r.checks.push_back(make_skipped("flatness", "ratio", "<=", cfg.max_flatness,
                                            "skipped: no frame above the silence threshold"));
        } else {
            const bool ok = flat <= cfg.max_flatness;
            r.checks.push_back(make_check("flatness", "ratio", flat, "<=", cfg.max_flatness, ok,
                                          ok ? "spectrum has speech-like structure"
                                             : "noise-like: median spectral flatness " + fmt(flat) +
                                                   " (white noise ≈ 0.56, voiced speech < 0.1)"));
        }
        const LoopFinding loop = find_loop(x, n, spec, silence_lin, cfg.loop_frame_db);
        const bool ok = loop.duration_ms <= cfg.max_loop_ms;
        r.checks.push_back(make_check(
            "loop_ms", "ms", loop.duration_ms, "<=", cfg.max_loop_ms, ok,
            loop.duration_ms == 0 ? "no repeating stretch"
                                  : std::string(ok ? "longest repeat " : "audio loop: ") + ms_text(loop.duration_ms) +
                                        " repeating every " + fmt(loop.period_ms) + " ms from " +
                                        ms_text(loop.start_ms)));
    }

    // Chunk boundaries: the step at the boundary vs the largest step next to it.
    std::vector<int64_t> bounds;
    for (int64_t b : chunk_boundaries)
        if (b > 0 && static_cast<size_t>(b) < n) bounds.push_back(b);
    if (bounds.empty()) {
        r.checks.push_back(make_skipped("boundary_jump", "ratio", "<=", cfg.max_boundary_jump_ratio,
                                        "skipped: no chunk boundaries given"));
    } else {
        const int64_t w = std::max<int64_t>(2, std::llround(0.0025 * sr));
        const int64_t sn = static_cast<int64_t>(n);
        double worst = 0;
        int64_t worst_at = -1;
        int n_bad = 0;
        auto step = [&](int64_t i) {
            return std::fabs(static_cast<double>(finite_or_zero(x[i])) - finite_or_zero(x[i - 1]));
        };
        for (int64_t b : bounds) {
            const double jump = step(b);
            double local = 0;
            for (int64_t i = std::max<int64_t>(1, b - w); i <= std::min(sn - 1, b + w); ++i)
                if (i != b) local = std::max(local, step(i));
            const double ratio = jump / std::max(local, 1e-9);
            if (jump < cfg.min_boundary_jump) continue;
            if (ratio > cfg.max_boundary_jump_ratio) ++n_bad;
            if (ratio > worst) {
                worst = ratio;
                worst_at = b;
            }
        }
        const bool ok = n_bad == 0;
        r.checks.push_back(make_check(
            "boundary_jump", "ratio", worst, "<=", cfg.max_boundary_jump_ratio, ok,
            ok ? std::to_string(bounds.size()) + " chunk boundaries continuous"
               : "discontinuity at " + std::to_string(n_bad) + " of " + std::to_string(bounds.size()) +
                     " chunk boundaries; worst at " + ms_text(1000.0 * static_cast<double>(worst_at) / sr) + " jumps " +
                     fmt(worst) + "x the local sample step"));
    }
    return r;
}

}  // namespace rtf::quality
