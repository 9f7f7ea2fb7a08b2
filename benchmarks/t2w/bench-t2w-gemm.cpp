// bench-t2w-gemm: the packed F32 GEMM (src/models/t2w/packed-gemm.h) against ggml's F32
// mul_mat on token2mel's shapes, one thread each (token2mel runs each CFG branch on its
// own thread with --t2w-threads 2). Both compute y = W·x on the same data; ggml's side is
// one mul_mat node in a graph computed by ggml_graph_compute_with_ctx (its own threading
// and src1 handling included, as in the engine).
//   ./bench-t2w-gemm --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Args: N (outputs), K (inputs), M (tokens: 56 = a 28-token window's mel frames), cold (1 =
// cycle through copies of W totalling >= 256 MiB, so every product streams its weight from
// DRAM as a DiT pass does: 16 blocks x ~18 MB; 0 = one W, cache-resident after the first
// iteration).
// Counter gflops = 2·N·K·M per second of wall time. Skips the packed side without AVX-512F or AVX2 + FMA
// (RTF_T2W_PACKED=avx2 measures the AVX2 kernel on an AVX-512 CPU).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include <ggml-cpu.h>
#include <ggml.h>

#include "models/t2w/packed-gemm-bf16.h"
#include "models/t2w/packed-gemm.h"

using namespace rtf::t2w;

namespace {

std::vector<float> randn(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto &x : v) x = d(rng);
    return v;
}

void set_flops(benchmark::State &st, int64_t N, int64_t K, int64_t M) {
    st.counters["gflops"] = benchmark::Counter(2.0 * N * K * M * 1e-9 * static_cast<double>(st.iterations()),
                                               benchmark::Counter::kIsRate);
}

int64_t copies(benchmark::State &st, int64_t N, int64_t K) {
    return st.range(3) ? std::max<int64_t>(1, (256ll << 20) / (N * K * 4) + 1) : 1;
}

void BM_packed(benchmark::State &st) {
    const int64_t N = st.range(0), K = st.range(1), M = st.range(2);
    if (gemm::kernel_isa() == gemm::Isa::portable) {
        st.SkipWithError("neither AVX-512F nor AVX2 + FMA");
        return;
    }
    const int64_t C = copies(st, N, K), P = gemm::packed_floats(N, K);
    const auto w = randn(N * K, 1), x = randn(M * K, 2);
    std::vector<float> p(P * C), y(M * N);
    for (int64_t c = 0; c < C; ++c) gemm::pack(w.data(), N, K, p.data() + c * P);
    int64_t c = 0;
    for (auto _ : st) {
        gemm::gemm(p.data() + c * P, N, K, x.data(), K, M, nullptr, y.data(), N);
        benchmark::DoNotOptimize(y.data());
        c = (c + 1) % C;
    }
    set_flops(st, N, K, M);
}

// The packed BF16 GEMM (packed-gemm-bf16.h) on the same shapes: bf16 weights and
// activations, F32 sums (what --t2w-type-t2m bf16 runs where the CPU has AVX512-BF16).
void BM_packed_bf16(benchmark::State &st) {
    const int64_t N = st.range(0), K = st.range(1), M = st.range(2);
    if (!gemm::bf16_packed_enabled() || N % gemm::kPanel != 0) {
        st.SkipWithError("no AVX512-BF16, or N not a multiple of 16");
        return;
    }
    const int64_t C = st.range(3) ? std::max<int64_t>(1, (256ll << 20) / (N * K * 2) + 1) : 1;
    const auto w = randn(N * K, 1), x = randn(M * K, 2);
    std::vector<uint16_t> p(static_cast<size_t>(N * K * C)), xb(static_cast<size_t>(M * K));
    for (int64_t i = 0; i < N * K; ++i) p[static_cast<size_t>(i)] = ggml_fp32_to_bf16(w[static_cast<size_t>(i)]).bits;
    gemm::pack_bf16_in_place(p.data(), N, K);
    for (int64_t c = 1; c < C; ++c) std::copy(p.begin(), p.begin() + N * K, p.begin() + c * N * K);
    for (int64_t i = 0; i < M * K; ++i) xb[static_cast<size_t>(i)] = ggml_fp32_to_bf16(x[static_cast<size_t>(i)]).bits;
    std::vector<float> y(M * N);
    int64_t c = 0;
    for (auto _ : st) {
        gemm::gemm_bf16(p.data() + c * N * K, N, K, xb.data(), K, M, nullptr, y.data(), N);
        benchmark::DoNotOptimize(y.data());
        c = (c + 1) % C;
    }
    set_flops(st, N, K, M);
}

void BM_ggml(benchmark::State &st) {
    const int64_t N = st.range(0), K = st.range(1), M = st.range(2);
    const int64_t C = copies(st, N, K);
    ggml_init_params ip{static_cast<size_t>((N * K * C + M * K + M * N * C) * sizeof(float)) + (C + 4) * 1024 * 1024, nullptr,
                        false};
    ggml_context *ctx = ggml_init(ip);
    ggml_tensor *tx = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, M);
    const auto w = randn(N * K, 1), x = randn(M * K, 2);
    std::memcpy(tx->data, x.data(), x.size() * sizeof(float));
    std::vector<ggml_cgraph *> gfs;
    std::vector<ggml_tensor *> ys;
    for (int64_t c = 0; c < C; ++c) {
        ggml_tensor *tw = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, N);
        std::memcpy(tw->data, w.data(), w.size() * sizeof(float));
        ys.push_back(ggml_mul_mat(ctx, tw, tx));
        gfs.push_back(ggml_new_graph(ctx));
        ggml_build_forward_expand(gfs.back(), ys.back());
    }
    int64_t c = 0;
    for (auto _ : st) {
        ggml_graph_compute_with_ctx(ctx, gfs[c], 1);
        benchmark::DoNotOptimize(ys[c]->data);
        c = (c + 1) % C;
    }
    set_flops(st, N, K, M);
    ggml_free(ctx);
}

// token2mel's linear shapes at a 28-token window (spec §3.4-3.6): DiT q/k/v/proj, MLP fc1 and
// fc2, causal conv (K = 3·512 after im2col), in_proj, final linear; encoder FFN.
void shapes(benchmark::internal::Benchmark *b) {
    for (int cold : {0, 1})
        b->Args({512, 512, 56, cold})->Args({2048, 512, 56, cold})->Args({512, 2048, 56, cold})->Args({512, 1536, 58, cold})
            ->Args({512, 320, 56, cold})->Args({80, 512, 56, cold})->Args({512, 512, 28, cold});
    b->ArgNames({"N", "K", "M", "cold"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK(BM_packed)->Apply(shapes);
BENCHMARK(BM_packed_bf16)->Apply(shapes);
BENCHMARK(BM_ggml)->Apply(shapes);
