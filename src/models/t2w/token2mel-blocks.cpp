#include "models/t2w/token2mel-blocks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <ggml-cpu.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "core/error.h"
#include "models/t2w/dit-attention.h"
#include "models/t2w/packed-gemm.h"
#include "models/t2w/t2w-ops.h"

namespace rtf::t2w::blocks {

using ops::conv1d_ct;
using ops::layer_norm;
using ops::linear;
using ops::slice_t;

namespace {

// Mish of one row, z·tanh(ln(1 + e^z)), as z·n/(n + 2) with n = e^z·(e^z + 2): the same
// function (tanh(ln u) = (u² - 1)/(u² + 1), u = 1 + e^z), one exponential instead of exp, log
// and tanh (ggml's TANH and LOG are scalar libm calls: ~5 % of token2mel's CPU time), in a
// loop the compiler vectorises. e^z = 2^k·p(r), r = z - k·ln2 (Cody-Waite, ln2 in two
// floats), p degree 6 (relative error ~2e-7). z is clamped to [-87, 20] inside the
// exponential: above 20, n/(n + 2) is 1 in float; below -87, Mish is 0 to float precision.
// More accurate than the reference's float exp → +1 → log → tanh chain for z << 0 (where
// 1 + e^z rounds), so the two differ there by up to ~1e-6 absolute.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void mish_row(const float *x, float *y, int64_t n) {
    constexpr float kLog2e = 1.44269504088896341f, kRound = 12582912.0f;  // 1.5 * 2^23
    constexpr float kLn2Hi = 0.693145751953125f, kLn2Lo = 1.42860682030941723e-6f;
    constexpr float kP2 = 0.5f, kP3 = 0.166666672f, kP4 = 0.0416666679f, kP5 = 0.00833333377f, kP6 = 0.00138888892f;
    for (int64_t t = 0; t < n; ++t) {
        const float z = x[t];
        const float zc = std::min(std::max(z, -87.0f), 20.0f);
        const float k = (zc * kLog2e + kRound) - kRound;
        const float r = (zc - k * kLn2Hi) - k * kLn2Lo;
        const float p = 1.0f + r * (1.0f + r * (kP2 + r * (kP3 + r * (kP4 + r * (kP5 + r * kP6)))));
        const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
        float scale;
        std::memcpy(&scale, &bits, sizeof scale);
        const float e = p * scale;
        const float nn = e * (e + 2.0f);
        y[t] = z * (nn / (nn + 2.0f));
    }
}

void mish_kernel(ggml_tensor *dst, const ggml_tensor *a, int ith, int nth, void *) {
    const int64_t C = a->ne[0], rows = ggml_nrows(a);
    const int64_t r0 = rows * ith / nth, r1 = rows * (ith + 1) / nth;
    for (int64_t r = r0; r < r1; ++r) {
        mish_row(static_cast<const float *>(a->data) + r * C, static_cast<float *>(dst->data) + r * C, C);
    }
}

// ggml's CPU GELU output for every fp16 input (index = the fp16 bits), from ggml_gelu
// itself on a 65536-element tensor, once: gelu_fast() looks values up here, so it equals
// ggml's op bit for bit whatever ggml's own build flags made of its tanh formula.
const std::vector<float> &gelu_table() {
    static const std::vector<float> table = [] {
        constexpr int64_t n = 65536;
        ggml_init_params ip{static_cast<size_t>(n) * sizeof(float) * 2 + ggml_graph_overhead() + 4 * ggml_tensor_overhead(),
                            nullptr, false};
        ggml_context *ctx = ggml_init(ip);
        ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, n);
        auto *xd = static_cast<float *>(x->data);
        for (int64_t i = 0; i < n; ++i) xd[i] = ggml_fp16_to_fp32(static_cast<ggml_fp16_t>(i));
        ggml_tensor *y = ggml_gelu(ctx, x);
        ggml_cgraph *gf = ggml_new_graph_custom(ctx, 4, false);
        ggml_build_forward_expand(gf, y);
        const bool ok = ggml_graph_compute_with_ctx(ctx, gf, 1) == GGML_STATUS_SUCCESS;
        std::vector<float> t(static_cast<const float *>(y->data), static_cast<const float *>(y->data) + n);
        ggml_free(ctx);
        if (!ok) throw_runtime("t2w: the GELU table (ggml_gelu on every fp16 value) failed to compute on the CPU");
        return t;
    }();
    return table;
}

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// ggml_vec_gelu_f32 (GGML_GELU_FP16) 16 lanes at a time: 0 at or below -10, x at or above
// 10, else the table at x rounded to fp16 (nearest even, as F16C's _cvtss_sh(x, 0)).
__attribute__((target("avx512f"))) void gelu_row_avx512(const float *x, float *y, int64_t n, const float *table) {
    const __m512 lo = _mm512_set1_ps(-10.0f), hi = _mm512_set1_ps(10.0f);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (n - i)) - 1u);
        const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        const __m512i idx = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        __m512 g = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, table, 4);
        g = _mm512_mask_mov_ps(g, _mm512_cmp_ps_mask(v, hi, _CMP_GE_OQ), v);
        g = _mm512_maskz_mov_ps(static_cast<__mmask16>(~_mm512_cmp_ps_mask(v, lo, _CMP_LE_OQ)), g);
        _mm512_mask_storeu_ps(y + i, m, g);
    }
}
// The same 8 lanes at a time with AVX2 + F16C (an AVX2-only CPU: this op was ~7 % of
// token2mel's time there on the scalar loop below); the tail on the scalar loop.
void gelu_row_portable(const float *x, float *y, int64_t n, const float *table);
__attribute__((target("avx2,f16c"))) void gelu_row_avx2(const float *x, float *y, int64_t n, const float *table) {
    const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256i idx = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        __m256 g = _mm256_i32gather_ps(table, idx, 4);
        g = _mm256_blendv_ps(g, v, _mm256_cmp_ps(v, hi, _CMP_GE_OQ));
        g = _mm256_andnot_ps(_mm256_cmp_ps(v, lo, _CMP_LE_OQ), g);
        _mm256_storeu_ps(y + i, g);
    }
    gelu_row_portable(x + i, y + i, n - i, table);
}
#pragma GCC diagnostic pop
#endif

void gelu_row_portable(const float *x, float *y, int64_t n, const float *table) {
    for (int64_t i = 0; i < n; ++i) {
        if (x[i] <= -10.0f) y[i] = 0.0f;
        else if (x[i] >= 10.0f) y[i] = x[i];
        else y[i] = table[ggml_fp32_to_fp16(x[i])];
    }
}

void gelu_kernel(ggml_tensor *dst, const ggml_tensor *a, int ith, int nth, void *) {
    const int64_t C = a->ne[0], rows = ggml_nrows(a);
    const int64_t r0 = rows * ith / nth, r1 = rows * (ith + 1) / nth;
    const float *table = gelu_table().data();
#if defined(__x86_64__) && defined(__GNUC__)
    // The packed GEMM's kernel choice (read per call): RTF_T2W_PACKED=avx2 runs the AVX2 row on
    // an AVX-512 CPU too, as every AVX2 kernel of ours (A/B, and its test on any CI machine).
    static const bool f16c = __builtin_cpu_supports("f16c");
    const gemm::Isa isa = gemm::kernel_isa();
    const bool fast = isa == gemm::Isa::avx512, avx2 = isa == gemm::Isa::avx2 && f16c;
#endif
    for (int64_t r = r0; r < r1; ++r) {
        const float *x = static_cast<const float *>(a->data) + r * C;
        float *y = static_cast<float *>(dst->data) + r * C;
#if defined(__x86_64__) && defined(__GNUC__)
        if (fast) {
            gelu_row_avx512(x, y, C, table);
            continue;
        }
        if (avx2) {
            gelu_row_avx2(x, y, C, table);
            continue;
        }
#endif
        gelu_row_portable(x, y, C, table);
    }
}

}  // namespace

ggml_tensor *gelu_fast(ggml_context *ctx, ggml_tensor *x) {
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    (void)gelu_table();  // built here, at graph build time, not inside a timed compute
    ggml_tensor *y = ggml_map_custom1(ctx, x, gelu_kernel, GGML_N_TASKS_MAX, nullptr);
    ggml_set_name(y, "rtf:gelu-f16-table");
    return y;
}

ggml_tensor *mish(ggml_context *ctx, ggml_tensor *x) {
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    return ggml_map_custom1(ctx, x, mish_kernel, GGML_N_TASKS_MAX, nullptr);
}

ggml_tensor *mish_chain(ggml_context *ctx, ggml_tensor *x) {
    return ggml_mul(ctx, x, ggml_tanh(ctx, ggml_log(ctx, ggml_scale_bias(ctx, ggml_exp(ctx, x), 1.0f, 1.0f))));
}

ggml_tensor *rel_pos_mha(ggml_context *ctx, const GgufWeights &w, const std::string &p, ggml_tensor *y, ggml_tensor *cache,
                         ggml_tensor *pe, int Sc, int H, int hd, ggml_tensor **new_cache) {
    const int64_t d = static_cast<int64_t>(H) * hd;
    const int64_t Tq = y->ne[1];
    const int64_t S = Sc + Tq;
    const int64_t Tp = 2 * S - 1;
    ggml_tensor *q = ggml_reshape_3d(ctx, linear(ctx, y, w.mm(p + "self_attn.linear_q.weight"), w.get(p + "self_attn.linear_q.bias")), hd, H, Tq);
    ggml_tensor *k = ggml_reshape_3d(ctx, linear(ctx, y, w.mm(p + "self_attn.linear_k.weight"), w.get(p + "self_attn.linear_k.bias")), hd, H, Tq);
    ggml_tensor *vv = ggml_reshape_3d(ctx, linear(ctx, y, w.mm(p + "self_attn.linear_v.weight"), w.get(p + "self_attn.linear_v.bias")), hd, H, Tq);
    k = ggml_cont(ctx, ggml_permute(ctx, k, 0, 2, 1, 3));  // [hd, Tq, H]
    vv = ggml_cont(ctx, ggml_permute(ctx, vv, 0, 2, 1, 3));
    ggml_tensor *kt = k, *vt = vv;  // [hd, S, H]; no cache (Sc = 0): the prompt setup, docs/minicpmo45.md §4.9
    if (Sc > 0) {
        ggml_tensor *kc = ggml_cont(ctx, ggml_view_3d(ctx, cache, hd, Sc, H, cache->nb[1], cache->nb[2], 0));
        ggml_tensor *vc = ggml_cont(ctx, ggml_view_3d(ctx, cache, hd, Sc, H, cache->nb[1], cache->nb[2], hd * sizeof(float)));
        kt = ggml_concat(ctx, kc, k, 1);
        vt = ggml_concat(ctx, vc, vv, 1);
    }
    *new_cache = ggml_concat(ctx, kt, vt, 0);  // [2hd, S, H]
    ggml_tensor *qu = ggml_cont(ctx, ggml_permute(ctx, ggml_add(ctx, q, w.get(p + "self_attn.pos_bias_u")), 0, 2, 1, 3));
    ggml_tensor *qv = ggml_cont(ctx, ggml_permute(ctx, ggml_add(ctx, q, w.get(p + "self_attn.pos_bias_v")), 0, 2, 1, 3));
    ggml_tensor *ac = ggml_mul_mat(ctx, kt, qu);  // [S, Tq, H]
    ggml_tensor *pp = linear(ctx, pe, w.mm(p + "self_attn.linear_pos.weight"), nullptr);  // [d, Tp]
    pp = ggml_cont(ctx, ggml_permute(ctx, ggml_reshape_3d(ctx, pp, hd, H, Tp), 0, 2, 1, 3));  // [hd, Tp, H]
    ggml_tensor *bd = ggml_mul_mat(ctx, pp, qv);  // [Tp, Tq, H]
    // ESPnet rel-shift: BD[i][j] = BD'[i][j + Tq-1-i] for j < S (a strided view).
    bd = ggml_view_3d(ctx, bd, S, Tq, H, (Tp - 1) * sizeof(float), bd->nb[2], (Tq - 1) * sizeof(float));
    ggml_tensor *sc = ggml_add(ctx, ac, ggml_cont(ctx, bd));
    sc = ggml_scale(ctx, sc, 1.0f / std::sqrt(static_cast<float>(hd)));
    sc = ggml_soft_max(ctx, sc);
    ggml_tensor *vtt = ggml_cont(ctx, ggml_permute(ctx, vt, 1, 0, 2, 3));  // [S, hd, H]
    ggml_tensor *o = ggml_mul_mat(ctx, vtt, sc);                           // [hd, Tq, H]
    o = ggml_reshape_2d(ctx, ggml_cont(ctx, ggml_permute(ctx, o, 0, 2, 1, 3)), d, Tq);
    return linear(ctx, o, w.mm(p + "self_attn.linear_out.weight"), w.get(p + "self_attn.linear_out.bias"));
}

ggml_tensor *conformer_layer(ggml_context *ctx, const GgufWeights &w, const std::string &p, ggml_tensor *x, ggml_tensor *cache,
                             ggml_tensor *pe, int Sc, int H, int hd, ggml_tensor **new_cache) {
    ggml_tensor *y = layer_norm(ctx, x, w.get(p + "norm_mha.weight"), w.get(p + "norm_mha.bias"), 1e-12f);
    x = ggml_add(ctx, x, rel_pos_mha(ctx, w, p, y, cache, pe, Sc, H, hd, new_cache));
    y = layer_norm(ctx, x, w.get(p + "norm_ff.weight"), w.get(p + "norm_ff.bias"), 1e-12f);
    y = linear(ctx, y, w.mm(p + "feed_forward.w_1.weight"), w.get(p + "feed_forward.w_1.bias"));
    y = ggml_silu(ctx, y);
    y = linear(ctx, y, w.mm(p + "feed_forward.w_2.weight"), w.get(p + "feed_forward.w_2.bias"));
    return ggml_add(ctx, x, y);
}

ggml_tensor *dit_time_condition(ggml_context *ctx, const GgufWeights &w, ggml_tensor *t, int freq_dim, int hidden) {
    ggml_tensor *temb = ggml_timestep_embedding(ctx, ggml_scale(ctx, t, 1000.0f), freq_dim, 10000);
    ggml_tensor *c = linear(ctx, temb, w.mm("estimator.t_embedder.mlp.0.weight"), w.get("estimator.t_embedder.mlp.0.bias"));
    c = linear(ctx, ggml_silu(ctx, c), w.mm("estimator.t_embedder.mlp.2.weight"), w.get("estimator.t_embedder.mlp.2.bias"));
    return ggml_silu(ctx, ggml_reshape_1d(ctx, c, hidden));
}

ggml_tensor *dit_attention(ggml_context *ctx, const GgufWeights &w, const std::string &p, ggml_tensor *m, ggml_tensor *cache,
                           int Hd, int dh, int max_keys, ggml_tensor **new_kv, ggml_tensor *vt_cache, ggml_tensor *k_cache,
                           bool fused, bool cpu_ops) {
    // Batch B = m->ne[2] (the CFG branches of one Euler step): every view and product below
    // keeps the batch in ne[3], so a branch's queries only ever meet its own keys.
    const int64_t h = static_cast<int64_t>(Hd) * dh;
    const int64_t T = m->ne[1];
    const int64_t B = m->ne[2];
    const int64_t L = cache ? cache->ne[1] : 0;
    ggml_tensor *q = ggml_reshape_4d(ctx, linear(ctx, m, w.mm(p + "attn.to_q.weight"), w.get(p + "attn.to_q.bias")), dh, Hd, T, B);
    ggml_tensor *k = ggml_reshape_4d(ctx, linear(ctx, m, w.mm(p + "attn.to_k.weight"), w.get(p + "attn.to_k.bias")), dh, Hd, T, B);
    ggml_tensor *vv = ggml_reshape_4d(ctx, linear(ctx, m, w.mm(p + "attn.to_v.weight"), w.get(p + "attn.to_v.bias")), dh, Hd, T, B);
    q = layer_norm(ctx, q, w.get(p + "attn.q_norm.weight"), w.get(p + "attn.q_norm.bias"), 1e-5f);
    k = layer_norm(ctx, k, w.get(p + "attn.k_norm.weight"), w.get(p + "attn.k_norm.bias"), 1e-5f);
    if (fused && cache && !new_kv && T + L <= max_keys) {
        ggml_tensor *o = attn::dit_attention(ctx, q, k, vv, cache);  // [h, T, B]
        return linear(ctx, o, w.mm(p + "attn.proj.weight"), w.get(p + "attn.proj.bias"));
    }
    q = ggml_cont(ctx, ggml_permute(ctx, q, 0, 2, 1, 3));  // [dh, T, Hd, B]
    k = ggml_cont(ctx, ggml_permute(ctx, k, 0, 2, 1, 3));
    vv = ggml_cont(ctx, ggml_permute(ctx, vv, 0, 2, 1, 3));
    if (new_kv) *new_kv = ggml_concat(ctx, k, vv, 0);  // [2dh, T, Hd, B]: what a prompt cache holds (docs/minicpmo45.md §4.9)
    if (cache && vt_cache && T + L <= max_keys) {
        // The same products without copying the cache: scores against the current keys and
        // against the cached keys read in place, joined ([current ; cached], T+L per row,
        // the order of the concatenated keys below), and the values from vt_cache, whose
        // last L columns already hold V^T of the cache: the current V^T is written into the
        // T columns before them, and the product reads [current ; cached] in one view.
        const int64_t R = vt_cache->ne[0];
        ggml_tensor *sc = nullptr;  // [T+L, T, Hd, B]
        if (k_cache) {  // the current K written in front of the cached K: one contiguous [current ; cached]
            const int64_t RK = k_cache->ne[1];
            ggml_tensor *kslot = ggml_view_4d(ctx, k_cache, dh, T, Hd, B, k_cache->nb[1], k_cache->nb[2], k_cache->nb[3],
                                              static_cast<size_t>(RK - L - T) * k_cache->nb[1]);
            ggml_tensor *kcur = ggml_cpy(ctx, k, kslot);
            sc = ggml_mul_mat(ctx, ggml_view_4d(ctx, kcur, dh, T + L, Hd, B, k_cache->nb[1], k_cache->nb[2], k_cache->nb[3], 0), q);
        } else {
            ggml_tensor *kc = ggml_view_4d(ctx, cache, dh, L, Hd, B, cache->nb[1], cache->nb[2], cache->nb[3], 0);
            sc = ggml_concat(ctx, ggml_mul_mat(ctx, k, q), ggml_mul_mat(ctx, kc, q), 0);
        }
        sc = ggml_scale(ctx, sc, 1.0f / std::sqrt(static_cast<float>(dh)));
        sc = ggml_soft_max(ctx, sc);
        const size_t col0 = static_cast<size_t>(R - L - T) * sizeof(float);
        ggml_tensor *slot = ggml_view_4d(ctx, vt_cache, T, dh, Hd, B, vt_cache->nb[1], vt_cache->nb[2], vt_cache->nb[3], col0);
        ggml_tensor *cur = ggml_cpy(ctx, ggml_permute(ctx, vv, 1, 0, 2, 3), slot);  // V^T of the current frames
        ggml_tensor *vfull = ggml_view_4d(ctx, cur, T + L, dh, Hd, B, vt_cache->nb[1], vt_cache->nb[2], vt_cache->nb[3], 0);
        if (!cpu_ops) vfull = ggml_cont(ctx, vfull);  // an aligned operand for a device's matmul (header)
        ggml_tensor *o = ggml_mul_mat(ctx, vfull, sc);  // [dh, T, Hd, B]
        o = ggml_reshape_3d(ctx, ggml_cont(ctx, ggml_permute(ctx, o, 0, 2, 1, 3)), h, T, B);
        return linear(ctx, o, w.mm(p + "attn.proj.weight"), w.get(p + "attn.proj.bias"));
    }
    ggml_tensor *kt = k, *vt = vv;                     // [dh, T+L, Hd, B]
    if (cache) {
        ggml_tensor *kc = ggml_view_4d(ctx, cache, dh, L, Hd, B, cache->nb[1], cache->nb[2], cache->nb[3], 0);
        ggml_tensor *vc = ggml_view_4d(ctx, cache, dh, L, Hd, B, cache->nb[1], cache->nb[2], cache->nb[3], dh * sizeof(float));
        kt = ggml_concat(ctx, k, kc, 1);
        vt = ggml_concat(ctx, vv, vc, 1);
    }
    if (T + L > max_keys) {
        const int64_t drop = T + L - max_keys;
        kt = ggml_cont(ctx, ggml_view_4d(ctx, kt, dh, max_keys, Hd, B, kt->nb[1], kt->nb[2], kt->nb[3], drop * kt->nb[1]));
        vt = ggml_view_4d(ctx, vt, dh, max_keys, Hd, B, vt->nb[1], vt->nb[2], vt->nb[3], drop * vt->nb[1]);
    }
    ggml_tensor *sc = ggml_mul_mat(ctx, kt, q);  // [S, T, Hd, B]
    sc = ggml_scale(ctx, sc, 1.0f / std::sqrt(static_cast<float>(dh)));
    sc = ggml_soft_max(ctx, sc);
    ggml_tensor *o = ggml_mul_mat(ctx, ggml_cont(ctx, ggml_permute(ctx, vt, 1, 0, 2, 3)), sc);  // [dh, T, Hd, B]
    o = ggml_reshape_3d(ctx, ggml_cont(ctx, ggml_permute(ctx, o, 0, 2, 1, 3)), h, T, B);
    return linear(ctx, o, w.mm(p + "attn.proj.weight"), w.get(p + "attn.proj.bias"));
}

ggml_tensor *dit_block(ggml_context *ctx, const GgufWeights &w, const std::string &p, ggml_tensor *hx, ggml_tensor *mod,
                       ggml_tensor *att_cache, ggml_tensor *cnn_cache, int Hd, int dh, ggml_tensor **new_cnn, int max_keys,
                       ggml_tensor **new_att, bool cpu_ops, ggml_tensor *vt_cache, ggml_tensor *k_cache,
                       bool fused_attn) {
    const int64_t h = static_cast<int64_t>(Hd) * dh;
    const int64_t T = hx->ne[1];
    auto chunk = [&](int j) { return ggml_view_1d(ctx, mod, h, static_cast<size_t>(j) * h * sizeof(float)); };
    auto modulate = [&](ggml_tensor *z, int jshift, int jscale) {
        ggml_tensor *n = ggml_norm(ctx, z, 1e-6f);
        return ggml_add(ctx, ggml_add(ctx, n, ggml_mul(ctx, n, chunk(jscale))), chunk(jshift));
    };
    // attention (keys/values = [current ; prompt cache])
    ggml_tensor *o = dit_attention(ctx, w, p, modulate(hx, 0, 1), att_cache, Hd, dh, max_keys, new_att, vt_cache, k_cache,
                                   cpu_ops && fused_attn, cpu_ops);
    hx = ggml_add(ctx, hx, ggml_mul(ctx, o, chunk(2)));
    // causal conv block with the 2-frame caches
    ggml_tensor *m3 = modulate(hx, 6, 7);
    const int64_t B = hx->ne[2];
    ggml_tensor *c1 = ggml_cont(ctx, ggml_view_3d(ctx, cnn_cache, h, 2, B, cnn_cache->nb[1], cnn_cache->nb[2], 0));
    ggml_tensor *c2 = ggml_cont(ctx, ggml_view_3d(ctx, cnn_cache, h, 2, B, cnn_cache->nb[1], cnn_cache->nb[2], h * sizeof(float)));
    ggml_tensor *in1 = ggml_concat(ctx, c1, m3, 1);  // [h, T+2, B]
    ggml_tensor *y = conv1d_ct(ctx, in1, w.mm(p + "conv.block.1.weight"), w.get(p + "conv.block.1.bias"));
    y = layer_norm(ctx, y, w.get(p + "conv.block.3.weight"), w.get(p + "conv.block.3.bias"), 1e-5f);
    y = cpu_ops ? mish(ctx, y) : mish_chain(ctx, y);
    ggml_tensor *in2 = ggml_concat(ctx, c2, y, 1);
    y = conv1d_ct(ctx, in2, w.mm(p + "conv.block.6.weight"), w.get(p + "conv.block.6.bias"));
    *new_cnn = ggml_concat(ctx, ggml_cont(ctx, slice_t(ctx, in1, T, 2)), ggml_cont(ctx, slice_t(ctx, in2, T, 2)), 0);  // [2h, 2, B]
    hx = ggml_add(ctx, hx, ggml_mul(ctx, y, chunk(8)));
    // MLP
    ggml_tensor *m2 = modulate(hx, 3, 4);
    y = linear(ctx, m2, w.mm(p + "mlp.fc1.weight"), w.get(p + "mlp.fc1.bias"));
    y = cpu_ops ? gelu_fast(ctx, y) : ggml_gelu(ctx, y);
    y = linear(ctx, y, w.mm(p + "mlp.fc2.weight"), w.get(p + "mlp.fc2.bias"));
    return ggml_add(ctx, hx, ggml_mul(ctx, y, chunk(5)));
}

void fill_vt_cache(const float *kv, int L, int H, int dh, float *vt, int R) {
    for (int hh = 0; hh < H; ++hh)
        for (int l = 0; l < L; ++l)
            for (int d = 0; d < dh; ++d) {
                vt[(static_cast<size_t>(hh) * dh + d) * R + (R - L + l)] = kv[(static_cast<size_t>(hh) * L + l) * 2 * dh + dh + d];
            }
}

void fill_k_cache(const float *kv, int L, int H, int dh, float *kb, int R) {
    for (int hh = 0; hh < H; ++hh)
        for (int l = 0; l < L; ++l)
            for (int d = 0; d < dh; ++d) {
                kb[(static_cast<size_t>(hh) * R + (R - L + l)) * dh + d] = kv[(static_cast<size_t>(hh) * L + l) * 2 * dh + d];
            }
}

std::vector<float> flow_time_span(int N) {
    std::vector<float> t(static_cast<size_t>(N) + 1);
    for (int i = 0; i <= N; ++i) {
        const float u = static_cast<float>(i) / static_cast<float>(N);
        t[i] = 1.0f - std::cos(u * 0.5f * 3.14159265358979323846f);
    }
    return t;
}

void euler_cfg_step(float *x, const float *f_cond, const float *f_uncond, size_t n, float dt, float rate) {
    // the same float ops the first (graph) version ran
    for (size_t i = 0; i < n; ++i) {
        const float dphi = f_uncond ? f_cond[i] * (1.0f + rate) - f_uncond[i] * rate : f_cond[i];
        x[i] = x[i] + dphi * dt;
    }
}

}  // namespace rtf::t2w::blocks
