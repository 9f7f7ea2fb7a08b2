// bench-t2w-conv: the vocoder's ResBlock convolution with its residual add, two ways, each
// one ggml graph computed by ggml_graph_compute_with_ctx on `threads` threads (the engine's
// --t2w-threads-voc):
//   im2col   ops::conv1d_tc on a gemm-packed kernel (im2col, packed GEMM, transpose) + ggml_add
//   direct   conv::conv1d on a conv-packed kernel, residual fused (src/models/t2w/packed-conv.h)
//   onednn   onednn::conv1d, bf16 (src/models/t2w/onednn-conv.h: transposes + oneDNN's
//            convolution; `--t2w-type-voc bf16`), residual fused; skipped without oneDNN
//   onednn_f32  the same in f32 (ConvType::f32)
//   ./bench-t2w-conv --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Args: C (channels in = out), T (frames: a steady 58-frame window gives 464 / 2320 / 6961 at
// stages 0 / 1 / 2), K (kernel), d (dilation; pad (K·d - d)/2 keeps T), threads.
// Counter gflops = 2·C·C·K·T per second of wall time. Skips both sides without AVX-512F or
// AVX2 + FMA (RTF_T2W_PACKED=avx2 measures the AVX2 kernels on an AVX-512 CPU).
// BM_host_dsp: the vocoder's host kernels of one steady window (58 mel frames: harmonic
// source of 27840 samples with 9 harmonics, STFT, iSTFT of 6961 frames), one thread as in
// Vocoder::run: its share of the vocoder's time says whether vectorising them would pay.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include <ggml-cpu.h>
#include <ggml.h>

#include "core/error.h"
#include "models/t2w/onednn-conv.h"
#include "models/t2w/onednn-linear.h"
#include "models/t2w/packed-conv.h"
#include "models/t2w/packed-gemm.h"
#include "models/t2w/t2w-dsp.h"
#include "models/t2w/t2w-ops.h"

using namespace rtf::t2w;

namespace {

std::vector<float> randn(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto &x : v) x = d(rng);
    return v;
}

enum class Way { Im2col, Direct, Onednn, OnednnF32 };

void run(benchmark::State &st, Way way) {
    if (way != Way::Onednn && way != Way::OnednnF32 && gemm::kernel_isa() == gemm::Isa::portable) {
        st.SkipWithError("neither AVX-512F nor AVX2 + FMA");
        return;
    }
    const bool dnnl = way == Way::Onednn || way == Way::OnednnF32;
    if (dnnl && !onednn::available()) {
        st.SkipWithError("no oneDNN in this build");
        return;
    }
    const int64_t C = st.range(0), T = st.range(1), K = st.range(2);
    const int d = static_cast<int>(st.range(3)), threads = static_cast<int>(st.range(4));
    const int pad = static_cast<int>((K * d - d) / 2);
    // x, W, b, res, and the im2col side's buffers: [K·C, T] columns, [C, T] product, two [T, C]
    const size_t floats = static_cast<size_t>(C * T * 4 + C * C * K + C + K * C * T + 3 * C * T);
    ggml_init_params ip{floats * sizeof(float) + 16 * 1024 * 1024, nullptr, false};
    ggml_context *ctx = ggml_init(ip);
    ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, T, C);
    ggml_tensor *res = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, T, C);
    ggml_tensor *b = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, C);
    ggml_tensor *w = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, C, C);
    const auto xv = randn(C * T, 1), rv = randn(C * T, 2), bv = randn(C, 3), wv = randn(C * C * K, 4);
    std::memcpy(x->data, xv.data(), xv.size() * sizeof(float));
    std::memcpy(res->data, rv.data(), rv.size() * sizeof(float));
    std::memcpy(b->data, bv.data(), bv.size() * sizeof(float));
    std::memcpy(w->data, wv.data(), wv.size() * sizeof(float));
    ggml_tensor *y = nullptr;
    if (dnnl) {
        try {  // oneDNN 2.6 has no bf16 convolution below AVX512-BF16 (AVX2 CPUs): skip, say why
            onednn::register_conv(w, static_cast<const float *>(w->data), C, C, K,
                                  way == Way::OnednnF32 ? onednn::ConvType::f32 : onednn::ConvType::bf16);
        } catch (const rtf::Error &e) {
            ggml_free(ctx);
            st.SkipWithError(e.what());
            return;
        }
        y = onednn::conv1d(ctx, x, w, b, 1, pad, d, res);
    } else if (way == Way::Direct) {
        conv::pack_in_place(static_cast<float *>(w->data), C, C, K);
        conv::register_packed(w);
        y = conv::conv1d(ctx, x, w, b, 1, pad, d, res);
    } else {
        gemm::pack_in_place(static_cast<float *>(w->data), C, C * K);
        gemm::register_packed(w);
        y = ggml_add(ctx, ops::conv1d_tc(ctx, x, w, b, 1, pad, d), res);
    }
    ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, y);
    for (auto _ : st) {
        ggml_graph_compute_with_ctx(ctx, gf, threads);
        benchmark::DoNotOptimize(y->data);
    }
    st.counters["gflops"] =
        benchmark::Counter(2.0 * C * C * K * T * 1e-9 * static_cast<double>(st.iterations()), benchmark::Counter::kIsRate);
    conv::unregister_packed(w);
    gemm::unregister_packed(w);
    onednn::unregister_conv(w);
    ggml_free(ctx);
}

void BM_im2col(benchmark::State &st) { run(st, Way::Im2col); }
void BM_direct(benchmark::State &st) { run(st, Way::Direct); }
void BM_onednn_bf16(benchmark::State &st) { run(st, Way::Onednn); }
void BM_onednn_f32(benchmark::State &st) { run(st, Way::OnednnF32); }

// HiFT's ResBlock convs at a steady window (spec §1.8, §3.8): per stage the shortest and
// longest kernel with their largest dilation, on 2 threads (and stage 2's K 11 on 1).
void shapes(benchmark::internal::Benchmark *b) {
    b->Args({256, 464, 3, 5, 2})->Args({256, 464, 11, 5, 2})->Args({128, 2320, 3, 5, 2})->Args({128, 2320, 11, 5, 2})
        ->Args({64, 6961, 3, 5, 2})->Args({64, 6961, 11, 5, 2})->Args({64, 6961, 11, 5, 1});
    b->ArgNames({"C", "T", "K", "d", "threads"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

void BM_host_dsp(benchmark::State &st) {
    const int T = 58;
    std::vector<float> f0(T);
    for (int i = 0; i < T; ++i) f0[i] = i % 7 == 0 ? 0.0f : 120.0f + 3.0f * static_cast<float>(i);  // voiced + unvoiced
    const auto w = randn(9, 5);
    for (auto _ : st) {
        const auto src = dsp::harmonic_source(f0, w, 0.1f, 480, 24000);
        const auto spec = dsp::stft16(src);
        const int64_t F = static_cast<int64_t>(src.size()) / dsp::kHop + 1;
        const auto wave = dsp::istft16(spec.data(), spec.data() + dsp::kBins * F, F, 0.99f);
        benchmark::DoNotOptimize(wave.data());
    }
}

}  // namespace

BENCHMARK(BM_host_dsp)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_im2col)->Apply(shapes);
BENCHMARK(BM_direct)->Apply(shapes);
BENCHMARK(BM_onednn_bf16)->Apply(shapes);
BENCHMARK(BM_onednn_f32)->Apply(shapes);
