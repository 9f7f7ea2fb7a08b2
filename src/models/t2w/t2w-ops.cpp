#include "models/t2w/t2w-ops.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "models/t2w/onednn-linear.h"
#include "models/t2w/packed-gemm-bf16.h"
#include "models/t2w/packed-gemm.h"

namespace rtf::t2w::ops {

ggml_tensor *linear(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b) {
    if (onednn::is_registered(w)) return onednn::linear(ctx, x, w, b);
    if (gemm::is_packed(w)) return w->type == GGML_TYPE_BF16 ? gemm::linear_bf16(ctx, x, w, b) : gemm::linear(ctx, x, w, b);
    ggml_tensor *y = ggml_mul_mat(ctx, w, x);
    return b ? ggml_add(ctx, y, b) : y;
}

ggml_tensor *layer_norm(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, float eps) {
    ggml_tensor *y = ggml_norm(ctx, x, eps);
    if (w) y = ggml_mul(ctx, y, w);
    if (b) y = ggml_add(ctx, y, b);
    return y;
}

ggml_tensor *conv1d_ct(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, int dilation) {
    const int64_t K = w->ne[0], Cin = w->ne[1], Cout = w->ne[2];
    if (gemm::is_conv_k_major(w)) {
        if (dilation != 1) throw_usage("t2w: a k-major packed conv kernel takes dilation 1 only, got " + std::to_string(dilation));
        // the input read in place: no permute, no im2col
        return w->type == GGML_TYPE_BF16 ? gemm::conv_k_major_bf16(ctx, x, w, b) : gemm::conv_k_major(ctx, x, w, b);
    }
    ggml_tensor *xt = ggml_cont(ctx, ggml_permute(ctx, x, 1, 0, 2, 3));  // [T, Cin, B]
    ggml_tensor *col = ggml_im2col(ctx, w, xt, 1, 0, 0, 0, dilation, 0, false, GGML_TYPE_F32);  // [K·Cin, Tout, B]
    if (gemm::is_packed(w)) return gemm::linear(ctx, col, ggml_reshape_2d(ctx, w, K * Cin, Cout), b);
    ggml_tensor *y = ggml_mul_mat(ctx, ggml_reshape_2d(ctx, w, K * Cin, Cout), col);        // [Cout, Tout, B]
    return b ? ggml_add(ctx, y, b) : y;
}

ggml_tensor *conv1d_tc(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, int stride, int pad,
                       int dilation) {
    const int64_t K = w->ne[0], Cin = w->ne[1], Cout = w->ne[2];
    // An F16 kernel (T2wConfig::type_voc) takes an F16 im2col: the product is then F16 x F16.
    const ggml_type col_type = w->type == GGML_TYPE_F16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
    ggml_tensor *col = ggml_im2col(ctx, w, x, stride, 0, pad, 0, dilation, 0, false, col_type);  // [K·Cin, Tout]
    col = ggml_reshape_2d(ctx, col, col->ne[0], col->ne[1] * col->ne[2]);
    if (gemm::is_packed(w)) {
        // the packed GEMM writes time-major rows ([Cout, Tout]); this layout is channel-major
        ggml_tensor *y = gemm::linear(ctx, col, ggml_reshape_2d(ctx, w, K * Cin, Cout), b);
        return ggml_cont(ctx, ggml_transpose(ctx, y));  // [Tout, Cout]
    }
    ggml_tensor *y = ggml_mul_mat(ctx, col, ggml_reshape_2d(ctx, w, K * Cin, Cout));  // [Tout, Cout]
    return b ? ggml_add(ctx, y, ggml_reshape_2d(ctx, b, 1, Cout)) : y;
}

ggml_tensor *conv_transpose1d_tc(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, int stride, int pad) {
    ggml_tensor *y = ggml_conv_transpose_1d(ctx, w, x, stride, 0, 1);  // [(T-1)s+K, Cout]
    const int64_t n = y->ne[0] - 2 * pad;
    y = ggml_view_2d(ctx, y, n, y->ne[1], y->nb[1], static_cast<size_t>(pad) * y->nb[0]);
    y = ggml_cont(ctx, y);
    return b ? ggml_add(ctx, y, ggml_reshape_2d(ctx, b, 1, b->ne[0])) : y;
}

ggml_tensor *conv_transpose1d_tc_packed(ggml_context *ctx, ggml_tensor *x, ggml_tensor *wp, int K, int Cout, int stride,
                                        int pad, ggml_tensor *b) {
    const int64_t T = x->ne[0], s = stride, G = (K + stride - 1) / stride;
    ggml_tensor *xt = ggml_cont(ctx, ggml_transpose(ctx, x));          // [Cin, T]
    ggml_tensor *r = linear(ctx, xt, wp, nullptr);                      // [G·s·Cout, T]: (kk, c, j) x t
    r = ggml_reshape_4d(ctx, r, s, Cout, G, T);
    r = ggml_cont(ctx, ggml_permute(ctx, r, 0, 2, 3, 1));              // [s, T, Cout, G]: time t·s+kk contiguous
    r = ggml_reshape_3d(ctx, r, s * T, Cout, G);
    ggml_tensor *y = nullptr;
    for (int64_t j = 0; j < G; ++j) {                                   // group j lands j·s samples later
        ggml_tensor *yj = ggml_view_2d(ctx, r, s * T, Cout, r->nb[1], static_cast<size_t>(j) * r->nb[2]);
        yj = ggml_pad_ext(ctx, yj, static_cast<int>(j * s), static_cast<int>((G - 1 - j) * s), 0, 0, 0, 0, 0, 0);
        y = y ? ggml_add(ctx, y, yj) : yj;
    }
    const int64_t n = (T - 1) * s + K - 2 * pad;
    y = ggml_cont(ctx, ggml_view_2d(ctx, y, n, Cout, y->nb[1], static_cast<size_t>(pad) * y->nb[0]));
    return b ? ggml_add(ctx, y, ggml_reshape_2d(ctx, b, 1, b->ne[0])) : y;
}

std::vector<float> pack_transposed_kernel(const std::vector<float> &w, int K, int Cout, int Cin, int stride) {
    const int G = (K + stride - 1) / stride;
    const size_t rows = static_cast<size_t>(G) * stride * Cout;
    std::vector<float> p(rows * Cin, 0.0f);
    for (int j = 0; j < G; ++j)
        for (int c = 0; c < Cout; ++c)
            for (int kk = 0; kk < stride; ++kk) {
                const int k = j * stride + kk;
                if (k >= K) continue;
                const size_t r = kk + static_cast<size_t>(stride) * (c + static_cast<size_t>(Cout) * j);
                for (int ci = 0; ci < Cin; ++ci) p[r * Cin + ci] = w[k + static_cast<size_t>(K) * (c + static_cast<size_t>(Cout) * ci)];
            }
    return p;
}

ggml_tensor *snake(ggml_context *ctx, ggml_tensor *x, ggml_tensor *alpha) {
    ggml_tensor *a = ggml_reshape_2d(ctx, alpha, 1, alpha->ne[0]);
    ggml_tensor *s = ggml_sin(ctx, ggml_mul(ctx, x, a));
    ggml_tensor *den = ggml_scale_bias(ctx, a, 1.0f, 1e-9f);
    return ggml_add(ctx, x, ggml_div(ctx, ggml_mul(ctx, s, s), den));
}

namespace {
// One channel of snake with a sine the compiler can vectorise (libm's sinf is a call per
// sample: ~16 M per vocoder window, a large share of its time). sin(v) = ±sin(r) with
// r = v - kπ (Cody-Waite: π split in three floats, k = v/π rounded by the 1.5·2^23
// trick), then an odd degree-11 polynomial fitted to sin on [-π/2, π/2]. Snake needs sin²,
// so the sign of odd k is irrelevant. Max abs error 1.3e-7 for |v| <= 200 (libm sinf:
// 6.8e-8); samples with |v| > 1e5, where the reduction loses precision, use std::sin.
// Built for AVX-512, AVX2 and baseline x86-64, picked at run time (target_clones).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void snake_row(const float *x, float *y, int64_t n, float al, float den) {
    constexpr float kInvPi = 0.318309886183790671f, kRound = 12582912.0f;  // 1.5 * 2^23
    constexpr float kPiA = 3.140625f, kPiB = 9.67502593994140625e-4f, kPiC = 1.509957990978376432e-7f;
    constexpr float kS1 = -0.166666672f, kS2 = 0.00833333004f, kS3 = -0.000198408045f, kS4 = 2.75226171e-06f,
                    kS5 = -2.38466811e-08f;
    for (int64_t t = 0; t < n; ++t) {
        const float v = x[t] * al;
        const float k = (v * kInvPi + kRound) - kRound;
        float r = v - k * kPiA;
        r -= k * kPiB;
        r -= k * kPiC;
        const float r2 = r * r;
        const float s = r + r * r2 * (kS1 + r2 * (kS2 + r2 * (kS3 + r2 * (kS4 + r2 * kS5))));
        y[t] = x[t] + (s * s) / den;
    }
    // Large or NaN arguments: libm. Counted first in a loop the compiler vectorises (a
    // per-sample branch around the call kept the fix-up pass scalar: 3/4 of this function's time).
    int bad = 0;
    for (int64_t t = 0; t < n; ++t) bad += std::fabs(x[t] * al) <= 1e5f ? 0 : 1;
    if (bad == 0) return;
    for (int64_t t = 0; t < n; ++t) {
        const float v = x[t] * al;
        if (!(std::fabs(v) <= 1e5f)) {
            const float s = std::sin(v);
            y[t] = x[t] + (s * s) / den;
        }
    }
}

// dst = a + sin(a·α)²/(α + 1e-9), the operations of snake() with the sine of snake_row().
void snake_kernel(ggml_tensor *dst, const ggml_tensor *a, const ggml_tensor *alpha, int ith, int nth, void *) {
    const int64_t T = a->ne[0], C = a->ne[1];
    const int64_t c0 = C * ith / nth, c1 = C * (ith + 1) / nth;
    for (int64_t c = c0; c < c1; ++c) {
        const float al = *reinterpret_cast<const float *>(static_cast<const char *>(alpha->data) + c * alpha->nb[0]);
        const float *x = reinterpret_cast<const float *>(static_cast<const char *>(a->data) + c * a->nb[1]);
        float *y = reinterpret_cast<float *>(static_cast<char *>(dst->data) + c * dst->nb[1]);
        snake_row(x, y, T, al, al + 1e-9f);
    }
}
}  // namespace

ggml_tensor *snake_fused(ggml_context *ctx, ggml_tensor *x, ggml_tensor *alpha) {
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    return ggml_map_custom2(ctx, x, alpha, snake_kernel, GGML_N_TASKS_MAX, nullptr);
}

ggml_tensor *slice_t(ggml_context *ctx, ggml_tensor *x, int64_t t0, int64_t n) {
    return ggml_view_3d(ctx, x, x->ne[0], n, x->ne[2], x->nb[1], x->nb[2], static_cast<size_t>(t0) * x->nb[1]);
}

}  // namespace rtf::t2w::ops
