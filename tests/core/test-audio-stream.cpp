// core/audio-stream.h: each format streamed chunk by chunk decodes (through libsndfile) to the
// audio that went in — WAV, PCM and FLAC sample for sample as to_s16 makes them, Opus and MP3
// within a lossy codec's bound — and the formats that patch a header at the end stay valid.
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/scratch-dir.h"
#include "core/audio-stream.h"
#include "core/error.h"
#include "core/wav.h"

using namespace rtf;

namespace {
std::vector<float> tone(size_t n, size_t offset) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = 0.4f * std::sin(2.0f * 3.14159265f * 440.0f * static_cast<float>(i + offset) / 24000.0f);
    return v;
}
// Streams 3 chunks of 1 s and returns the whole body.
std::string stream(AudioFormat f, std::vector<float> &all) {
    AudioStreamEncoder e(f, 24000);
    std::string body = e.begin();
    for (size_t c = 0; c < 3; ++c) {
        const auto pcm = tone(24000, c * 24000);
        all.insert(all.end(), pcm.begin(), pcm.end());
        body += e.encode(pcm.data(), pcm.size());
    }
    body += e.finish();
    EXPECT_EQ(e.finish(), "");  // idempotent
    EXPECT_EQ(e.samples(), 72000);
    return body;
}
// Signal-to-noise of `got` against `ref` at the best lag in 0..max_lag (codec delay), dB.
double snr_db(const std::vector<float> &ref, const std::vector<float> &got, size_t max_lag) {
    double best = -1e9;
    for (size_t lag = 0; lag <= max_lag && lag < got.size(); ++lag) {
        double s = 0, e = 0;
        for (size_t i = 0; i + lag < got.size() && i < ref.size(); ++i) {
            s += double(ref[i]) * ref[i];
            const double d = double(got[i + lag]) - ref[i];
            e += d * d;
        }
        best = std::max(best, 10 * std::log10(s / std::max(e, 1e-12)));
    }
    return best;
}
}  // namespace

TEST(AudioStream, EveryFormatDecodesToWhatWentIn) {
    rtf::test::ScratchDir dir("audio-stream");
    for (const auto &name : audio_format_names()) {
        const AudioFormat f = parse_audio_format(name, "format");
        if (f == AudioFormat::Pcm) continue;  // no container to decode: checked below
        std::vector<float> in;
        const std::string body = stream(f, in);
        const auto path = (dir.dir / ("s." + name)).string();
        std::ofstream(path, std::ios::binary) << body;
        const WavData d = read_wav(path);
        EXPECT_EQ(d.sample_rate, 24000) << name;
        EXPECT_EQ(d.channels, 1) << name;
        if (f == AudioFormat::Wav || f == AudioFormat::Flac) {
            ASSERT_EQ(d.samples.size(), in.size()) << name;
            for (size_t i = 0; i < in.size(); ++i)
                ASSERT_EQ(to_s16(d.samples[i]), to_s16(in[i])) << name << " sample " << i;
        } else {
            // lossy: the length within a codec frame or two of padding, the tone kept
            EXPECT_NEAR(static_cast<double>(d.samples.size()), static_cast<double>(in.size()), 2400.0) << name;
            EXPECT_GT(snr_db(in, d.samples, 2400), 10.0) << name;
        }
    }
}

TEST(AudioStream, PcmIsTheSamplesAndWavAddsOneHeader) {
    std::vector<float> in;
    const std::string pcm = stream(AudioFormat::Pcm, in);
    EXPECT_EQ(pcm, to_s16le(in.data(), in.size()));
    std::vector<float> in2;
    const std::string wav = stream(AudioFormat::Wav, in2);
    EXPECT_EQ(wav, wav_stream_header(24000, 1) + pcm);
}

TEST(AudioStream, NamesTypesAndRefusals) {
    EXPECT_STREQ(content_type(AudioFormat::Opus), "audio/ogg");
    EXPECT_STREQ(content_type(AudioFormat::Mp3), "audio/mpeg");
    EXPECT_STREQ(content_type(AudioFormat::Flac), "audio/flac");
    try {
        parse_audio_format("aac", "response_format");
        FAIL() << "aac accepted";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("response_format 'aac'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("wav"), std::string::npos) << e.what();
    }
    EXPECT_THROW(AudioStreamEncoder(AudioFormat::Opus, 22050), Error);  // Opus: 8/12/16/24/48 kHz only
    AudioStreamEncoder e(AudioFormat::Flac, 24000);
    e.finish();
    const float x = 0;
    EXPECT_THROW(e.encode(&x, 1), Error);
}
