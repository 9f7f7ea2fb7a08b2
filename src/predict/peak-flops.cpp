#include "predict/peak-flops.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/elapsed.h"
#include "core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RTF_PEAK_X86 1
#endif

namespace rtf::predict {

namespace {

using Kernel = double (*)(int64_t iters);  // returns a value that depends on every chain

#ifdef RTF_PEAK_X86
// 12 independent chains per loop iteration; the a/b constants keep values finite.
#define RTF_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

// The 16 lanes' sum through memory (only to keep the chains live): GCC 12's
// _mm512_reduce_add_ps trips its own -Wuninitialized in the extract it inlines.
__attribute__((target("avx512f"))) double sum16(__m512 s) {
    alignas(64) float v[16];
    _mm512_store_ps(v, s);
    double r = 0;
    for (float x : v) r += x;
    return r;
}

__attribute__((target("avx512f"))) double k_f32_avx512(int64_t iters) {
    const __m512 a = _mm512_set1_ps(0.9999f), b = _mm512_set1_ps(0.5f);
#define DECL(i) __m512 c##i = _mm512_set1_ps(0.01f * (i + 1));
    RTF_CHAINS(DECL)
#undef DECL
    for (int64_t n = 0; n < iters; ++n) {
#define STEP(i) c##i = _mm512_fmadd_ps(c##i, a, b);
        RTF_CHAINS(STEP)
#undef STEP
    }
    __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, c##i);
    RTF_CHAINS(SUM)
#undef SUM
    return sum16(s);
}

__attribute__((target("avx2,fma"))) double k_f32_fma(int64_t iters) {
    const __m256 a = _mm256_set1_ps(0.9999f), b = _mm256_set1_ps(0.5f);
#define DECL(i) __m256 c##i = _mm256_set1_ps(0.01f * (i + 1));
    RTF_CHAINS(DECL)
#undef DECL
    for (int64_t n = 0; n < iters; ++n) {
#define STEP(i) c##i = _mm256_fmadd_ps(c##i, a, b);
        RTF_CHAINS(STEP)
#undef STEP
    }
    __m256 s = _mm256_setzero_ps();
#define SUM(i) s = _mm256_add_ps(s, c##i);
    RTF_CHAINS(SUM)
#undef SUM
    alignas(32) float v[8];
    _mm256_store_ps(v, s);
    double r = 0;
    for (float x : v) r += x;
    return r;
}

__attribute__((target("avx512f,avx512bf16"))) double k_bf16(int64_t iters) {
    const __m512bh a = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3f80));  // bf16 1.0
    const __m512bh b = reinterpret_cast<__m512bh>(_mm512_set1_epi16(0x3c00));  // bf16 ~0.0078
#define DECL(i) __m512 c##i = _mm512_set1_ps(0.01f * (i + 1));
    RTF_CHAINS(DECL)
#undef DECL
    for (int64_t n = 0; n < iters; ++n) {
#define STEP(i) c##i = _mm512_dpbf16_ps(c##i, a, b);
        RTF_CHAINS(STEP)
#undef STEP
    }
    __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, c##i);
    RTF_CHAINS(SUM)
#undef SUM
    return sum16(s);
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) double k_int8(int64_t iters) {
    const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(1);
#define DECL(i) __m512i c##i = _mm512_set1_epi32(i);
    RTF_CHAINS(DECL)
#undef DECL
    for (int64_t n = 0; n < iters; ++n) {
#define STEP(i) c##i = _mm512_dpbusd_epi32(c##i, a, b);
        RTF_CHAINS(STEP)
#undef STEP
    }
    // The chains wrap around (vpdpbusd does, by definition); sum them as unsigned so the
    // reduction has no signed overflow either.
    __m512i s = _mm512_setzero_si512();
#define SUM(i) s = _mm512_add_epi32(s, c##i);
    RTF_CHAINS(SUM)
#undef SUM
    alignas(64) uint32_t v[16];
    _mm512_store_si512(reinterpret_cast<__m512i *>(v), s);
    uint64_t r = 0;
    for (uint32_t x : v) r += x;
    return static_cast<double>(r);
}
#undef RTF_CHAINS
#endif

struct Choice {
    Kernel kernel = nullptr;
    const char *isa = "unsupported";
    double ops_per_iter = 0;  // per thread, per loop iteration (12 instructions)
};

Choice choose(const std::string &type) {
    Choice c;
#ifdef RTF_PEAK_X86
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f");
    if (type == "f32" || type == "f16") {
        if (avx512) c = {k_f32_avx512, "avx512f", 12.0 * 2 * 16};
        else if (__builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2")) c = {k_f32_fma, "fma", 12.0 * 2 * 8};
    } else if (type == "bf16") {
        if (avx512 && __builtin_cpu_supports("avx512bf16")) c = {k_bf16, "avx512bf16", 12.0 * 2 * 32};
    } else if (type == "int8") {
        if (avx512 && __builtin_cpu_supports("avx512vnni")) c = {k_int8, "avx512vnni", 12.0 * 2 * 64};
    }
#else
    (void)type;
#endif
    return c;
}

}  // namespace

const std::vector<std::string> &peak_types() {
    static const std::vector<std::string> t = {"f32", "f16", "bf16", "int8"};
    return t;
}

PeakResult measure_peak(const std::string &type, int n_threads, double ms) {
    const auto &ts = peak_types();
    if (std::find(ts.begin(), ts.end(), type) == ts.end())
        throw_usage("peak FLOP rate: unknown type '" + type + "' (use f32, f16, bf16, int8)");
    if (n_threads < 1) throw_usage("peak FLOP rate: n_threads must be >= 1");
    PeakResult r;
    r.type = type;
    r.n_threads = n_threads;
    const Choice c = choose(type);
    r.isa = c.isa;
    if (!c.kernel) return r;
    // Calibrate the iteration count for `ms` on one thread.
    using clk = std::chrono::steady_clock;
    int64_t iters = 1 << 16;
    volatile double sink = 0;
    for (;;) {
        const auto t0 = clk::now();
        sink = sink + c.kernel(iters);
        const double el = ms_since(t0);
        if (el >= 5 || iters > (int64_t{1} << 40)) {
            iters = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iters) * std::max(ms, 10.0) / std::max(el, 1e-3)));
            break;
        }
        iters *= 4;
    }
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> out(static_cast<size_t>(n_threads));
    std::vector<std::thread> th;
    for (int i = 0; i < n_threads; ++i)
        th.emplace_back([&, i] {
            ready.fetch_add(1);
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            out[static_cast<size_t>(i)] = c.kernel(iters);
        });
    while (ready.load() < n_threads) std::this_thread::yield();
    const auto t0 = clk::now();
    go.store(true, std::memory_order_release);
    for (auto &t : th) t.join();
    const double s = std::chrono::duration<double>(clk::now() - t0).count();
    for (double v : out) sink = sink + v;
    r.gflops = c.ops_per_iter * static_cast<double>(iters) * n_threads / s / 1e9;
    return r;
}

nlohmann::json to_json(const PeakResult &r) {
    return {{"type", r.type}, {"isa", r.isa}, {"n_threads", r.n_threads}, {"gflops", r.gflops}};
}

}  // namespace rtf::predict
