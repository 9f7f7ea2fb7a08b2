#include "quality/audio-file.h"

#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "core/wav.h"

namespace rtf::quality {

nlohmann::json MonoAudio::to_json() const {
    return {{"path", path},     {"sample_rate", sample_rate},      {"channels", channels},
            {"format", format}, {"frames", samples.size()}, {"duration_s", duration_s()}};
}

MonoAudio load_mono_audio(const std::string &path) {
    // A directory or a missing path gets a plainer message than libsndfile's.
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw_usage("audio file " + path + " does not exist");
    if (std::filesystem::is_directory(path, ec)) throw_usage("audio file " + path + " is a directory, not a WAV file");
    WavData w = read_wav(path);
    MonoAudio a;
    a.path = path;
    a.sample_rate = w.sample_rate;
    a.channels = w.channels;
    a.format = w.format;
    a.samples = w.mono();
    return a;
}

}  // namespace rtf::quality
