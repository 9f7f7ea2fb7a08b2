#include "models/t2w/dit-attention.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "models/t2w/packed-gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RTF_ATTN_X86 1
#else
#define RTF_ATTN_X86 0
#endif

namespace rtf::t2w::attn {

namespace {

constexpr int kLanes = 16;  // queries per panel (one AVX-512 vector)

// exp_neg's constants: e^x = 2^n·p(r), n = round(x·log2 e), r = x − n·ln 2 (Cody-Waite, ln 2
// in two floats), p degree 6. Every multiply feeding an add is an explicit fma, in the
// scalar and the vector version alike, so that the compiler's contraction cannot make
// them differ.
constexpr float kLog2e = 1.44269504088896341f, kRound = 12582912.0f;  // 1.5·2^23: round to nearest
constexpr float kLn2Hi = 0.693145751953125f, kLn2Lo = 1.42860682030941723e-6f;
constexpr float kP2 = 0.5f, kP3 = 0.166666672f, kP4 = 0.0416666679f, kP5 = 0.00833333377f, kP6 = 0.00138888892f;
constexpr float kMinArg = -87.0f;

// One (branch, head): where its rows are.
struct Rows {
    const float *k_cur, *v_cur;  // row j at + j·cur_stride
    int64_t cur_stride, T;
    const float *k_cache, *v_cache;  // row l at + l·cache_stride
    int64_t cache_stride, L;
    const float *key(int64_t j) const { return j < T ? k_cur + j * cur_stride : k_cache + (j - T) * cache_stride; }
    const float *val(int64_t j) const { return j < T ? v_cur + j * cur_stride : v_cache + (j - T) * cache_stride; }
};

Rows rows_of(const float *k, const float *v, int64_t dh, int64_t H, int64_t T, const float *kv, int64_t L, int64_t nb1,
             int64_t nb2, int64_t nb3, int64_t b, int64_t h) {
    const int64_t cur = (b * T * H + h) * dh;
    const float *c = kv + b * nb3 + h * nb2;
    return Rows{k + cur, v + cur, H * dh, T, c, c + dh, nb1, L};
}

// The contract for one (branch, head): out row t at out + t·ldo.
void head_reference(const float *q, int64_t q_stride, const Rows &r, int64_t dh, float scale, float *out, int64_t ldo) {
    const int64_t NK = r.T + r.L;
    std::vector<float> e(static_cast<size_t>(NK));
    for (int64_t t = 0; t < r.T; ++t) {
        const float *qt = q + t * q_stride;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < NK; ++j) {
            const float *kj = r.key(j);
            float acc = 0.0f;
            for (int64_t d = 0; d < dh; ++d) acc = std::fma(kj[d], qt[d], acc);
            e[j] = acc * scale;
            mx = std::max(mx, e[j]);
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < NK; ++j) {
            e[j] = exp_neg(e[j] - mx);
            sum += e[j];
        }
        const float inv = 1.0f / sum;
        for (int64_t d = 0; d < dh; ++d) {
            float acc = 0.0f;
            for (int64_t j = 0; j < NK; ++j) acc = std::fma(e[j], r.val(j)[d], acc);
            out[t * ldo + d] = acc * inv;
        }
    }
}

#if RTF_ATTN_X86
// GCC 12 warns on its own _mm512_undefined_* inside the max / shift / convert intrinsics
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) inline __m512 exp_neg16(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(kMinArg));
    const __m512 rnd = _mm512_set1_ps(kRound);
    const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), rnd), rnd);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
    __m512 p = _mm512_set1_ps(kP6);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP5));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
}

// Scores of NR keys against NP panels of 16 queries: st row j (ldT floats) = its scores.
template <int NP, int NR>
__attribute__((target("avx512f"))) void score_block(const float *qp, int64_t dh, const float *const *kr, float scale,
                                                    float *st, int64_t ldT) {
    __m512 acc[NR][NP];
    for (int r = 0; r < NR; ++r)
        for (int p = 0; p < NP; ++p) acc[r][p] = _mm512_setzero_ps();
    for (int64_t d = 0; d < dh; ++d) {
        __m512 qv[NP];
        for (int p = 0; p < NP; ++p) qv[p] = _mm512_loadu_ps(qp + (p * dh + d) * kLanes);
        for (int r = 0; r < NR; ++r) {
            const __m512 kb = _mm512_set1_ps(kr[r][d]);
            for (int p = 0; p < NP; ++p) acc[r][p] = _mm512_fmadd_ps(kb, qv[p], acc[r][p]);
        }
    }
    const __m512 sv = _mm512_set1_ps(scale);
    for (int r = 0; r < NR; ++r)
        for (int p = 0; p < NP; ++p) _mm512_storeu_ps(st + r * ldT + p * kLanes, _mm512_mul_ps(acc[r][p], sv));
}

template <int NP>
__attribute__((target("avx512f"))) void score_rows(const float *qp, int64_t dh, const Rows &rw, int64_t j0, int64_t j1,
                                                   float scale, float *st, int64_t ldT) {
    constexpr int kR = 6;
    const float *kr[kR];
    int64_t j = j0;
    for (; j + kR <= j1; j += kR) {
        for (int r = 0; r < kR; ++r) kr[r] = rw.key(j + r);
        // the next block's key rows (the cached ones stream from DRAM: 80 slots x 1.2 MB)
        for (int r = kR; r < 2 * kR && j + r < j1; ++r) {
            const char *nx = reinterpret_cast<const char *>(rw.key(j + r));
            for (int64_t c = 0; c < dh * 4; c += 64) _mm_prefetch(nx + c, _MM_HINT_T0);
        }
        score_block<NP, kR>(qp, dh, kr, scale, st + j * ldT, ldT);
    }
    for (; j < j1; ++j) {
        kr[0] = rw.key(j);
        score_block<NP, 1>(qp, dh, kr, scale, st + j * ldT, ldT);
    }
}

// Outputs of NR queries (t0..t0+NR-1), dh = 64: Σ_j e[j][t]·v_j in key order, × inv[t].
template <int NR>
__attribute__((target("avx512f"))) void pv_block(const float *st, int64_t ldT, const Rows &rw, int64_t t0, const float *inv,
                                                 float *out, int64_t ldo) {
    // every loop over r unrolled (constant indices): GCC otherwise keeps acc in memory and
    // stores all 24 accumulators on every key
    __m512 acc[NR][4];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
        for (int i = 0; i < 4; ++i) acc[r][i] = _mm512_setzero_ps();
    const int64_t NK = rw.T + rw.L;
    for (int64_t j = 0; j < NK; ++j) {
        const float *vj = rw.val(j);
        if (j + 4 < NK) {
            const char *nx = reinterpret_cast<const char *>(rw.val(j + 4));
            _mm_prefetch(nx, _MM_HINT_T0), _mm_prefetch(nx + 64, _MM_HINT_T0), _mm_prefetch(nx + 128, _MM_HINT_T0),
                _mm_prefetch(nx + 192, _MM_HINT_T0);
        }
        const __m512 v0 = _mm512_loadu_ps(vj), v1 = _mm512_loadu_ps(vj + 16), v2 = _mm512_loadu_ps(vj + 32),
                     v3 = _mm512_loadu_ps(vj + 48);
        const float *ej = st + j * ldT + t0;
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r) {
            const __m512 e = _mm512_set1_ps(ej[r]);
            acc[r][0] = _mm512_fmadd_ps(e, v0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(e, v1, acc[r][1]);
            acc[r][2] = _mm512_fmadd_ps(e, v2, acc[r][2]);
            acc[r][3] = _mm512_fmadd_ps(e, v3, acc[r][3]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
        const __m512 iv = _mm512_set1_ps(inv[t0 + r]);
        for (int i = 0; i < 4; ++i) _mm512_storeu_ps(out + (t0 + r) * ldo + i * 16, _mm512_mul_ps(acc[r][i], iv));
    }
}

// One (branch, head) with dh = 64. Scratch: qp = the queries in panels of 16
// ((p·dh + d)·16 + lane), st = the scores, then the exponentials, key-major (row j:
// ldT = 16·panels floats, lane t = query t).
__attribute__((target("avx512f"))) void head_avx512(const float *q, int64_t q_stride, const Rows &rw, int64_t dh, float scale,
                                                    float *out, int64_t ldo, std::vector<float> &qp, std::vector<float> &st,
                                                    std::vector<float> &inv) {
    const int64_t T = rw.T, NK = rw.T + rw.L;
    const int64_t P = (T + kLanes - 1) / kLanes, ldT = P * kLanes;
    qp.assign(static_cast<size_t>(P * dh * kLanes), 0.0f);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < dh; ++d) qp[((t / kLanes) * dh + d) * kLanes + t % kLanes] = q[t * q_stride + d];
    st.resize(static_cast<size_t>(NK * ldT));
    for (int64_t p0 = 0; p0 < P; p0 += 4) {
        const int np = static_cast<int>(std::min<int64_t>(4, P - p0));
        const float *qg = qp.data() + p0 * dh * kLanes;
        float *sg = st.data() + p0 * kLanes;
        switch (np) {
            case 1: score_rows<1>(qg, dh, rw, 0, NK, scale, sg, ldT); break;
            case 2: score_rows<2>(qg, dh, rw, 0, NK, scale, sg, ldT); break;
            case 3: score_rows<3>(qg, dh, rw, 0, NK, scale, sg, ldT); break;
            default: score_rows<4>(qg, dh, rw, 0, NK, scale, sg, ldT); break;
        }
    }
    // softmax over the keys, 16 queries at a time (padding lanes compute garbage-free zeros)
    inv.resize(static_cast<size_t>(ldT));
    for (int64_t p = 0; p < P; ++p) {
        float *col = st.data() + p * kLanes;
        __m512 mx = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
        for (int64_t j = 0; j < NK; ++j) mx = _mm512_max_ps(mx, _mm512_loadu_ps(col + j * ldT));
        __m512 sum = _mm512_setzero_ps();
        for (int64_t j = 0; j < NK; ++j) {
            const __m512 e = exp_neg16(_mm512_sub_ps(_mm512_loadu_ps(col + j * ldT), mx));
            _mm512_storeu_ps(col + j * ldT, e);
            sum = _mm512_add_ps(sum, e);
        }
        _mm512_storeu_ps(inv.data() + p * kLanes, _mm512_div_ps(_mm512_set1_ps(1.0f), sum));
    }
    constexpr int kR = 6;
    int64_t t = 0;
    for (; t + kR <= T; t += kR) pv_block<kR>(st.data(), ldT, rw, t, inv.data(), out, ldo);
    for (; t < T; ++t) pv_block<1>(st.data(), ldT, rw, t, inv.data(), out, ldo);
}

// AVX2 + FMA (a CPU without AVX-512F): the same layout (panels of 16 queries, each two
// vectors of 8), the same operations in the same order per lane, so the same bits; blocks
// sized for 16 YMM registers.
__attribute__((target("avx2,fma"))) inline __m256 exp_neg8(__m256 x) {
    x = _mm256_max_ps(x, _mm256_set1_ps(kMinArg));
    const __m256 rnd = _mm256_set1_ps(kRound);
    const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), rnd), rnd);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
    __m256 p = _mm256_set1_ps(kP6);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

// Scores of NR keys against one panel of 16 queries (12 accumulators for NR = 6).
template <int NR>
__attribute__((target("avx2,fma"))) void score_block_avx2(const float *qp, int64_t dh, const float *const *kr, float scale,
                                                          float *st, int64_t ldT) {
    __m256 a0[NR], a1[NR];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) a0[r] = _mm256_setzero_ps(), a1[r] = _mm256_setzero_ps();
    for (int64_t d = 0; d < dh; ++d) {
        const __m256 q0 = _mm256_loadu_ps(qp + d * kLanes), q1 = _mm256_loadu_ps(qp + d * kLanes + 8);
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r) {
            const __m256 kb = _mm256_broadcast_ss(kr[r] + d);
            a0[r] = _mm256_fmadd_ps(kb, q0, a0[r]);
            a1[r] = _mm256_fmadd_ps(kb, q1, a1[r]);
        }
    }
    // the scale read from memory after the loop: as a register held across it, it pushed one
    // query vector out to the stack (16 YMM: 12 accumulators, 2 queries, 1 broadcast)
    const volatile float scale_mem = scale;
    const __m256 sv = _mm256_set1_ps(scale_mem);
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
        _mm256_storeu_ps(st + r * ldT, _mm256_mul_ps(a0[r], sv));
        _mm256_storeu_ps(st + r * ldT + 8, _mm256_mul_ps(a1[r], sv));
    }
}

__attribute__((target("avx2,fma"))) void score_rows_avx2(const float *qp, int64_t dh, const Rows &rw, int64_t j0, int64_t j1,
                                                         float scale, float *st, int64_t ldT) {
    constexpr int kR = 6;
    const float *kr[kR];
    int64_t j = j0;
    for (; j + kR <= j1; j += kR) {
        for (int r = 0; r < kR; ++r) kr[r] = rw.key(j + r);
        for (int r = kR; r < 2 * kR && j + r < j1; ++r) {
            const char *nx = reinterpret_cast<const char *>(rw.key(j + r));
            for (int64_t c = 0; c < dh * 4; c += 64) _mm_prefetch(nx + c, _MM_HINT_T0);
        }
        score_block_avx2<kR>(qp, dh, kr, scale, st + j * ldT, ldT);
    }
    for (; j < j1; ++j) {
        kr[0] = rw.key(j);
        score_block_avx2<1>(qp, dh, kr, scale, st + j * ldT, ldT);
    }
}

// Outputs of NR <= 6 queries over 16 of the 64 dims (from d0): Σ_j e[j][t]·v_j[d] in key
// order, × inv[t]. 12 accumulators; per key one line of v (2 vectors) and one of e (the NR
// scores sit side by side): the score and value rows stream from L2, so each loaded line
// feeds as many FMAs as the registers allow (3 queries x 32 dims spilled an accumulator, 2 x
// 32 read three lines per 8 FMAs: L2-bound at ~40 % of the FMA peak).
template <int NR>
__attribute__((target("avx2,fma"))) void pv_block_avx2(const float *st, int64_t ldT, const Rows &rw, int64_t t0, int64_t d0,
                                                       const float *inv, float *out, int64_t ldo) {
    __m256 a0[NR], a1[NR];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) a0[r] = _mm256_setzero_ps(), a1[r] = _mm256_setzero_ps();
    const int64_t NK = rw.T + rw.L;
    for (int64_t j = 0; j < NK; ++j) {
        const float *vj = rw.val(j) + d0;
        if (j + 4 < NK) _mm_prefetch(reinterpret_cast<const char *>(rw.val(j + 4) + d0), _MM_HINT_T0);
        const __m256 v0 = _mm256_loadu_ps(vj), v1 = _mm256_loadu_ps(vj + 8);
        const float *ej = st + j * ldT + t0;
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r) {
            const __m256 e = _mm256_broadcast_ss(ej + r);
            a0[r] = _mm256_fmadd_ps(e, v0, a0[r]);
            a1[r] = _mm256_fmadd_ps(e, v1, a1[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
        const __m256 iv = _mm256_set1_ps(inv[t0 + r]);
        _mm256_storeu_ps(out + (t0 + r) * ldo + d0, _mm256_mul_ps(a0[r], iv));
        _mm256_storeu_ps(out + (t0 + r) * ldo + d0 + 8, _mm256_mul_ps(a1[r], iv));
    }
}

using PvAvx2Fn = void (*)(const float *, int64_t, const Rows &, int64_t, int64_t, const float *, float *, int64_t);
constexpr PvAvx2Fn kPvAvx2[6] = {&pv_block_avx2<1>, &pv_block_avx2<2>, &pv_block_avx2<3>,
                                 &pv_block_avx2<4>, &pv_block_avx2<5>, &pv_block_avx2<6>};

// head_avx512's steps on AVX2 (dh = 64; the same scratch layouts).
__attribute__((target("avx2,fma"))) void head_avx2(const float *q, int64_t q_stride, const Rows &rw, int64_t dh, float scale,
                                                   float *out, int64_t ldo, std::vector<float> &qp, std::vector<float> &st,
                                                   std::vector<float> &inv) {
    const int64_t T = rw.T, NK = rw.T + rw.L;
    const int64_t P = (T + kLanes - 1) / kLanes, ldT = P * kLanes;
    qp.assign(static_cast<size_t>(P * dh * kLanes), 0.0f);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < dh; ++d) qp[((t / kLanes) * dh + d) * kLanes + t % kLanes] = q[t * q_stride + d];
    st.resize(static_cast<size_t>(NK * ldT));
    for (int64_t p = 0; p < P; ++p) score_rows_avx2(qp.data() + p * dh * kLanes, dh, rw, 0, NK, scale, st.data() + p * kLanes, ldT);
    inv.resize(static_cast<size_t>(ldT));
    for (int64_t c = 0; c < ldT; c += 8) {  // softmax over the keys, 8 queries at a time
        float *col = st.data() + c;
        __m256 mx = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
        for (int64_t j = 0; j < NK; ++j) mx = _mm256_max_ps(mx, _mm256_loadu_ps(col + j * ldT));
        __m256 sum = _mm256_setzero_ps();
        for (int64_t j = 0; j < NK; ++j) {
            const __m256 e = exp_neg8(_mm256_sub_ps(_mm256_loadu_ps(col + j * ldT), mx));
            _mm256_storeu_ps(col + j * ldT, e);
            sum = _mm256_add_ps(sum, e);
        }
        _mm256_storeu_ps(inv.data() + c, _mm256_div_ps(_mm256_set1_ps(1.0f), sum));
    }
    for (int64_t d0 = 0; d0 < dh; d0 += 16)
        for (int64_t t = 0; t < T; t += 6)
            kPvAvx2[std::min<int64_t>(6, T - t) - 1](st.data(), ldT, rw, t, d0, inv.data(), out, ldo);
}
#pragma GCC diagnostic pop
#endif

// dst->src = {q, k, v, kv}; see the header for the layouts.
void attention_op(ggml_tensor *dst, int ith, int nth, void *) {
    const ggml_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *kv = dst->src[3];
    const int64_t dh = q->ne[0], H = q->ne[1], T = q->ne[2], B = q->ne[3], L = kv->ne[1];
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    const int64_t n_items = B * H;
    const int64_t i0 = n_items * ith / nth, i1 = n_items * (ith + 1) / nth;
    const auto *qd = static_cast<const float *>(q->data);
    const auto *kd = static_cast<const float *>(k->data);
    const auto *vd = static_cast<const float *>(v->data);
    const auto *kvd = static_cast<const float *>(kv->data);
    const int64_t nb1 = kv->nb[1] / sizeof(float), nb2 = kv->nb[2] / sizeof(float), nb3 = kv->nb[3] / sizeof(float);
    auto *od = static_cast<float *>(dst->data);
#if RTF_ATTN_X86
    thread_local std::vector<float> qp, st, inv;
    const gemm::Isa isa = gemm::kernel_isa();  // RTF_T2W_PACKED=avx2: the AVX2 kernels on an AVX-512 CPU too
    const bool fast = dh == 64 && isa == gemm::Isa::avx512, avx2 = dh == 64 && isa == gemm::Isa::avx2;
#endif
    for (int64_t it = i0; it < i1; ++it) {
        const int64_t b = it / H, h = it % H;
        const Rows rw = rows_of(kd, vd, dh, H, T, kvd, L, nb1, nb2, nb3, b, h);
        const float *qh = qd + (b * T * H + h) * dh;
        float *oh = od + (b * T * H + h) * dh;
#if RTF_ATTN_X86
        if (fast) {
            head_avx512(qh, H * dh, rw, dh, scale, oh, H * dh, qp, st, inv);
            continue;
        }
        if (avx2) {
            head_avx2(qh, H * dh, rw, dh, scale, oh, H * dh, qp, st, inv);
            continue;
        }
#endif
        head_reference(qh, H * dh, rw, dh, scale, oh, H * dh);
    }
}

}  // namespace

bool fused_enabled() {
    const char *e = std::getenv("RTF_T2W_ATTN");
    return gemm::kernel_isa() != gemm::Isa::portable && !(e && std::strcmp(e, "ggml") == 0);
}

float exp_neg(float x) {
    x = std::max(x, kMinArg);
    const float n = std::fma(x, kLog2e, kRound) - kRound;
    float r = std::fma(-n, kLn2Hi, x);
    r = std::fma(-n, kLn2Lo, r);
    float p = kP6;
    p = std::fma(p, r, kP5);
    p = std::fma(p, r, kP4);
    p = std::fma(p, r, kP3);
    p = std::fma(p, r, kP2);
    p = std::fma(p, r, 1.0f);
    p = std::fma(p, r, 1.0f);
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float s;
    std::memcpy(&s, &bits, sizeof s);
    return p * s;
}

ggml_tensor *dit_attention(ggml_context *ctx, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v, ggml_tensor *kv) {
    if (!ggml_is_contiguous(q)) q = ggml_cont(ctx, q);
    if (!ggml_is_contiguous(k)) k = ggml_cont(ctx, k);
    if (!ggml_is_contiguous(v)) v = ggml_cont(ctx, v);
    ggml_tensor *args[4] = {q, k, v, kv};
    ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, q->ne[0] * q->ne[1], q->ne[2], q->ne[3], 1, args, 4, attention_op,
                                    GGML_N_TASKS_MAX, nullptr);
    ggml_set_name(y, "rtf:dit-attention");
    return y;
}

void attention_reference(const float *q, const float *k, const float *v, int64_t dh, int64_t H, int64_t T, int64_t B,
                         const float *kv, int64_t L, int64_t kv_nb1, int64_t kv_nb2, int64_t kv_nb3, float *out) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h) {
            const Rows rw = rows_of(k, v, dh, H, T, kv, L, kv_nb1, kv_nb2, kv_nb3, b, h);
            const int64_t off = (b * T * H + h) * dh;
            head_reference(q + off, H * dh, rw, dh, scale, out + off, H * dh);
        }
}

}  // namespace rtf::t2w::attn
