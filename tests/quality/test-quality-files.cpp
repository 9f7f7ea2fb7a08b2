// Reading files for the quality checks: every odd file gives a clear rtf::Error(Usage)
// naming the path, or is handled correctly — never a crash (label unit; ASan+UBSan).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>

#include "common/scratch-dir.h"
#include "core/error.h"
#include "core/wav.h"
#include "quality/audio-checks.h"
#include "quality/audio-file.h"
#include "quality/resample.h"
#include "quality-test-util.h"

namespace rtf::quality {
namespace {

using ::testing::HasSubstr;

std::vector<float> sine(size_t n, int sr, double hz, float amp) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = amp * static_cast<float>(std::sin(2 * std::numbers::pi * hz * i / sr));
    return x;
}

void expect_usage_error(const std::string &path, const std::string &fragment) {
    try {
        load_mono_audio(path);
        FAIL() << "expected a usage error for " << path;
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Usage) << e.what();
        EXPECT_THAT(e.what(), HasSubstr(path));
        EXPECT_THAT(e.what(), HasSubstr(fragment));
    }
}

void put_le(std::ofstream &f, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) f.put(static_cast<char>((v >> (8 * i)) & 0xff));
}

// An 8-bit unsigned PCM WAV written byte by byte (the format libsndfile's writer here
// does not produce by default).
void write_u8_wav(const std::string &path, const std::vector<float> &x, int sr) {
    std::ofstream f(path, std::ios::binary);
    const uint32_t n = static_cast<uint32_t>(x.size());
    f << "RIFF";
    put_le(f, 36 + n, 4);
    f << "WAVEfmt ";
    put_le(f, 16, 4);
    put_le(f, 1, 2);   // PCM
    put_le(f, 1, 2);   // mono
    put_le(f, static_cast<uint32_t>(sr), 4);
    put_le(f, static_cast<uint32_t>(sr), 4);  // byte rate
    put_le(f, 1, 2);   // block align
    put_le(f, 8, 2);   // bits
    f << "data";
    put_le(f, n, 4);
    for (float v : x) f.put(static_cast<char>(static_cast<uint8_t>(std::lround(128 + 127 * v))));
}

TEST(AudioFile, MissingFileIsAUsageError) {
    rtf::test::ScratchDir d("quality");
    expect_usage_error(d.file("nope.wav"), "does not exist");
}

TEST(AudioFile, DirectoryIsAUsageError) {
    rtf::test::ScratchDir d("quality");
    expect_usage_error(d.dir.string(), "directory");
}

TEST(AudioFile, UnreadableFileIsAUsageError) {
    rtf::test::ScratchDir d("quality");
    write_wav(d.file("locked.wav"), sine(1000, 16000, 440, 0.3f), 16000);
    std::filesystem::permissions(d.file("locked.wav"), std::filesystem::perms::none);
    std::ifstream probe(d.file("locked.wav"));
    // As root (CI) permissions do not block reading: then the unreadable file is one that
    // opens but whose first read fails with an I/O error, /proc/self/mem at offset 0 (never
    // mapped). Both end where the file's bytes cannot be had: the same usage error.
    const std::string path = probe.good() ? "/proc/self/mem" : d.file("locked.wav");
    expect_usage_error(path, "cannot read");
}

TEST(AudioFile, NonWavIsAUsageError) {
    rtf::test::ScratchDir d("quality");
    std::ofstream(d.file("notes.wav")) << "this is a text file, not audio\n";
    expect_usage_error(d.file("notes.wav"), "cannot read audio file");
}

TEST(AudioFile, TruncatedHeaderIsAUsageError) {
    rtf::test::ScratchDir d("quality");
    write_wav(d.file("t.wav"), sine(16000, 16000, 440, 0.3f), 16000);
    std::filesystem::resize_file(d.file("t.wav"), 30);
    expect_usage_error(d.file("t.wav"), "cannot read audio file");
}

TEST(AudioFile, TruncatedDataLoadsTheSamplesPresent) {
    rtf::test::ScratchDir d("quality");
    write_wav(d.file("t.wav"), sine(16000, 16000, 440, 0.3f), 16000);
    std::filesystem::resize_file(d.file("t.wav"), 44 + 2 * 6000 + 1);  // 6000 whole samples + half of one
    const auto a = load_mono_audio(d.file("t.wav"));
    EXPECT_EQ(a.sample_rate, 16000);
    EXPECT_GE(a.samples.size(), 6000u);
    EXPECT_LE(a.samples.size(), 6001u);
    EXPECT_NEAR(a.samples[100], 0.3f * std::sin(2 * std::numbers::pi * 440.0 * 100 / 16000), 1e-3);
}

TEST(AudioFile, ZeroSampleWavLoadsAndFailsTheDurationCheck) {
    rtf::test::ScratchDir d("quality");
    write_wav(d.file("empty.wav"), {}, 24000);
    const auto a = load_mono_audio(d.file("empty.wav"));
    EXPECT_EQ(a.samples.size(), 0u);
    const auto r = check_audio(a.samples, a.sample_rate);
    ASSERT_NE(r.find("duration_ms"), nullptr);
    EXPECT_TRUE(r.find("duration_ms")->failed());
    EXPECT_THAT(r.find("duration_ms")->reason, HasSubstr("no samples"));
}

TEST(AudioFile, EightBitPcmIsRead) {
    rtf::test::ScratchDir d("quality");
    const auto x = sine(8000, 8000, 300, 0.5f);
    write_u8_wav(d.file("u8.wav"), x, 8000);
    const auto a = load_mono_audio(d.file("u8.wav"));
    EXPECT_EQ(a.sample_rate, 8000);
    EXPECT_THAT(a.format, HasSubstr("8 bit"));
    ASSERT_EQ(a.samples.size(), x.size());
    for (size_t i = 0; i < x.size(); i += 97) EXPECT_NEAR(a.samples[i], x[i], 0.02) << i;
}

TEST(AudioFile, StereoIsMixedDown) {
    rtf::test::ScratchDir d("quality");
    const auto l = sine(4800, 48000, 440, 0.4f);
    std::vector<float> inter(2 * l.size());
    for (size_t i = 0; i < l.size(); ++i) {
        inter[2 * i] = l[i];
        inter[2 * i + 1] = 0.2f;  // right channel: a constant
    }
    {
        WavWriter w(d.file("st.wav"), 48000, 2, WavFormat::Float32);
        w.write(inter);
    }
    const auto a = load_mono_audio(d.file("st.wav"));
    EXPECT_EQ(a.channels, 2);
    ASSERT_EQ(a.samples.size(), l.size());
    for (size_t i = 0; i < l.size(); i += 50) EXPECT_NEAR(a.samples[i], 0.5f * (l[i] + 0.2f), 1e-6);
}

TEST(AudioFile, Rate192kIsCheckedAndResampled) {
    rtf::test::ScratchDir d("quality");
    const auto x = test::synth_speech(2.0, 192000, 21);
    write_wav(d.file("hi.wav"), x, 192000);
    const auto a = load_mono_audio(d.file("hi.wav"));
    EXPECT_EQ(a.sample_rate, 192000);
    EXPECT_NEAR(a.duration_s(), 2.0, 1e-3);
    const auto r = check_audio(a.samples, a.sample_rate);
    EXPECT_TRUE(r.passed()) << r.to_text();
    const auto y = resample(a.samples, a.sample_rate, 16000);
    EXPECT_NEAR(static_cast<double>(y.size()), 32000, 4);
}

TEST(AudioFile, FloatWavKeepsNaNForTheNonFiniteCheck) {
    rtf::test::ScratchDir d("quality");
    auto x = test::synth_speech(1.0, 24000, 22);
    x[1234] = std::numeric_limits<float>::quiet_NaN();
    write_wav(d.file("nan.wav"), x, 24000, WavFormat::Float32);
    const auto a = load_mono_audio(d.file("nan.wav"));
    const auto r = check_audio(a.samples, a.sample_rate);
    ASSERT_NE(r.find("nonfinite"), nullptr);
    EXPECT_TRUE(r.find("nonfinite")->failed()) << r.to_text();
    EXPECT_EQ(r.find("nonfinite")->value, 1);
}

}  // namespace
}  // namespace rtf::quality
