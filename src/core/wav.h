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

    // Interleaved samples in [-1, 1] (PCM16: converted by to_s16, so values outside are clipped).
    void write(const float *samples, size_t n_samples);
    void write(const std::vector<float> &samples) { write(samples.data(), samples.size()); }
    void close();  // idempotent

    int64_t frames_written() const { return frames_; }
    const std::string &path() const { return path_; }

private:
    std::string path_;
    void *file_ = nullptr;  // SNDFILE*
    int channels_ = 1;
    WavFormat format_ = WavFormat::Pcm16;
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

// The one float -> 16-bit conversion (WavWriter's Pcm16 files use it too, not libsndfile's):
// clipped to [-1, 1], scaled by 32767, rounded to nearest; NaN/Inf -> 0. So raw PCM on
// stdout, a server's stream and a WAV file of one run hold the same samples.
int16_t to_s16(float v);
// Little-endian bytes of to_s16 of each sample.
std::string to_s16le(const float *samples, size_t n_samples);
inline std::string to_s16le(const std::vector<float> &s) { return to_s16le(s.data(), s.size()); }

// A 44-byte RIFF/WAVE header for 16-bit PCM whose length is not known yet (a stream):
// the RIFF and data sizes are 0xFFFFFFFF, which players and libsndfile read as "until the
// end of the stream".
std::string wav_stream_header(int sample_rate, int channels = 1);

// Convenience: writes mono float samples as a 16-bit (default) or float WAV.
void write_wav(const std::string &path, const std::vector<float> &mono, int sample_rate,
               WavFormat format = WavFormat::Pcm16);

}  // namespace rtf
