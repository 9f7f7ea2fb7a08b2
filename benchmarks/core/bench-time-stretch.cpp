// The cost of `speed` (core/time-stretch.h, Sonic) per second of 24 kHz audio, fed in
// Token2Wav-window chunks (1 s), so a serve stream's extra work per chunk is known:
//   build/bin/bench-time-stretch --benchmark_repetitions=5
// items_per_second = seconds of audio stretched per wall second (on one thread).
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/time-stretch.h"

namespace {

constexpr int kRate = 24000;

// 10 s of a voiced-speech-like signal: a 140 Hz pulse train through a decaying resonance, plus noise.
std::vector<float> speechlike() {
    std::vector<float> x(10 * kRate);
    std::mt19937 rng(1);
    std::normal_distribution<float> n(0.0f, 0.02f);
    double phase = 0, y1 = 0, y2 = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        phase += 140.0 / kRate;
        const double pulse = phase >= 1.0 ? (phase -= 1.0, 1.0) : 0.0;
        const double y = pulse + 1.8 * std::cos(2 * M_PI * 700.0 / kRate) * 0.97 * y1 - 0.97 * 0.97 * y2;
        y2 = y1;
        y1 = y;
        x[i] = static_cast<float>(0.05 * y) + n(rng);
    }
    return x;
}

void BM_TimeStretch(benchmark::State &st) {
    const double speed = static_cast<double>(st.range(0)) / 100.0;
    const auto in = speechlike();
    const size_t chunk = kRate;  // one Token2Wav window's worth
    for (auto _ : st) {
        rtf::TimeStretch ts(speed, kRate);
        size_t out = 0;
        for (size_t i = 0; i < in.size(); i += chunk) out += ts.push(in.data() + i, std::min(chunk, in.size() - i)).size();
        out += ts.finish().size();
        benchmark::DoNotOptimize(out);
    }
    st.SetItemsProcessed(st.iterations() * static_cast<int64_t>(in.size() / kRate));  // seconds of audio
}
BENCHMARK(BM_TimeStretch)->Arg(50)->Arg(100)->Arg(125)->Arg(200)->Arg(400)->Unit(benchmark::kMillisecond);

}  // namespace
