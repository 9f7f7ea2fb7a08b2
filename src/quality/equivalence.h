#pragma once
// Equivalence against a baseline run: what "quality unchanged" means for a change that
// should not alter the output (threads, placement, queue depth, F16 vs F32 buffers) and
// for twins, whose audio is noise and can only be compared, not judged.
//
// Audio checks (names are stable JSON ids; thresholds in QualityConfig):
//   duration_diff        <= max_duration_diff        |len_c / len_b - 1|
//   rms_ratio_db         <= max_rms_ratio_db         |20 log10(RMS_c / RMS_b)|
//   log_mel_distance_db  <= max_log_mel_distance_db  mean over frames of the RMS over 80 mel
//                                                    bands of the dB difference (log-spectral
//                                                    distance), 25 ms Hann / 10 ms hop, both
//                                                    floored 80 dB below the baseline's peak band;
//                                                    frames compared up to the shorter length
// Token ids: compare_tokens() in token-checks.h.
//
// The candidate is resampled to the baseline's rate when the rates differ.
// Thread-safety: pure function.
#include <vector>

#include "quality/check.h"
#include "quality/quality-config.h"

namespace rtf::quality {

// Throws rtf::Error(Usage) for non-positive rates or an invalid cfg.
QualityReport compare_audio(const std::vector<float> &candidate, int candidate_rate,
                            const std::vector<float> &baseline, int baseline_rate,
                            const QualityConfig &cfg = QualityConfig{});

// The log-spectral distance alone (dB), as used by compare_audio; both at `sample_rate`.
// Returns NaN when either signal is empty.
double log_mel_distance_db(const std::vector<float> &candidate, const std::vector<float> &baseline,
                           int sample_rate);

// Signal-to-noise ratio of `candidate` against `reference`, dB: 10 log10(sum r^2 / sum
// (c - r)^2) over the reference's length (missing candidate samples count as 0). The
// fidelity figure of a changed-math path (compute types, fewer flow steps) against the
// reference path on the same input. +inf when identical; NaN when the reference is empty.
double snr_db(const std::vector<float> &reference, const std::vector<float> &candidate);

}  // namespace rtf::quality
