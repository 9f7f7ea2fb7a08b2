#pragma once
// Audio checks on mono PCM: does this output look like sane speech? Runs on a WAV file's
// samples (rtf quality) and on in-memory PCM after every bench/speak run.
//
// Checks, in report order (names are stable JSON ids; thresholds in QualityConfig):
//   duration_ms        >= min_duration_ms     no samples at all fails here; the rest are then skipped
//   nonfinite          <= max_nonfinite       NaN/Inf samples (other checks read them as 0)
//   peak               <= max_peak            largest |x|, linear full scale
//   clip_ratio         <= max_clip_ratio      share of samples with |x| >= clip_level
//   rms_dbfs           in [min, max]_rms_dbfs RMS of the whole signal, dB re full scale 1.0
//                                             (a full-scale sine is -3 dBFS)
//   dc_offset          <= max_dc_offset       |mean|
//   silence_ratio      <= max_silence_ratio   share of frame_ms frames below silence_dbfs
//   longest_silence_ms <= max_silence_ms      longest run of such frames
//   flatness           <= max_flatness        median spectral flatness of non-silent frames  [speech]
//   loop_ms            <= max_loop_ms         longest self-repeating stretch (fixed period)  [speech]
//   boundary_jump      <= max_boundary_jump_ratio  worst chunk-boundary step / local max step
// [speech]: skipped when cfg.expect_speech is false (twin models emit noise by design).
// boundary_jump is skipped when no chunk boundaries are given.
//
// Cost: O(n) plus ~(duration_s x 100 frames) x (up to 200 periods) x 80 bands for the loop
// search — about 50 ms for 30 s of audio on one core.
// Thread-safety: pure function.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "quality/check.h"
#include "quality/quality-config.h"

namespace rtf::quality {

// `chunk_boundaries`: sample indices where a new streamed chunk starts (0 and indices
// >= n are ignored). Throws rtf::Error(Usage) when sample_rate <= 0 or cfg is invalid.
QualityReport check_audio(const float *pcm, size_t n, int sample_rate,
                          const std::vector<int64_t> &chunk_boundaries = {},
                          const QualityConfig &cfg = QualityConfig{});
inline QualityReport check_audio(const std::vector<float> &pcm, int sample_rate,
                                 const std::vector<int64_t> &chunk_boundaries = {},
                                 const QualityConfig &cfg = QualityConfig{}) {
    return check_audio(pcm.data(), pcm.size(), sample_rate, chunk_boundaries, cfg);
}

// Boundaries every `chunk_ms` milliseconds (e.g. 1000 ms for 25-token chunks), for files
// whose chunking is known only by its period.
std::vector<int64_t> periodic_boundaries(size_t n, int sample_rate, double chunk_ms);

// 20 log10(max(x, 1e-10)): dBFS of a linear RMS, -200 for digital silence.
double to_dbfs(double linear);

}  // namespace rtf::quality
