#include "models/t2w/packed-conv.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/t2w/packed-gemm.h"
#include "models/t2w/packed-registry.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RTF_CONV_X86 1
#else
#define RTF_CONV_X86 0
#endif

namespace rtf::t2w::conv {

namespace {

constexpr int kVecs = 3;                 // time vectors per block: 8 rows x 3 vectors = 24 accumulators
constexpr int kTimes = 16 * kVecs;       // output times per block
constexpr int64_t kMaxMaskedK = 64;      // edge blocks keep K x kVecs load masks on the stack

// Work units: (block of 8 output channels) x (block of 48 output times). The operand that is
// larger is read once: when the kernel outweighs the input (few long-channel frames: stage 0)
// a thread sweeps all times for one channel block before the next, so each weight block is
// read once; otherwise (long inputs: stage 2) all channel blocks of one time block follow
// each other and the input tile stays in cache.
struct Tiling {
    int64_t cblocks, tblocks;
    bool channel_major;
    Tiling(const Geometry &g, int64_t Tin, int64_t Tout)
        : cblocks((g.Cout + kRows - 1) / kRows), tblocks((Tout + kTimes - 1) / kTimes),
          channel_major(g.Cout * g.K >= Tin) {}
    int64_t units() const { return cblocks * tblocks; }
    void unit(int64_t u, int64_t &cb, int64_t &tb) const {
        if (channel_major) {
            cb = u / tblocks;
            tb = u % tblocks;
        } else {
            tb = u / cblocks;
            cb = u % cblocks;
        }
    }
};

// The reference's arithmetic for output rows [c0, c1) x times [t0, t1) on the packed layout.
void block_portable(const float *packed, const Geometry &g, const float *x, int64_t ldx, int64_t Tin, const float *bias,
                    const float *res, int64_t ldr, float *y, int64_t ldy, int64_t c0, int64_t c1, int64_t t0, int64_t t1) {
    for (int64_t co = c0; co < c1; ++co) {
        const float *wb = packed + (co / kRows) * g.Cin * g.K * kRows + co % kRows;
        for (int64_t t = t0; t < t1; ++t) {
            float acc = 0.0f;
            for (int64_t ci = 0; ci < g.Cin; ++ci)
                for (int64_t k = 0; k < g.K; ++k) {
                    const int64_t i = t * g.stride + k * g.dilation - g.pad;
                    if (i < 0 || i >= Tin) continue;
                    acc = std::fma(wb[(ci * g.K + k) * kRows], x[ci * ldx + i], acc);
                }
            float v = bias ? acc + bias[co] : acc;
            if (res) v = v + res[co * ldr + t];
            y[co * ldy + t] = v;
        }
    }
}

#if RTF_CONV_X86
// Adds bias and residual to the 8 x 48 accumulators and stores rows < `rows`, times < nt.
__attribute__((target("avx512f"))) inline void store_block(__m512 (&acc)[kRows][kVecs], const float *bias, int rows,
                                                           const float *res, int64_t ldr, float *y, int64_t ldy,
                                                           int64_t nt) {
    // constant indices only (loops unrolled): a runtime row index would keep the callers'
    // accumulators in memory, stored on every (ci, k)
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
        if (r >= rows) break;
#pragma GCC unroll 4
        for (int v = 0; v < kVecs; ++v) {
            const int64_t n = std::min<int64_t>(16, nt - 16 * v);
            if (n <= 0) break;
            const __mmask16 m = n >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1u);
            __m512 val = acc[r][v];
            if (bias) val = _mm512_add_ps(val, _mm512_set1_ps(bias[r]));
            if (res) val = _mm512_add_ps(val, _mm512_maskz_loadu_ps(m, res + r * ldr + 16 * v));
            _mm512_mask_storeu_ps(y + r * ldy + 16 * v, m, val);
        }
    }
}

// An interior block of a stride-1 conv: every input a block reads lies inside [0, Tin), so
// plain unaligned loads. wp = the channel block's Cin·K·8 floats; xo = x + t0 - pad.
__attribute__((target("avx512f"))) void block_interior(const float *wp, const Geometry &g, const float *xo, int64_t ldx,
                                                       const float *bias, int rows, const float *res, int64_t ldr,
                                                       float *y, int64_t ldy, int64_t nt) {
    __m512 acc[kRows][kVecs];
    for (int r = 0; r < kRows; ++r)
        for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
    const int64_t K = g.K, d = g.dilation;
    for (int64_t ci = 0; ci < g.Cin; ++ci) {
        const float *xr = xo + ci * ldx;
        const float *wr = wp + ci * K * kRows;
        for (int64_t k = 0; k < K; ++k) {
            __m512 xv[kVecs];
            for (int v = 0; v < kVecs; ++v) xv[v] = _mm512_loadu_ps(xr + k * d + 16 * v);
            for (int r = 0; r < kRows; ++r) {
                const __m512 w = _mm512_set1_ps(wr[k * kRows + r]);
                for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(w, xv[v], acc[r][v]);
            }
        }
    }
    store_block(acc, bias, rows, res, ldr, y, ldy, nt);
}

// Any block: lanes whose input index falls outside [0, Tin) are masked off (zero padding);
// a stride > 1 gathers its inputs. t0 = the block's first output time. K <= kMaxMaskedK.
__attribute__((target("avx512f"))) void block_edge(const float *wp, const Geometry &g, const float *x, int64_t ldx,
                                                   int64_t Tin, int64_t t0, const float *bias, int rows, const float *res,
                                                   int64_t ldr, float *y, int64_t ldy, int64_t nt) {
    const int64_t K = g.K, s = g.stride, d = g.dilation;
    __mmask16 mask[kMaxMaskedK][kVecs];
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i lane_s = _mm512_mullo_epi32(lane, _mm512_set1_epi32(static_cast<int>(s)));
    const __m512i lo = _mm512_set1_epi32(-1), hi = _mm512_set1_epi32(static_cast<int>(Tin));
    for (int64_t k = 0; k < K; ++k)
        for (int v = 0; v < kVecs; ++v) {
            const int64_t base = (t0 + 16 * v) * s + k * d - g.pad;
            const __m512i i = _mm512_add_epi32(lane_s, _mm512_set1_epi32(static_cast<int>(base)));
            mask[k][v] = _mm512_cmpgt_epi32_mask(i, lo) & _mm512_cmplt_epi32_mask(i, hi);
        }
    __m512 acc[kRows][kVecs];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r)
        for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_ps();
    for (int64_t ci = 0; ci < g.Cin; ++ci) {
        const float *xr = x + ci * ldx;
        const float *wr = wp + ci * K * kRows;
        for (int64_t k = 0; k < K; ++k) {
            __m512 xv[kVecs];
#pragma GCC unroll 4
            for (int v = 0; v < kVecs; ++v) {
                const int64_t base = (t0 + 16 * v) * s + k * d - g.pad;
                if (s == 1) {
                    // masked-off lanes are not read: the address may lie before x's row
                    xv[v] = _mm512_maskz_loadu_ps(mask[k][v], reinterpret_cast<const float *>(
                                                                  reinterpret_cast<uintptr_t>(xr) + base * 4));
                } else {
                    const __m512i i = _mm512_add_epi32(lane_s, _mm512_set1_epi32(static_cast<int>(base)));
                    xv[v] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask[k][v], i, xr, 4);
                }
            }
#pragma GCC unroll 8
            for (int r = 0; r < kRows; ++r) {
                const __m512 w = _mm512_set1_ps(wr[k * kRows + r]);
                for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_fmadd_ps(w, xv[v], acc[r][v]);
            }
        }
    }
    store_block(acc, bias, rows, res, ldr, y, ldy, nt);
}

// AVX2 + FMA (a CPU without AVX-512F): the unit's 8 channels x 48 times as four sub-blocks of
// 4 channels x 24 times (three vectors of 8): 12 accumulators, 3 input vectors and one
// weight broadcast fill the 16 YMM registers. Per output the same fma chain (ci, then k) and
// the same bias / residual adds as the AVX-512F kernel: the same bits. Edge blocks mask
// their loads (masked-off lanes are not read) and a stride > 1 gathers.
constexpr int kRows2 = 4, kVecs2 = 3, kTimes2 = 8 * kVecs2;

template <bool Edge>
__attribute__((target("avx2,fma"))) void block_avx2(const float *wp, int r0, const Geometry &g, const float *x, int64_t ldx,
                                                    int64_t Tin, int64_t t0, const float *bias, int rows,
                                                    const float *res, int64_t ldr, float *y, int64_t ldy, int64_t nt) {
    const int64_t K = g.K, s = g.stride, d = g.dilation;
    __m256i mask[Edge ? kMaxMaskedK : 1][kVecs2];
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i lane_s = _mm256_mullo_epi32(lane, _mm256_set1_epi32(static_cast<int>(s)));
    if constexpr (Edge) {
        const __m256i lo = _mm256_set1_epi32(-1), hi = _mm256_set1_epi32(static_cast<int>(Tin));
        for (int64_t k = 0; k < K; ++k)
            for (int v = 0; v < kVecs2; ++v) {
                const int64_t base = (t0 + 8 * v) * s + k * d - g.pad;
                const __m256i i = _mm256_add_epi32(lane_s, _mm256_set1_epi32(static_cast<int>(base)));
                mask[k][v] = _mm256_and_si256(_mm256_cmpgt_epi32(i, lo), _mm256_cmpgt_epi32(hi, i));
            }
    }
    __m256 acc[kRows2][kVecs2];
#pragma GCC unroll 4
    for (int r = 0; r < kRows2; ++r)
        for (int v = 0; v < kVecs2; ++v) acc[r][v] = _mm256_setzero_ps();
    for (int64_t ci = 0; ci < g.Cin; ++ci) {
        const float *xr = x + ci * ldx;
        const float *wr = wp + ci * K * kRows + r0;
        if constexpr (!Edge) {
            // stride 1, every input inside: one pointer stepped by the dilation (fewer integer
            // ops per FMA than the general address below: the loop is issue-bound otherwise)
            const float *xk = xr + t0 - g.pad;
            const float *wk = wr;
            for (int64_t k = 0; k < K; ++k, xk += d, wk += kRows) {
                const __m256 x0 = _mm256_loadu_ps(xk), x1 = _mm256_loadu_ps(xk + 8), x2 = _mm256_loadu_ps(xk + 16);
#pragma GCC unroll 4
                for (int r = 0; r < kRows2; ++r) {
                    const __m256 w = _mm256_broadcast_ss(wk + r);
                    acc[r][0] = _mm256_fmadd_ps(w, x0, acc[r][0]);
                    acc[r][1] = _mm256_fmadd_ps(w, x1, acc[r][1]);
                    acc[r][2] = _mm256_fmadd_ps(w, x2, acc[r][2]);
                }
            }
            continue;
        }
        for (int64_t k = 0; k < K; ++k) {
            __m256 xv[kVecs2];
#pragma GCC unroll 4
            for (int v = 0; v < kVecs2; ++v) {
                const int64_t base = (t0 + 8 * v) * s + k * d - g.pad;
                if (s == 1) {
                    xv[v] = _mm256_maskload_ps(reinterpret_cast<const float *>(reinterpret_cast<uintptr_t>(xr) + base * 4),
                                               mask[k][v]);
                } else {
                    const __m256i i = _mm256_add_epi32(lane_s, _mm256_set1_epi32(static_cast<int>(base)));
                    xv[v] = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), xr, i, _mm256_castsi256_ps(mask[k][v]), 4);
                }
            }
#pragma GCC unroll 4
            for (int r = 0; r < kRows2; ++r) {
                const __m256 w = _mm256_broadcast_ss(wr + k * kRows + r);
                for (int v = 0; v < kVecs2; ++v) acc[r][v] = _mm256_fmadd_ps(w, xv[v], acc[r][v]);
            }
        }
    }
    // constant indices only (loops unrolled): the accumulators stay in registers in the loop above
#pragma GCC unroll 4
    for (int r = 0; r < kRows2; ++r) {
        if (r >= rows) break;
#pragma GCC unroll 4
        for (int v = 0; v < kVecs2; ++v) {
            const int64_t n = std::min<int64_t>(8, nt - 8 * v);
            if (n <= 0) break;
            const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lane);
            __m256 val = acc[r][v];
            if (bias) val = _mm256_add_ps(val, _mm256_set1_ps(bias[r]));
            if (res) val = _mm256_add_ps(val, _mm256_maskload_ps(res + r * ldr + 8 * v, m));
            _mm256_maskstore_ps(y + r * ldy + 8 * v, m, val);
        }
    }
}

// One unit (8 channels from c0 x 48 times from t0) on the AVX2 sub-blocks; wp = the
// channel block's packed Cin·K·8 floats. Rows and times past the unit's end are not stored.
void unit_avx2(const float *wp, const Geometry &g, const float *x, int64_t ldx, int64_t Tin, const float *bias,
               const float *res, int64_t ldr, float *y, int64_t ldy, int64_t c0, int64_t c1, int64_t t0, int64_t t1) {
    for (int r0 = 0; r0 < c1 - c0; r0 += kRows2) {
        const int rows = static_cast<int>(std::min<int64_t>(kRows2, c1 - c0 - r0));
        const int64_t co = c0 + r0;
        for (int64_t ts = t0; ts < t1; ts += kTimes2) {
            const float *bb = bias ? bias + co : nullptr;
            const float *rb = res ? res + co * ldr + ts : nullptr;
            float *yb = y + co * ldy + ts;
            const int64_t nt = std::min<int64_t>(kTimes2, t1 - ts);
            const int64_t first_in = ts * g.stride - g.pad;
            const int64_t last_in = (ts + kTimes2 - 1) * g.stride + (g.K - 1) * g.dilation - g.pad;
            if (g.stride == 1 && first_in >= 0 && last_in < Tin)
                block_avx2<false>(wp, r0, g, x, ldx, Tin, ts, bb, rows, rb, ldr, yb, ldy, nt);
            else
                block_avx2<true>(wp, r0, g, x, ldx, Tin, ts, bb, rows, rb, ldr, yb, ldy, nt);
        }
    }
}
#endif

}  // namespace

bool enabled() {
    const char *e = std::getenv("RTF_T2W_CONV");
    return gemm::packed_enabled() && !(e && std::strcmp(e, "0") == 0);
}

int64_t packed_floats(int64_t Cout, int64_t Cin, int64_t K) { return (Cout + kRows - 1) / kRows * kRows * Cin * K; }

void pack(const float *w, int64_t Cout, int64_t Cin, int64_t K, float *dst) {
    const int64_t blocks = (Cout + kRows - 1) / kRows;
    for (int64_t b = 0; b < blocks; ++b)
        for (int64_t ci = 0; ci < Cin; ++ci)
            for (int64_t k = 0; k < K; ++k)
                for (int64_t r = 0; r < kRows; ++r) {
                    const int64_t co = b * kRows + r;
                    dst[((b * Cin + ci) * K + k) * kRows + r] = co < Cout ? w[(co * Cin + ci) * K + k] : 0.0f;
                }
}

void pack_in_place(float *w, int64_t Cout, int64_t Cin, int64_t K) {
    if (Cout % kRows != 0) std::abort();  // a caller bug: the packed kernel would not fit
    std::vector<float> tmp(w, w + Cout * Cin * K);
    pack(tmp.data(), Cout, Cin, K, w);
}

void conv(const float *packed, const Geometry &g, const float *x, int64_t ldx, int64_t Tin, const float *bias,
          const float *res, int64_t ldr, float *y, int64_t ldy, int ith, int nth) {
    const int64_t Tout = g.out_len(Tin);
    if (g.Cout <= 0 || Tout <= 0) return;
    const Tiling t(g, Tin, Tout);
    const int64_t u0 = t.units() * ith / nth, u1 = t.units() * (ith + 1) / nth;
#if RTF_CONV_X86
    const gemm::Isa isa = g.K <= kMaxMaskedK ? gemm::kernel_isa() : gemm::Isa::portable;  // RTF_T2W_PACKED=avx2 too
    const bool fast = isa == gemm::Isa::avx512, avx2 = isa == gemm::Isa::avx2;
#else
    const bool fast = false;
#endif
    const int64_t blk = g.Cin * g.K * kRows;
    for (int64_t u = u0; u < u1; ++u) {
        int64_t cb = 0, tb = 0;
        t.unit(u, cb, tb);
        const int64_t c0 = cb * kRows, c1 = std::min<int64_t>(g.Cout, c0 + kRows);
        const int64_t t0 = tb * kTimes, t1 = std::min<int64_t>(Tout, t0 + kTimes);
#if RTF_CONV_X86
        if (fast) {
            const int rows = static_cast<int>(c1 - c0);
            const float *bb = bias ? bias + c0 : nullptr;
            const float *rb = res ? res + c0 * ldr + t0 : nullptr;
            float *yb = y + c0 * ldy + t0;
            const int64_t first_in = t0 * g.stride - g.pad;
            const int64_t last_in = (t0 + kTimes - 1) * g.stride + (g.K - 1) * g.dilation - g.pad;
            if (g.stride == 1 && first_in >= 0 && last_in < Tin)
                block_interior(packed + cb * blk, g, x + first_in, ldx, bb, rows, rb, ldr, yb, ldy, t1 - t0);
            else
                block_edge(packed + cb * blk, g, x, ldx, Tin, t0, bb, rows, rb, ldr, yb, ldy, t1 - t0);
            continue;
        }
        if (avx2) {
            unit_avx2(packed + cb * blk, g, x, ldx, Tin, bias, res, ldr, y, ldy, c0, c1, t0, t1);
            continue;
        }
#endif
        block_portable(packed, g, x, ldx, Tin, bias, res, ldr, y, ldy, c0, c1, t0, t1);
    }
    (void)fast;
    (void)blk;
}

void conv_reference(const float *w, const Geometry &g, const float *x, int64_t ldx, int64_t Tin, const float *bias,
                    const float *res, int64_t ldr, float *y, int64_t ldy) {
    const int64_t Tout = g.out_len(Tin);
    for (int64_t co = 0; co < g.Cout; ++co)
        for (int64_t t = 0; t < Tout; ++t) {
            float acc = 0.0f;
            for (int64_t ci = 0; ci < g.Cin; ++ci)
                for (int64_t k = 0; k < g.K; ++k) {
                    const int64_t i = t * g.stride + k * g.dilation - g.pad;
                    if (i >= 0 && i < Tin) acc = std::fma(w[(co * g.Cin + ci) * g.K + k], x[ci * ldx + i], acc);
                }
            float v = bias ? acc + bias[co] : acc;
            if (res) v = v + res[co * ldr + t];
            y[co * ldy + t] = v;
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

// The op's integer parameters travel in its userdata pointer (ggml keeps the pointer value
// with the node; no allocation to outlive the graph): 16 bits each of stride, pad and
// dilation, and two flags saying which optional sources (bias, residual) follow x and W.
static_assert(sizeof(uintptr_t) >= 8, "conv1d packs its parameters into a 64-bit userdata");
constexpr int kParamMax = 0xFFFF;

uintptr_t encode(int stride, int pad, int dilation, bool has_b, bool has_res) {
    return static_cast<uintptr_t>(stride) | static_cast<uintptr_t>(pad) << 16 | static_cast<uintptr_t>(dilation) << 32 |
           static_cast<uintptr_t>(has_b) << 48 | static_cast<uintptr_t>(has_res) << 49;
}

void conv_op(ggml_tensor *dst, int ith, int nth, void *ud) {
    const auto p = reinterpret_cast<uintptr_t>(ud);
    const ggml_tensor *x = dst->src[0], *w = dst->src[1];
    const bool has_b = (p >> 48) & 1, has_res = (p >> 49) & 1;
    const ggml_tensor *b = has_b ? dst->src[2] : nullptr;
    const ggml_tensor *res = has_res ? dst->src[has_b ? 3 : 2] : nullptr;
    Geometry g;
    g.K = w->ne[0];
    g.Cin = w->ne[1];
    g.Cout = w->ne[2];
    g.stride = static_cast<int>(p & 0xFFFF);
    g.pad = static_cast<int>((p >> 16) & 0xFFFF);
    g.dilation = static_cast<int>((p >> 32) & 0xFFFF);
    conv(static_cast<const float *>(w->data), g, static_cast<const float *>(x->data), x->nb[1] / sizeof(float), x->ne[0],
         b ? static_cast<const float *>(b->data) : nullptr, res ? static_cast<const float *>(res->data) : nullptr,
         res ? res->nb[1] / sizeof(float) : 0, static_cast<float *>(dst->data), dst->nb[1] / sizeof(float), ith, nth);
}

}  // namespace

ggml_tensor *conv1d(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, int stride, int pad, int dilation,
                    ggml_tensor *res) {
    if (!is_packed(w)) throw_runtime(std::string("t2w: conv1d: kernel '") + w->name + "' is not packed (conv::is_packed)");
    Geometry g;
    g.K = w->ne[0];
    g.Cin = w->ne[1];
    g.Cout = w->ne[2];
    g.stride = stride;
    g.pad = pad;
    g.dilation = dilation;
    auto bad = [&](const std::string &why) { throw_runtime("t2w: conv1d with kernel '" + std::string(w->name) + "': " + why); };
    if (stride < 1 || stride > kParamMax || pad < 0 || pad > kParamMax || dilation < 1 || dilation > kParamMax)
        bad("stride/dilation must be 1.." + std::to_string(kParamMax) + " and pad 0.." + std::to_string(kParamMax));
    const int64_t Tin = x->ne[0], Tout = g.out_len(Tin);
    if (x->type != GGML_TYPE_F32 || w->type != GGML_TYPE_F32) bad("F32 input and kernel only");
    if (x->ne[1] != g.Cin || x->ne[2] != 1 || x->ne[3] != 1 || x->nb[0] != sizeof(float))
        bad("input ne [" + std::to_string(x->ne[0]) + ", " + std::to_string(x->ne[1]) + "] does not fit Cin " +
            std::to_string(g.Cin) + " (or is not a 2-D F32 tensor with unit element stride)");
    if (Tout < 1) bad("input of " + std::to_string(Tin) + " frames is shorter than the kernel's span");
    if (b && (b->type != GGML_TYPE_F32 || ggml_nelements(b) != g.Cout || !ggml_is_contiguous(b))) bad("bias must be F32 [Cout]");
    if (res && (res->type != GGML_TYPE_F32 || res->ne[0] != Tout || res->ne[1] != g.Cout || res->nb[0] != sizeof(float) ||
                res->ne[2] != 1 || res->ne[3] != 1))
        bad("residual must be F32 [Tout, Cout] = [" + std::to_string(Tout) + ", " + std::to_string(g.Cout) + "]");
    ggml_tensor *args[4] = {x, w, nullptr, nullptr};
    int n = 2;
    if (b) args[n++] = b;
    if (res) args[n++] = res;
    ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, Tout, g.Cout, 1, 1, args, n, conv_op, GGML_N_TASKS_MAX,
                          reinterpret_cast<void *>(encode(stride, pad, dilation, b != nullptr, res != nullptr)));
    ggml_set_name(y, "rtf:direct-conv-f32");
    return y;
}

}  // namespace rtf::t2w::conv
