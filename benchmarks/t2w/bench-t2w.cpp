// bench-t2w: ms per steady 28-token window (= 1 s of audio) of token2mel, of the vocoder
// and of the whole window step (token2mel + vocoder + caches), on one model.
//   RTF_T2W_BENCH_MODELS=.cache/t2w-golden-twin ./bench-t2w --benchmark_repetitions=3
// Args: threads (1, 2). Without RTF_T2W_BENCH_MODELS a tiny random kit is used.
//
// Time is wall time (UseRealTime). Counters: cpu_ms = process CPU time (user + sys, all
// threads, from getrusage) per window, so thread spinning and contention from other
// processes are visible: wall < cpu_ms/threads means the threads overlapped. Each
// benchmark runs one untimed warm-up window first (graph building, allocation), so
// the figures are steady-state; the window benchmark's rtf = wall / 1 s of audio.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdlib>
#include <filesystem>
#include <random>

#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-stream.h"
#include "tiny-kit.h"

using namespace rtf::t2w;

namespace {
const T2wModel &model() {
    static std::unique_ptr<T2wModel> m = [] {
        const char *e = std::getenv("RTF_T2W_BENCH_MODELS");
        std::string dir;
        if (e && *e) {
            dir = e;
        } else {
            dir = (std::filesystem::temp_directory_path() / "rtf-bench-t2w-tiny").string();
            test::write_tiny_kit(dir);
        }
        return T2wModel::load(dir);
    }();
    return *m;
}
std::vector<int32_t> window(unsigned seed) {
    std::mt19937 r(seed);
    std::vector<int32_t> v(kWindowTokens);
    for (auto &x : v) x = static_cast<int32_t>(r() % 6561);
    return v;
}
double process_cpu_ms() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto ms = [](const timeval &t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
    return ms(ru.ru_utime) + ms(ru.ru_stime);
}
// Runs `body` once untimed, then under the benchmark loop with a cpu_ms counter.
template <class F>
void timed(benchmark::State &s, F &&body) {
    body();
    const double c0 = process_cpu_ms();
    for (auto _ : s) body();
    s.counters["cpu_ms"] = benchmark::Counter((process_cpu_ms() - c0) / static_cast<double>(s.iterations()));
}

void BM_Token2MelWindow(benchmark::State &s) {
    T2wConfig c;
    c.threads_t2m = static_cast<int>(s.range(0));
    Token2Mel t2m(model(), c);
    Token2MelState st;
    st.reset(*model().voice());
    PartTimes pt;
    const auto w = window(1);
    timed(s, [&] { benchmark::DoNotOptimize(t2m.run(w, false, st, pt)); });
}
void BM_VocoderWindow(benchmark::State &s) {
    T2wConfig c;
    c.threads_voc = static_cast<int>(s.range(0));
    Vocoder voc(model(), c);
    std::mt19937 r(2);
    std::normal_distribution<float> d(-4, 1);
    std::vector<float> mel(80 * 58);
    for (auto &x : mel) x = d(r);
    std::vector<float> cache(3840, 0.0f), wave, src;
    PartTimes pt;
    timed(s, [&] {
        voc.run(mel, 58, cache, wave, src, pt);
        benchmark::DoNotOptimize(wave.data());
    });
}
// A full steady window step (token2mel + vocoder + crossfade), both parts on `threads`.
void BM_T2wWindow(benchmark::State &s) {
    T2wConfig c;
    c.threads_t2m = c.threads_voc = static_cast<int>(s.range(0));
    T2wStream st(model(), c);
    const auto w = window(3);
    timed(s, [&] { benchmark::DoNotOptimize(st.push_window(w, false)); });
    s.counters["rtf"] = benchmark::Counter(static_cast<double>(s.iterations()) * 1.0,
                                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
}  // namespace

BENCHMARK(BM_Token2MelWindow)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_VocoderWindow)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_T2wWindow)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
