#include "models/apm/audio-input.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/resample.h"
#include "core/wav.h"
#include "models/apm/log-mel.h"

namespace rtf::apm {

AudioInput load_audio_16k(const std::string &path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw_setting("input", path + ": no such file");
    if (std::filesystem::is_directory(path, ec)) throw_setting("input", path + ": is a directory, not an audio file");
    WavData w = read_wav(path);  // names the path and libsndfile's reason when unreadable
    if (w.frames <= 0 || w.channels <= 0) throw_setting("input", path + ": holds no audio samples");
    AudioInput a;
    a.path = path;
    a.source_rate = w.sample_rate;
    a.source_channels = w.channels;
    a.samples = resample(w.mono(), w.sample_rate, kSampleRate);
    if (a.samples.empty()) throw_setting("input", path + ": no samples left at 16 kHz");
    return a;
}

std::vector<std::vector<float>> split_frames(const std::vector<float> &samples, size_t frame_samples) {
    if (frame_samples == 0) throw_usage("frame length: must be > 0 samples");
    std::vector<std::vector<float>> frames;
    for (size_t i = 0; i < samples.size(); i += frame_samples) {
        const size_t n = std::min(frame_samples, samples.size() - i);
        frames.emplace_back(samples.begin() + static_cast<std::ptrdiff_t>(i),
                            samples.begin() + static_cast<std::ptrdiff_t>(i + n));
    }
    return frames;
}

}  // namespace rtf::apm
