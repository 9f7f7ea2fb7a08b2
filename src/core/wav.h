#pragma once
// WAV input/output through libsndfile.
//
// WavWriter keeps the file valid at every moment: the header is rewritten after each
// write (SFC_SET_UPDATE_HEADER_AUTO), so a run stopped by Ctrl-C, a failed stage or a
// crash leaves a playable WAV holding every sample written so far.
#include <cstdint>
#include <string>
#include <vector>

namespace rtf {

enum class WavFormat { Pcm16, Float32 };

class WavWriter {
public:
    // Throws rtf::Error(Setup) naming the path when the file cannot be created.
    WavWriter(const std::string &path, int sample_rate, int channels = 1,
              WavFormat format = WavFormat::Pcm16);
    ~WavWriter();
    WavWriter(const WavWriter &) = delete;
    WavWriter &operator=(const WavWriter &) = delete;

    // Interleaved samples in [-1, 1] (values outside are clipped by libsndfile for PCM16).
    void write(const float *samples, size_t n_samples);
    void write(const std::vector<float> &samples) { write(samples.data(), samples.size()); }
    void close();  // idempotent

    int64_t frames_written() const { return frames_; }
    const std::string &path() const { return path_; }

private:
    std::string path_;
    void *file_ = nullptr;  // SNDFILE*
    int channels_ = 1;
    int64_t frames_ = 0;
};

struct WavData {
    int sample_rate = 0;
    int channels = 0;
    int64_t frames = 0;
    std::vector<float> samples;  // interleaved, float in [-1, 1]
    std::string format;          // libsndfile's description, e.g. "WAV (Microsoft) Signed 16 bit PCM"

    // Channel average (a mono copy); the samples themselves when already mono.
    std::vector<float> mono() const;
};

// Reads any file libsndfile understands. Throws rtf::Error(Usage) naming the path and
// libsndfile's reason for unreadable, truncated or non-audio files.
WavData read_wav(const std::string &path);

// Convenience: writes mono float samples as a 16-bit (default) or float WAV.
void write_wav(const std::string &path, const std::vector<float> &mono, int sample_rate,
               WavFormat format = WavFormat::Pcm16);

}  // namespace rtf
