// bench-t2w-attention: the fused DiT attention (src/models/t2w/dit-attention.h) at the
// engine's shape — one CFG branch (each runs on its own thread), 8 heads of 64, a window of
// T mel frames against the 302-frame prompt cache — one thread, in a ggml graph as the
// engine runs it.
//   ./bench-t2w-attention --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Args: T (frames: 56 = a 28-token window), cold (1 = cycle through 80 cache slots, ~99 MiB,
// so every call streams its K‖V rows from DRAM as the DiT's 16 blocks x 5 steps do; 0 = one
// slot, cache-resident). Counter gflops = 4·H·T·(T+L)·dh (the two products) per second.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include <ggml-cpu.h>
#include <ggml.h>

#include "models/t2w/dit-attention.h"

using namespace rtf::t2w;

namespace {

constexpr int64_t kDh = 64, kH = 8, kL = 302, kSlots = 80;

void BM_fused(benchmark::State &st) {
    const int64_t T = st.range(0), slots = st.range(1) ? kSlots : 1;
    const size_t kv_floats = static_cast<size_t>(2 * kDh * kL * kH);
    ggml_init_params ip{(3 * kDh * kH * T + kv_floats * slots + kDh * kH * T) * sizeof(float) + (64 << 20), nullptr, false};
    ggml_context *ctx = ggml_init(ip);
    std::mt19937 rng(7);
    std::normal_distribution<float> d(0.0f, 1.0f);
    auto fill = [&](ggml_tensor *t) {
        auto *p = static_cast<float *>(t->data);
        for (int64_t i = 0; i < ggml_nelements(t); ++i) p[i] = d(rng);
    };
    ggml_tensor *q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, kDh, kH, T, 1), *k = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, kDh, kH, T, 1),
                *v = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, kDh, kH, T, 1);
    ggml_tensor *all = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2 * kDh, kL, kH, slots);
    fill(q), fill(k), fill(v), fill(all);
    std::vector<ggml_cgraph *> graphs;
    for (int64_t s = 0; s < slots; ++s) {
        ggml_tensor *kv = ggml_view_4d(ctx, all, 2 * kDh, kL, kH, 1, all->nb[1], all->nb[2], all->nb[3], s * all->nb[3]);
        ggml_cgraph *gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, attn::dit_attention(ctx, q, k, v, kv));
        graphs.push_back(gf);
    }
    size_t i = 0;
    for (auto _ : st) {
        ggml_graph_compute_with_ctx(ctx, graphs[i], 1);
        i = (i + 1) % graphs.size();
    }
    st.counters["gflops"] = benchmark::Counter(4.0 * kH * T * (T + kL) * kDh * 1e-9 * static_cast<double>(st.iterations()),
                                               benchmark::Counter::kIsRate);
    ggml_free(ctx);
}

}  // namespace

BENCHMARK(BM_fused)->ArgNames({"T", "cold"})->Args({56, 0})->Args({56, 1})->Args({16, 1})->UseRealTime()->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
