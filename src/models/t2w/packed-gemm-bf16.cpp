#include "models/t2w/packed-gemm-bf16.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "core/cpu-features.h"
#include "models/t2w/bf16-round.h"
#include "models/t2w/packed-gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RTF_BF16_X86 1
#else
#define RTF_BF16_X86 0
#endif

namespace rtf::t2w::gemm {

namespace {

constexpr int kRows = 12;  // tokens per micro-kernel block (24 accumulators, as the F32 kernel)

float bf16_to_f32(uint16_t h) {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

#if RTF_BF16_X86
// P panels (1 or 2) x R tokens; a = the first panel's K/2 pairs x 16 outputs (the second
// panel follows it). Every panel is full (N % 16 == 0 is a packing requirement).
template <int P, int R>
__attribute__((target("avx512f,avx512bf16"))) void kernel(const uint16_t *a, int64_t K2, const uint16_t *x, int64_t ldx,
                                                          const float *bias, float *y, int64_t ldy) {
    __m512 c[P][R];
    for (int p = 0; p < P; ++p)
        for (int r = 0; r < R; ++r) c[p][r] = _mm512_setzero_ps();
    const uint16_t *a1 = a + K2 * 2 * kPanel;
    for (int64_t kk = 0; kk < K2; ++kk) {
        const __m512bh w0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(a + kk * 2 * kPanel));
        __m512bh w1 = w0;
        if constexpr (P == 2) w1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(a1 + kk * 2 * kPanel));
        for (int r = 0; r < R; ++r) {
            int32_t pair;
            std::memcpy(&pair, x + r * ldx + 2 * kk, sizeof pair);
            const __m512bh b = reinterpret_cast<__m512bh>(_mm512_set1_epi32(pair));
            c[0][r] = _mm512_dpbf16_ps(c[0][r], w0, b);
            if constexpr (P == 2) c[1][r] = _mm512_dpbf16_ps(c[1][r], w1, b);
        }
    }
    for (int p = 0; p < P; ++p) {
        const __m512 bv = bias ? _mm512_loadu_ps(bias + p * kPanel) : _mm512_setzero_ps();
        for (int r = 0; r < R; ++r)
            _mm512_storeu_ps(y + r * ldy + p * kPanel, bias ? _mm512_add_ps(c[p][r], bv) : c[p][r]);
    }
}

using KernelFn = void (*)(const uint16_t *, int64_t, const uint16_t *, int64_t, const float *, float *, int64_t);

template <int P, int... Rs>
constexpr KernelFn pick(int r, std::integer_sequence<int, Rs...>) {
    KernelFn f = nullptr;
    ((f = (r == Rs + 1 ? &kernel<P, Rs + 1> : f)), ...);
    return f;
}
#endif

}  // namespace

bool cpu_has_avx512bf16() {
#if RTF_BF16_X86
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16") &&
           isa_level() >= IsaLevel::avx512_bf16;  // RTF_ISA may cap it
#else
    return false;
#endif
}

bool bf16_packed_enabled() {
    const char *e = std::getenv("RTF_T2W_PACKED");
    return cpu_has_avx512bf16() && !(e && std::strcmp(e, "0") == 0);
}

bool pack_bf16_in_place(uint16_t *w, int64_t N, int64_t K) {
    if (N % kPanel != 0 || K % 2 != 0 || N <= 0 || K <= 0) return false;
    const std::vector<uint16_t> src(w, w + N * K);
    const int64_t K2 = K / 2;
    for (int64_t p = 0; p < N / kPanel; ++p)
        for (int64_t kk = 0; kk < K2; ++kk)
            for (int64_t j = 0; j < kPanel; ++j)
                for (int64_t e = 0; e < 2; ++e)
                    w[((p * K2 + kk) * kPanel + j) * 2 + e] = src[static_cast<size_t>((p * kPanel + j) * K + 2 * kk + e)];
    return true;
}

void gemm_bf16(const uint16_t *packed, int64_t N, int64_t K, const uint16_t *x, int64_t ldx, int64_t M,
               const float *bias, float *y, int64_t ldy, int ith, int nth) {
#if RTF_BF16_X86
    if (N <= 0 || M <= 0) return;
    // Work units: (pair of panels) x (block of kRows tokens), tile-major, as the F32 GEMM.
    const int64_t panels = N / kPanel, tiles = (panels + 1) / 2, mblocks = (M + kRows - 1) / kRows;
    const int64_t units = tiles * mblocks, u0 = units * ith / nth, u1 = units * (ith + 1) / nth;
    const auto seq = std::make_integer_sequence<int, kRows>{};
    const int64_t K2 = K / 2;
    for (int64_t u = u0; u < u1; ++u) {
        const int64_t p0 = (u / mblocks) * 2, m0 = (u % mblocks) * kRows, m1 = std::min<int64_t>(M, m0 + kRows);
        const int P = p0 + 1 < panels ? 2 : 1;
        const KernelFn f = P == 2 ? pick<2>(static_cast<int>(m1 - m0), seq) : pick<1>(static_cast<int>(m1 - m0), seq);
        f(packed + p0 * K2 * 2 * kPanel, K2, x + m0 * ldx, ldx, bias ? bias + p0 * kPanel : nullptr,
          y + m0 * ldy + p0 * kPanel, ldy);
    }
#else
    (void)packed, (void)N, (void)K, (void)x, (void)ldx, (void)M, (void)bias, (void)y, (void)ldy, (void)ith, (void)nth;
    std::abort();  // bf16_packed_enabled() is false here: nothing is packed
#endif
}

void gemm_bf16_reference(const uint16_t *w, int64_t N, int64_t K, const uint16_t *x, int64_t ldx, int64_t M,
                         const float *bias, float *y, int64_t ldy) {
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            float acc = 0.0f;
            for (int64_t k = 0; k + 1 < K; k += 2) {
                acc = std::fma(bf16_to_f32(w[n * K + k + 1]), bf16_to_f32(x[m * ldx + k + 1]), acc);
                acc = std::fma(bf16_to_f32(w[n * K + k]), bf16_to_f32(x[m * ldx + k]), acc);
            }
            y[m * ldy + n] = bias ? acc + bias[n] : acc;
        }
}

namespace {

// dst->src = {x (F32, contiguous rows), W (packed BF16), b?}. Each thread rounds x to bf16
// itself (bf16-round.h: the bits of ggml's F32 -> BF16 copy, 16 lanes at a time), into its
// own buffer, then runs its share of the output blocks.
void linear_bf16_op(ggml_tensor *dst, int ith, int nth, void *) {
    const ggml_tensor *x = dst->src[0], *w = dst->src[1], *b = dst->src[2];
    const int64_t K = w->ne[0], N = w->ne[1];
    const int64_t M = x->ne[1] * x->ne[2] * x->ne[3];
    thread_local std::vector<uint16_t> xb;
    xb.resize(static_cast<size_t>(M * K));
    round_to_bf16(static_cast<const float *>(x->data), xb.data(), M * K);
    gemm_bf16(static_cast<const uint16_t *>(w->data), N, K, xb.data(), K, M, b ? static_cast<const float *>(b->data) : nullptr,
              static_cast<float *>(dst->data), dst->nb[1] / sizeof(float), ith, nth);
}

}  // namespace

namespace {
// dst->src = {x [Cin, T, B] F32 contiguous, W bf16 packed k-major [k, Cin, Cout], b?}
void conv_bf16_op(ggml_tensor *dst, int ith, int nth, void *) {
    const ggml_tensor *x = dst->src[0], *w = dst->src[1], *b = dst->src[2];
    const int64_t k = w->ne[0], Cin = w->ne[1], Cout = w->ne[2];
    const int64_t T = x->ne[1], Tout = dst->ne[1], B = x->ne[2] * x->ne[3];
    thread_local std::vector<uint16_t> xb;
    xb.resize(static_cast<size_t>(Cin * T * B));
    round_to_bf16(static_cast<const float *>(x->data), xb.data(), Cin * T * B);
    for (int64_t bb = 0; bb < B; ++bb) {
        gemm_bf16(static_cast<const uint16_t *>(w->data), Cout, k * Cin, xb.data() + bb * T * Cin, Cin, Tout,
                  b ? static_cast<const float *>(b->data) : nullptr, static_cast<float *>(dst->data) + bb * Tout * Cout, Cout,
                  ith, nth);
    }
}
}  // namespace

bool pack_conv_k_major_bf16_in_place(uint16_t *w, int64_t k, int64_t Cin, int64_t Cout) {
    if (Cout % kPanel != 0 || (k * Cin) % 2 != 0) return false;
    const std::vector<uint16_t> src(w, w + k * Cin * Cout);
    reorder_k_major(src.data(), w, k, Cin, Cout);
    return pack_bf16_in_place(w, Cout, k * Cin);
}

ggml_tensor *conv_k_major_bf16(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w_packed, ggml_tensor *b) {
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    ggml_tensor *args[3] = {x, w_packed, b};
    const int64_t Tout = x->ne[1] - w_packed->ne[0] + 1;
    ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, w_packed->ne[2], Tout, x->ne[2], x->ne[3], args, b ? 3 : 2,
                                    conv_bf16_op, GGML_N_TASKS_MAX, nullptr);
    ggml_set_name(y, "rtf:packed-conv-ct-bf16");
    return y;
}

ggml_tensor *linear_bf16(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w_packed, ggml_tensor *b) {
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    ggml_tensor *args[3] = {x, w_packed, b};
    ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, w_packed->ne[1], x->ne[1], x->ne[2], x->ne[3], args, b ? 3 : 2,
                          linear_bf16_op, GGML_N_TASKS_MAX, nullptr);
    ggml_set_name(y, "rtf:packed-gemm-bf16");
    return y;
}

}  // namespace rtf::t2w::gemm
