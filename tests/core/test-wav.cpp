#include <gtest/gtest.h>
#include <sndfile.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/scratch-dir.h"
#include "core/error.h"
#include "core/wav.h"

using namespace rtf;
namespace fs = std::filesystem;

namespace {
// One scratch folder for the process, removed at exit.
fs::path tmp_path(const std::string &name) {
    static const rtf::test::ScratchDir dir("test-wav");
    return dir.dir / name;
}
}  // namespace

TEST(Wav, RoundTripFloat) {
    std::vector<float> x(2400);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * std::sin(0.01f * static_cast<float>(i));
    auto p = tmp_path("float.wav").string();
    write_wav(p, x, 24000, WavFormat::Float32);
    auto d = read_wav(p);
    EXPECT_EQ(d.sample_rate, 24000);
    EXPECT_EQ(d.channels, 1);
    ASSERT_EQ(d.samples.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(d.samples[i], x[i]);
}

TEST(Wav, HeaderIsValidBeforeClose) {
    // Simulates an interrupted run: the writer is never closed, yet the file on disk
    // must already declare every sample written so far.
    auto p = tmp_path("open.wav").string();
    auto *w = new WavWriter(p, 24000);
    std::vector<float> chunk(24000, 0.25f);
    w->write(chunk);
    w->write(chunk);
    auto d = read_wav(p);  // read while the writer still holds the file open
    EXPECT_EQ(d.frames, 48000);
    delete w;
}

TEST(Wav, BadFilesGiveUsageErrorsNamingThePath) {
    auto p = tmp_path("not-a-wav.wav").string();
    std::ofstream(p) << "this is not audio";
    try {
        read_wav(p);
        FAIL();
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Usage);
        EXPECT_NE(std::string(e.what()).find(p), std::string::npos);
    }
    EXPECT_THROW(read_wav(tmp_path("missing.wav").string()), Error);
}

TEST(Wav, StereoMonoMix) {
    WavData d;
    d.channels = 2;
    d.frames = 2;
    d.samples = {1.0f, 0.0f, 0.5f, 0.5f};
    EXPECT_EQ(d.mono(), (std::vector<float>{0.5f, 0.5f}));
}
