// TimeStretch: `speed` as OpenAI defines it (duration / speed, pitch kept), streamed.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "core/error.h"
#include "core/time-stretch.h"

using rtf::TimeStretch;

namespace {

constexpr int kRate = 24000;

std::vector<float> sine(double hz, int n) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = 0.5f * static_cast<float>(std::sin(2 * M_PI * hz * i / kRate));
    return x;
}

// Everything out of `ts` for `in` pushed in chunks of `chunk` samples.
std::vector<float> stretch(TimeStretch &ts, const std::vector<float> &in, size_t chunk) {
    std::vector<float> out;
    for (size_t i = 0; i < in.size(); i += chunk) {
        auto o = ts.push(in.data() + i, std::min(chunk, in.size() - i));
        out.insert(out.end(), o.begin(), o.end());
    }
    auto t = ts.finish();
    out.insert(out.end(), t.begin(), t.end());
    return out;
}

// Frequency from upward zero crossings over the middle half (away from the edges).
double frequency(const std::vector<float> &x) {
    const size_t a = x.size() / 4, b = 3 * x.size() / 4;
    int n = 0;
    for (size_t i = a + 1; i < b; ++i)
        if (x[i - 1] < 0 && x[i] >= 0) ++n;
    return n / (static_cast<double>(b - a) / kRate);
}

}  // namespace

TEST(TimeStretch, SpeedOneIsBitIdentical) {
    const auto in = sine(300, 10000);
    TimeStretch ts(1.0, kRate);
    EXPECT_EQ(stretch(ts, in, 960), in);
    EXPECT_EQ(ts.in(), 10000);
    EXPECT_EQ(ts.out(), 10000);
}

TEST(TimeStretch, DurationIsInputOverSpeedExactly) {
    for (double speed : {0.25, 0.5, 0.8, 1.25, 2.0, 4.0}) {
        const auto in = sine(220, 2 * kRate + 123);
        TimeStretch ts(speed, kRate);
        const auto out = stretch(ts, in, 3840);
        EXPECT_EQ(static_cast<int64_t>(out.size()), std::llround((2 * kRate + 123) / speed)) << speed;
        EXPECT_EQ(ts.out(), static_cast<int64_t>(out.size()));
    }
}

TEST(TimeStretch, PitchIsKept) {
    const auto in = sine(440, 2 * kRate);
    for (double speed : {0.5, 2.0}) {
        TimeStretch ts(speed, kRate);
        const double f = frequency(stretch(ts, in, 1920));
        EXPECT_NEAR(f, 440.0, 440.0 * 0.03) << "speed " << speed;  // a resampler would give 220 / 880
    }
}

TEST(TimeStretch, ChunkingDoesNotChangeTheLength) {
    const auto in = sine(150, kRate);
    TimeStretch a(1.5, kRate), b(1.5, kRate);
    EXPECT_EQ(stretch(a, in, 100).size(), stretch(b, in, 7000).size());
}

TEST(TimeStretch, RefusesOutOfRange) {
    EXPECT_THROW(TimeStretch(0.2, kRate), rtf::Error);
    EXPECT_THROW(TimeStretch(4.5, kRate), rtf::Error);
    EXPECT_THROW(TimeStretch(std::nan(""), kRate), rtf::Error);
    TimeStretch ts(2.0, kRate);
    ts.finish();
    EXPECT_THROW(ts.push(nullptr, 0), rtf::Error);
}

// Nothing rtf_core links may change the process's floating point environment: a library built
// with -ffast-math (Debian's libSoundTouch is) sets flush-to-zero and denormals-are-zero at
// load, and every engine's float results with them (time-stretch.h).
TEST(FloatEnvironment, NoLinkedLibrarySetsFlushToZero) {
#if defined(__x86_64__) || defined(__i386__)
    const unsigned csr = _mm_getcsr();
    EXPECT_EQ(csr & 0x8000u, 0u) << "FTZ is set: MXCSR " << std::hex << csr;
    EXPECT_EQ(csr & 0x0040u, 0u) << "DAZ is set: MXCSR " << std::hex << csr;
#else
    GTEST_SKIP() << "x86 only";
#endif
}
