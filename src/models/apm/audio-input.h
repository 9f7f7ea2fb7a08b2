#pragma once
// The duplex input's audio: any file libsndfile reads (WAV at any rate and channel count),
// as the 16 kHz mono float signal the audio encoder takes, cut into frames the way a duplex
// client sends them (1 s each by default; the last one shorter).
//
//   rtf::apm::AudioInput a = rtf::apm::load_audio_16k("speech.wav");  // any rate / channels
//   for (auto &frame : rtf::apm::split_frames(a.samples, 16000)) ...
//
// Mono = the channel average; the rate conversion is core's libsamplerate resampler (the
// reference decodes with miniaudio's resampler, so resampled inputs differ from it slightly;
// 16 kHz mono inputs are taken as they are).
// Errors: rtf::Error(Usage) naming the path for a missing, unreadable, non-audio or empty file.
#include <cstdint>
#include <string>
#include <vector>

namespace rtf::apm {

struct AudioInput {
    std::string path;
    int source_rate = 0;      // the file's sample rate
    int source_channels = 0;  // the file's channel count
    std::vector<float> samples;  // 16 kHz mono
    double seconds() const { return static_cast<double>(samples.size()) / 16000.0; }
};

AudioInput load_audio_16k(const std::string &path);

// Consecutive frames of `frame_samples` (> 0); the last holds the remainder (never empty).
std::vector<std::vector<float>> split_frames(const std::vector<float> &samples, size_t frame_samples);

}  // namespace rtf::apm
