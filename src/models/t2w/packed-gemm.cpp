#include "models/t2w/packed-gemm.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "core/cpu-features.h"
#include "models/t2w/packed-registry.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RTF_GEMM_X86 1
#else
#define RTF_GEMM_X86 0
#endif

namespace rtf::t2w::gemm {

namespace {

constexpr int kMaxRows = 12;  // tokens per micro-kernel block: 2 panels x 12 = 24 accumulators

// Work units: (pair of panels) x (block of up to kMaxRows tokens), tile-major so a
// thread's consecutive units reuse one weight tile from cache across its token blocks.
struct Tiling {
    int64_t panels, tiles, mblocks;
    Tiling(int64_t N, int64_t M)
        : panels((N + kPanel - 1) / kPanel), tiles((panels + 1) / 2), mblocks((M + kMaxRows - 1) / kMaxRows) {}
    int64_t units() const { return tiles * mblocks; }
};

// One unit without AVX-512F or AVX2: the reference's arithmetic on the packed layout.
void unit_portable(const float *packed, int64_t N, int64_t K, const float *x, int64_t ldx, const float *bias, float *y,
                   int64_t ldy, int64_t n0, int64_t n1, int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) {
        const float *xm = x + m * ldx;
        for (int64_t n = n0; n < n1; ++n) {
            const float *pp = packed + (n / kPanel) * K * kPanel + (n % kPanel);
            float acc = 0.0f;
            for (int64_t k = 0; k < K; ++k) acc = std::fma(pp[k * kPanel], xm[k], acc);
            y[m * ldy + n] = bias ? acc + bias[n] : acc;
        }
    }
    (void)N;
}

#if RTF_GEMM_X86
// P panels (1 or 2) x R tokens. a = the first panel's K·16 floats (the second follows it);
// `last` masks the outputs of the last panel (fewer than 16 rows left at the end of N).
template <int P, int R>
__attribute__((target("avx512f"))) void kernel(const float *a, int64_t K, const float *x, int64_t ldx, const float *bias,
                                               float *y, int64_t ldy, __mmask16 last) {
    __m512 c[P][R];
    for (int p = 0; p < P; ++p)
        for (int r = 0; r < R; ++r) c[p][r] = _mm512_setzero_ps();
    const float *a1 = a + K * kPanel;
    for (int64_t k = 0; k < K; ++k) {
        _mm_prefetch(reinterpret_cast<const char *>(a + (k + 16) * kPanel), _MM_HINT_T0);
        if constexpr (P == 2) _mm_prefetch(reinterpret_cast<const char *>(a1 + (k + 16) * kPanel), _MM_HINT_T0);
        const __m512 w0 = _mm512_loadu_ps(a + k * kPanel);
        __m512 w1 = w0;
        if constexpr (P == 2) w1 = _mm512_loadu_ps(a1 + k * kPanel);
        for (int r = 0; r < R; ++r) {
            const __m512 b = _mm512_set1_ps(x[r * ldx + k]);
            c[0][r] = _mm512_fmadd_ps(w0, b, c[0][r]);
            if constexpr (P == 2) c[1][r] = _mm512_fmadd_ps(w1, b, c[1][r]);
        }
    }
    for (int p = 0; p < P; ++p) {
        const __mmask16 mk = p == P - 1 ? last : static_cast<__mmask16>(0xFFFF);
        __m512 bv = _mm512_setzero_ps();
        if (bias) bv = _mm512_maskz_loadu_ps(mk, bias + p * kPanel);
        for (int r = 0; r < R; ++r) {
            const __m512 v = bias ? _mm512_add_ps(c[p][r], bv) : c[p][r];
            _mm512_mask_storeu_ps(y + r * ldy + p * kPanel, mk, v);
        }
    }
}

// AVX2 + FMA: one panel (16 outputs = 2 vectors of 8) x R <= 6 tokens, 12 accumulators in
// 12 of the 16 YMM registers (per k two weight loads and R broadcasts feed 2R FMAs). The
// arithmetic per output is the AVX-512 kernel's: one fma chain in k order, then + b.
constexpr int kAvx2Rows = 6;

template <int R>
__attribute__((target("avx2,fma"))) void kernel_avx2(const float *a, int64_t K, const float *x, int64_t ldx,
                                                     const float *bias, float *y, int64_t ldy, int cols) {
    __m256 c0[R], c1[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) c0[r] = _mm256_setzero_ps(), c1[r] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
        _mm_prefetch(reinterpret_cast<const char *>(a + (k + 16) * kPanel), _MM_HINT_T0);
        const __m256 w0 = _mm256_loadu_ps(a + k * kPanel), w1 = _mm256_loadu_ps(a + k * kPanel + 8);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m256 b = _mm256_broadcast_ss(x + r * ldx + k);
            c0[r] = _mm256_fmadd_ps(w0, b, c0[r]);
            c1[r] = _mm256_fmadd_ps(w1, b, c1[r]);
        }
    }
    // Bias added after the sum (the reference's order); the last panel of N stores only its
    // real outputs (the packed rows past N are zeros, computed and dropped).
    __m256 b0 = _mm256_setzero_ps(), b1 = _mm256_setzero_ps();
    if (bias) {
        alignas(32) float bv[kPanel] = {};
        std::memcpy(bv, bias, sizeof(float) * static_cast<size_t>(cols));
        b0 = _mm256_load_ps(bv);
        b1 = _mm256_load_ps(bv + 8);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        const __m256 v0 = bias ? _mm256_add_ps(c0[r], b0) : c0[r], v1 = bias ? _mm256_add_ps(c1[r], b1) : c1[r];
        float *yr = y + r * ldy;
        if (cols == kPanel) {
            _mm256_storeu_ps(yr, v0);
            _mm256_storeu_ps(yr + 8, v1);
        } else {
            alignas(32) float t[kPanel];
            _mm256_store_ps(t, v0);
            _mm256_store_ps(t + 8, v1);
            std::memcpy(yr, t, sizeof(float) * static_cast<size_t>(cols));
        }
    }
}

using KernelAvx2Fn = void (*)(const float *, int64_t, const float *, int64_t, const float *, float *, int64_t, int);
constexpr KernelAvx2Fn kAvx2Kernels[kAvx2Rows] = {&kernel_avx2<1>, &kernel_avx2<2>, &kernel_avx2<3>,
                                                  &kernel_avx2<4>, &kernel_avx2<5>, &kernel_avx2<6>};

// A unit (two panels from p0 x tokens m0..m1) as panel-by-panel blocks of up to 6 tokens:
// the panel's K·16 weights stay in cache across its token blocks.
void unit_avx2(const float *packed, int64_t N, int64_t K, const float *x, int64_t ldx, const float *bias, float *y,
               int64_t ldy, int64_t p0, int64_t m0, int64_t m1) {
    const int64_t p1 = std::min<int64_t>(p0 + 2, (N + kPanel - 1) / kPanel);
    for (int64_t p = p0; p < p1; ++p) {
        const int64_t n0 = p * kPanel;
        const int cols = static_cast<int>(std::min<int64_t>(kPanel, N - n0));
        for (int64_t r0 = m0; r0 < m1; r0 += kAvx2Rows) {
            const int R = static_cast<int>(std::min<int64_t>(kAvx2Rows, m1 - r0));
            kAvx2Kernels[R - 1](packed + p * K * kPanel, K, x + r0 * ldx, ldx, bias ? bias + n0 : nullptr,
                                y + r0 * ldy + n0, ldy, cols);
        }
    }
}

using KernelFn = void (*)(const float *, int64_t, const float *, int64_t, const float *, float *, int64_t, __mmask16);

template <int P, int... Rs>
constexpr KernelFn pick(int r, std::integer_sequence<int, Rs...>) {
    KernelFn f = nullptr;
    ((f = (r == Rs + 1 ? &kernel<P, Rs + 1> : f)), ...);
    return f;
}

void unit_avx512(const float *packed, int64_t N, int64_t K, const float *x, int64_t ldx, const float *bias, float *y,
                 int64_t ldy, int64_t p0, int64_t m0, int64_t m1) {
    const int64_t n0 = p0 * kPanel;
    const int64_t left = N - n0;  // > 0
    const int P = left > kPanel ? 2 : 1;
    const int64_t tail = left - (P - 1) * kPanel;  // rows of the last panel, 1..16 (or more: full)
    const __mmask16 last = tail >= kPanel ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << tail) - 1u);
    const int R = static_cast<int>(m1 - m0);
    const auto seq = std::make_integer_sequence<int, kMaxRows>{};
    const KernelFn f = P == 2 ? pick<2>(R, seq) : pick<1>(R, seq);
    f(packed + p0 * K * kPanel, K, x + m0 * ldx, ldx, bias ? bias + n0 : nullptr, y + m0 * ldy + n0, ldy, last);
}
#endif

}  // namespace

bool cpu_has_avx512f() {
#if RTF_GEMM_X86
    // libgcc's check includes the OS's XSAVE support for the ZMM state; RTF_ISA may cap it
    return __builtin_cpu_supports("avx512f") && isa_level() >= IsaLevel::avx512;
#else
    return false;
#endif
}

bool cpu_has_avx2_fma() {
#if RTF_GEMM_X86
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && isa_level() >= IsaLevel::avx2;
#else
    return false;
#endif
}

Isa kernel_isa() {
    const char *e = std::getenv("RTF_T2W_PACKED");
    const bool avx2 = cpu_has_avx2_fma();
    if (e && std::strcmp(e, "avx2") == 0 && avx2) return Isa::avx2;
    if (cpu_has_avx512f()) return Isa::avx512;
    return avx2 ? Isa::avx2 : Isa::portable;
}

const char *isa_name(Isa isa) {
    switch (isa) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
    case Isa::portable: break;
    }
    return "portable";
}

bool packed_enabled() {
    const char *e = std::getenv("RTF_T2W_PACKED");
    return kernel_isa() != Isa::portable && !(e && std::strcmp(e, "0") == 0);
}

int64_t packed_floats(int64_t N, int64_t K) { return (N + kPanel - 1) / kPanel * kPanel * K; }

void pack(const float *w, int64_t N, int64_t K, float *dst) {
    const int64_t panels = (N + kPanel - 1) / kPanel;
    for (int64_t p = 0; p < panels; ++p)
        for (int64_t k = 0; k < K; ++k)
            for (int64_t j = 0; j < kPanel; ++j) {
                const int64_t n = p * kPanel + j;
                dst[(p * K + k) * kPanel + j] = n < N ? w[n * K + k] : 0.0f;
            }
}

void pack_in_place(float *w, int64_t N, int64_t K) {
    if (N % kPanel != 0) std::abort();  // a caller bug: the packed matrix would not fit
    std::vector<float> tmp(w, w + N * K);
    pack(tmp.data(), N, K, w);
}

void gemm(const float *packed, int64_t N, int64_t K, const float *x, int64_t ldx, int64_t M, const float *bias, float *y,
          int64_t ldy, int ith, int nth) {
    if (N <= 0 || M <= 0) return;
    const Tiling t(N, M);
    const int64_t u0 = t.units() * ith / nth, u1 = t.units() * (ith + 1) / nth;
    const Isa isa = kernel_isa();
    for (int64_t u = u0; u < u1; ++u) {
        const int64_t tile = u / t.mblocks, mb = u % t.mblocks;
        const int64_t p0 = tile * 2;
        const int64_t m0 = mb * kMaxRows, m1 = std::min<int64_t>(M, m0 + kMaxRows);
        if (K == 0) {  // an empty sum: y = b (or 0)
            for (int64_t m = m0; m < m1; ++m)
                for (int64_t n = p0 * kPanel; n < std::min<int64_t>(N, (p0 + 2) * kPanel); ++n) y[m * ldy + n] = bias ? 0.0f + bias[n] : 0.0f;
            continue;
        }
#if RTF_GEMM_X86
        if (isa == Isa::avx512) {
            unit_avx512(packed, N, K, x, ldx, bias, y, ldy, p0, m0, m1);
            continue;
        }
        if (isa == Isa::avx2) {
            unit_avx2(packed, N, K, x, ldx, bias, y, ldy, p0, m0, m1);
            continue;
        }
#endif
        unit_portable(packed, N, K, x, ldx, bias, y, ldy, p0 * kPanel, std::min<int64_t>(N, (p0 + 2) * kPanel), m0, m1);
    }
    (void)isa;
}

void gemm_reference(const float *w, int64_t N, int64_t K, const float *x, int64_t ldx, int64_t M, const float *bias,
                    float *y, int64_t ldy) {
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            float acc = 0.0f;
            for (int64_t k = 0; k < K; ++k) acc = std::fma(w[n * K + k], x[m * ldx + k], acc);
            y[m * ldy + n] = bias ? acc + bias[n] : acc;
        }
}

namespace {
PackedRegistry &registry() {
    static PackedRegistry r;
    return r;
}
}  // namespace

void register_packed(const ggml_tensor *w) { registry().add(w); }
void unregister_packed(const ggml_tensor *w) { registry().remove(w); }
bool is_packed(const ggml_tensor *w) { return registry().contains(w); }

namespace {

// dst->src = {x, W (packed), b?}; x rows are contiguous (linear() makes sure).
void linear_op(ggml_tensor *dst, int ith, int nth, void *) {
    const ggml_tensor *x = dst->src[0], *w = dst->src[1], *b = dst->src[2];
    const int64_t K = w->ne[0], N = w->ne[1];
    const int64_t M = x->ne[1] * x->ne[2] * x->ne[3];
    gemm(static_cast<const float *>(w->data), N, K, static_cast<const float *>(x->data), x->nb[1] / sizeof(float), M,
         b ? static_cast<const float *>(b->data) : nullptr, static_cast<float *>(dst->data), dst->nb[1] / sizeof(float), ith,
         nth);
}

}  // namespace

namespace {
PackedRegistry &conv_registry() {
    static PackedRegistry r;
    return r;
}

// dst->src = {x [Cin, T, B] contiguous, W packed k-major [k, Cin, Cout], b?}
void conv_op(ggml_tensor *dst, int ith, int nth, void *) {
    const ggml_tensor *x = dst->src[0], *w = dst->src[1], *b = dst->src[2];
    const int64_t k = w->ne[0], Cin = w->ne[1], Cout = w->ne[2];
    const int64_t T = x->ne[1], Tout = dst->ne[1], B = x->ne[2] * x->ne[3];
    for (int64_t bb = 0; bb < B; ++bb) {
        gemm(static_cast<const float *>(w->data), Cout, k * Cin, static_cast<const float *>(x->data) + bb * T * Cin, Cin, Tout,
             b ? static_cast<const float *>(b->data) : nullptr, static_cast<float *>(dst->data) + bb * Tout * Cout, Cout, ith,
             nth);
    }
}
}  // namespace

void pack_conv_k_major_in_place(float *w, int64_t k, int64_t Cin, int64_t Cout) {
    if (Cout % kPanel != 0) std::abort();  // a caller bug, as pack_in_place
    std::vector<float> tmp(static_cast<size_t>(k * Cin * Cout));
    reorder_k_major(w, tmp.data(), k, Cin, Cout);
    pack(tmp.data(), Cout, k * Cin, w);
}

void register_conv_k_major(const ggml_tensor *w) { conv_registry().add(w); }
void unregister_conv_k_major(const ggml_tensor *w) { conv_registry().remove(w); }
bool is_conv_k_major(const ggml_tensor *w) { return conv_registry().contains(w); }

ggml_tensor *conv_k_major(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w_packed, ggml_tensor *b) {
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    ggml_tensor *args[3] = {x, w_packed, b};
    const int64_t Tout = x->ne[1] - w_packed->ne[0] + 1;
    ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, w_packed->ne[2], Tout, x->ne[2], x->ne[3], args, b ? 3 : 2, conv_op,
                                    GGML_N_TASKS_MAX, nullptr);
    ggml_set_name(y, "rtf:packed-conv-ct-f32");
    return y;
}

ggml_tensor *linear(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w_packed, ggml_tensor *b) {
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    ggml_tensor *args[3] = {x, w_packed, b};
    ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, w_packed->ne[1], x->ne[1], x->ne[2], x->ne[3], args, b ? 3 : 2, linear_op,
                          GGML_N_TASKS_MAX, nullptr);
    ggml_set_name(y, "rtf:packed-gemm-f32");
    return y;
}

}  // namespace rtf::t2w::gemm
