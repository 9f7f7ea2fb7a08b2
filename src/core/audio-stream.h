#pragma once
// Encoding a stream of PCM chunks as they arrive, for a server's response body or a pipe:
// WAV (the streaming header: lengths unknown), raw PCM (s16le), FLAC, Ogg/Opus and MP3
// (libsndfile's encoders through virtual I/O). One header per stream; each chunk gives back
// the bytes ready to send now; finish() the rest.
//
//   AudioStreamEncoder enc(AudioFormat::Opus, 24000);
//   send(enc.begin());
//   for (chunk : chunks) send(enc.encode(chunk.data(), chunk.size()));
//   send(enc.finish());
//
// Sent bytes are final. The encoders that go back to patch a header at the end (FLAC's
// STREAMINFO, MP3's Xing/LAME tag; measured with libsndfile 1.2) cannot do so in a stream:
// those writes are dropped, and the stream stays valid with its length unknown, as every
// streamed FLAC or MP3 is. Ogg/Opus needs no patching. Opus runs at 8/12/16/24/48 kHz
// only; the constructor refuses other rates. Not thread-safe: one stream, one thread.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace rtf {

enum class AudioFormat { Wav, Pcm, Flac, Opus, Mp3 };

// "wav" | "pcm" | "flac" | "opus" | "mp3"; anything else: rtf::Error(Usage) naming `what`
// and the allowed values.
AudioFormat parse_audio_format(const std::string &name, const std::string &what);
const char *to_string(AudioFormat f);
// The HTTP Content-Type of a stream in this format (audio/wav, audio/pcm, audio/flac, audio/ogg, audio/mpeg).
const char *content_type(AudioFormat f);
// The formats this build's libsndfile can write (wav and pcm always).
std::vector<std::string> audio_format_names();

class AudioStreamEncoder {
public:
    // Throws rtf::Error(Setup) when libsndfile cannot write `format` (naming it and the
    // library version), rtf::Error(Usage) for a sample rate the format does not take.
    AudioStreamEncoder(AudioFormat format, int sample_rate);
    ~AudioStreamEncoder();
    AudioStreamEncoder(const AudioStreamEncoder &) = delete;
    AudioStreamEncoder &operator=(const AudioStreamEncoder &) = delete;

    std::string begin();                               // bytes before the first chunk
    std::string encode(const float *pcm, size_t n);    // mono samples in [-1, 1]
    std::string finish();                              // the stream's last bytes; idempotent

    AudioFormat format() const { return format_; }
    int64_t samples() const { return samples_; }

private:
    struct Sink;
    AudioFormat format_;
    int sample_rate_;
    int64_t samples_ = 0;
    bool finished_ = false;
    std::unique_ptr<Sink> sink_;
    void *file_ = nullptr;  // SNDFILE*, the encoded formats only
};

}  // namespace rtf
