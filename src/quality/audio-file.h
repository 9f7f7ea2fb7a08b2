#pragma once
// Loading audio for the quality checks: any file libsndfile reads (WAV of any bit depth,
// 8-bit included; float WAV keeps NaN/Inf so the nonfinite check sees them), mixed down
// to mono by channel average, at the file's own rate (the checks are rate-independent;
// ASR and comparisons resample where needed).
//
// Errors: rtf::Error(Usage) naming the path for a missing, unreadable, truncated-header
// or non-audio file. A valid file with 0 samples loads (the duration check fails on it).
// A file whose data chunk is cut short loads the samples present (libsndfile's reading);
// `frames_declared` vs samples.size() tells the difference.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rtf::quality {

struct MonoAudio {
    std::string path;
    int sample_rate = 0;
    int channels = 0;          // in the file, before mix-down
    std::string format;        // libsndfile's description
    std::vector<float> samples;

    double duration_s() const { return sample_rate > 0 ? static_cast<double>(samples.size()) / sample_rate : 0.0; }
    nlohmann::json to_json() const;  // path, rate, channels, format, frames, duration
};

MonoAudio load_mono_audio(const std::string &path);

}  // namespace rtf::quality
