#include "models/t2w/onednn-conv.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <tuple>

#include "core/error.h"
#include "models/t2w/onednn-linear.h"
#include "models/t2w/packed-gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RTF_ONEDNN_X86 1
#else
#define RTF_ONEDNN_X86 0
#endif

#if RTF_HAVE_DNNL
#include <oneapi/dnnl/dnnl_debug.h>

#include "models/t2w/onednn-util.h"
#endif

namespace rtf::t2w::onednn {

#if RTF_HAVE_DNNL

namespace {

// Output times per primitive call. Every call has this one shape (the input zero-padded by us
// at the edges, the last chunk of a range overlapping the one before), so a kernel needs one
// primitive per (stride, dilation), made when the graph is built: oneDNN's JIT takes tens of
// ms per primitive, which a primitive per window length would pay mid-stream.
constexpr int64_t kChunk = 128;

using detail::engine;
using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// The geometry of one node (the op's user data: lives as long as its kernel).
struct Geometry;

// One registered kernel: its copy in plain order (bf16 or f32), the layout the first primitive
// chose (reordered once), and its primitives.
struct ConvWeight {
    int64_t Cout = 0, Cin = 0, K = 0;
    dt type = dt::bf16;              // the source and weights' type (the sums and outputs are F32)
    std::vector<uint16_t> plain;     // bf16, [Cout][Cin][K]
    std::vector<float> plain_f32;    // f32, [Cout][Cin][K]
    std::vector<float> zero_bias;
    std::shared_mutex mu;  // guards everything below (read-locked on the hot path)
    memory::desc wdesc;
    memory wmem;
    bool have_layout = false;
    struct Prim {
        dnnl::convolution_forward cv;
        memory w;  // wmem, or a private reorder when this geometry wanted another layout
        size_t scratch = 0;
        std::shared_ptr<detail::ImplCounter> calls;  // "bf16 conv <oneDNN's impl string>"
    };
    // per (stride, dilation): a valid (unpadded) convolution of kChunk output times
    std::map<std::pair<int, int>, std::shared_ptr<Prim>> prims;
    std::map<std::tuple<int, int, int, bool, bool>, std::unique_ptr<Geometry>> geometries;

    memory reorder_to(const memory::desc &d) {
        void *data = type == dt::f32 ? static_cast<void *>(plain_f32.data()) : static_cast<void *>(plain.data());
        memory src({{Cout, Cin, K}, type, tag::oiw}, engine(), data);
        memory dst(d, engine());
        dnnl::stream st(engine());
        dnnl::reorder(src, dst).execute(st, src, dst);
        st.wait();
        return dst;
    }

    int64_t chunk_input(int stride, int dil) const { return (kChunk - 1) * stride + static_cast<int64_t>(dil) * (K - 1) + 1; }

    std::shared_ptr<Prim> prim(int stride, int dil) {
        detail::single_thread();
        {
            std::shared_lock rl(mu);
            auto it = prims.find({stride, dil});
            if (it != prims.end()) return it->second;
        }
        std::unique_lock lk(mu);
        auto &p = prims[{stride, dil}];
        if (p) return p;
        const memory::desc src({1, Cin, chunk_input(stride, dil)}, type, tag::nwc), dst({1, Cout, kChunk}, dt::f32, tag::nwc),
            bias({Cout}, dt::f32, tag::a);
        auto make = [&](const memory::desc &w) {
            return dnnl::convolution_forward::primitive_desc(
                dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src, w,
                                                bias, dst, {stride}, {dil - 1}, {0}, {0}),
                detail::user_scratchpad(), engine());
        };
        auto pd = make(memory::desc({Cout, Cin, K}, type, tag::any));
        auto np = std::make_shared<Prim>();
        if (!have_layout) {
            wdesc = pd.weights_desc();
            wmem = reorder_to(wdesc);
            have_layout = true;
        }
        if (pd.weights_desc() == wdesc) {
            np->w = wmem;
        } else {
            np->w = reorder_to(pd.weights_desc());
        }
        np->cv = dnnl::convolution_forward(pd);
        np->scratch = pd.scratchpad_desc().get_size();
        np->calls = detail::new_impl_counter(std::string(type == dt::f32 ? "f32 conv " : "bf16 conv ") + pd.impl_info_str());
        p = np;
        return p;
    }
};

struct Geometry {
    ConvWeight *w;
    int stride, pad, dilation;
    bool has_b, has_res;  // the op's sources are {x, W, b?, res?} packed densely
};

using Registry = detail::OwnedRegistry<ConvWeight>;

Registry &registry() {
    static Registry r;
    return r;
}

#if RTF_ONEDNN_X86
// GCC 12 warns on its own _mm512_undefined_ps() inside the unpack intrinsics
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// r[0..15] (16 rows of 16 floats) -> their transpose, in registers.
__attribute__((target("avx512f"))) inline void transpose16(__m512 (&r)[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
        r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; ++i) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; ++i) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
}

// 16 floats -> 16 bf16, round to nearest even (finite values: what detail::f32_to_bf16 gives).
__attribute__((target("avx512f"))) inline __m256i to_bf16(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    return _mm512_cvtepi32_epi16(r);
}

// xb[r·Cin + ci] = bf16(x[ci·ldx + i0 + r]) for r in [r0, r0 + 16), ci in [c0, c0 + 16): one
// tile, every input time inside [0, Tin).
__attribute__((target("avx512f"))) void tile_in(const float *x, int64_t ldx, int64_t i0, int64_t r0, int64_t c0, int64_t Cin,
                                                uint16_t *xb) {
    __m512 v[16];
    for (int j = 0; j < 16; ++j) v[j] = _mm512_loadu_ps(x + (c0 + j) * ldx + i0 + r0);
    transpose16(v);
    for (int k = 0; k < 16; ++k) _mm256_storeu_si256(reinterpret_cast<__m256i *>(xb + (r0 + k) * Cin + c0), to_bf16(v[k]));
}

// The same tile in f32 (no rounding): the f32 vocoder on oneDNN.
__attribute__((target("avx512f"))) void tile_in_f32(const float *x, int64_t ldx, int64_t i0, int64_t r0, int64_t c0, int64_t Cin,
                                                    float *xf) {
    __m512 v[16];
    for (int j = 0; j < 16; ++j) v[j] = _mm512_loadu_ps(x + (c0 + j) * ldx + i0 + r0);
    transpose16(v);
    for (int k = 0; k < 16; ++k) _mm512_storeu_ps(xf + (r0 + k) * Cin + c0, v[k]);
}

// y[co·ldy + t] = yf[(t - base)·Cout + co] (+ res[co·ldr + t]) for t in [t0, t0 + 16), co in
// [c0, c0 + 16): one tile.
__attribute__((target("avx512f"))) void tile_out(const float *yf, int64_t base, int64_t Cout, int64_t t0, int64_t c0,
                                                 const float *res, int64_t ldr, float *y, int64_t ldy) {
    __m512 v[16];
    for (int k = 0; k < 16; ++k) v[k] = _mm512_loadu_ps(yf + (t0 + k - base) * Cout + c0);
    transpose16(v);
    for (int j = 0; j < 16; ++j) {
        __m512 o = v[j];
        if (res) o = _mm512_add_ps(o, _mm512_loadu_ps(res + (c0 + j) * ldr + t0));
        _mm512_storeu_ps(y + (c0 + j) * ldy + t0, o);
    }
}
#pragma GCC diagnostic pop
#endif

void slice(ConvWeight &w, const float *x, int64_t ldx, int64_t Tin, int stride, int pad, int dil, const float *bias,
           const float *res, int64_t ldr, float *y, int64_t ldy, int64_t t0, int64_t t1) {
    if (t1 <= t0) return;
    if (!bias) bias = w.zero_bias.data();
    detail::single_thread();
    auto p = w.prim(stride, dil);
    const int64_t Cin = w.Cin, Cout = w.Cout, L = kChunk, in_len = w.chunk_input(stride, dil);
    // Chunks of L outputs from t0; the last one ends at t1 (overlapping the one before, or
    // reaching before t0 when the range is shorter than L: those rows are computed, unused).
    const int64_t base = std::min(t0, t1 - L);             // first output row computed
    const int64_t i0 = base * stride - pad;                 // its first input time
    const int64_t rows_in = (t1 - 1 - base) * stride + in_len - (L - 1) * stride;  // input rows of the range
    detail::ThreadScratch &s = detail::scratch();
    const bool f32 = w.type == dt::f32;
    if (f32)
        s.xf.resize(static_cast<size_t>(rows_in * Cin));
    else
        s.xb.resize(static_cast<size_t>(rows_in * Cin));
    s.yf.resize(static_cast<size_t>((t1 - base) * Cout));
    if (s.pad.size() < p->scratch) s.pad.resize(p->scratch);
    // the range's input -> channels-last bf16 (f32) once (zero outside [0, Tin): the padding):
    // 16x16 tiles transposed in registers where a tile lies inside the input, else per element
#if RTF_ONEDNN_X86
    const bool tiles = gemm::cpu_has_avx512f() && Cin % 16 == 0;
#else
    const bool tiles = false;
#endif
    for (int64_t rb = 0; rb < rows_in; rb += 16) {
        const int64_t re = std::min<int64_t>(rows_in, rb + 16);
#if RTF_ONEDNN_X86
        if (tiles && re - rb == 16 && i0 + rb >= 0 && i0 + re <= Tin) {
            for (int64_t c0 = 0; c0 < Cin; c0 += 16) {
                if (f32)
                    tile_in_f32(x, ldx, i0, rb, c0, Cin, s.xf.data());
                else
                    tile_in(x, ldx, i0, rb, c0, Cin, s.xb.data());
            }
            continue;
        }
#endif
        for (int64_t ci = 0; ci < Cin; ++ci) {
            const float *row = x + ci * ldx;
            for (int64_t r = rb; r < re; ++r) {
                const int64_t ti = i0 + r;
                const float v = ti >= 0 && ti < Tin ? row[ti] : 0.0f;
                if (f32)
                    s.xf[r * Cin + ci] = v;
                else
                    s.xb[r * Cin + ci] = detail::f32_to_bf16(v);
            }
        }
    }
    // the channels-last input, bf16 or f32: chunk c starts (c - base)·stride rows in
    char *in0 = f32 ? reinterpret_cast<char *>(s.xf.data()) : reinterpret_cast<char *>(s.xb.data());
    const size_t row_bytes = static_cast<size_t>(Cin) * (f32 ? sizeof(float) : sizeof(uint16_t));
    memory sm({{1, Cin, in_len}, w.type, tag::nwc}, engine(), in0);
    memory dm({{1, Cout, L}, dt::f32, tag::nwc}, engine(), s.yf.data());
    memory bm({{Cout}, dt::f32, tag::a}, engine(), const_cast<float *>(bias));
    memory pm({{static_cast<memory::dim>(p->scratch)}, dt::u8, tag::a}, engine(), s.pad.data());
    dnnl::stream &st = detail::thread_stream();
    for (int64_t c0 = t0; c0 < t1; c0 += L) {
        const int64_t cs = std::min(c0, t1 - L);
        sm.set_data_handle(in0 + static_cast<size_t>((cs - base) * stride) * row_bytes);
        dm.set_data_handle(s.yf.data() + (cs - base) * Cout);
        p->cv.execute(st,
                      {{DNNL_ARG_SRC, sm}, {DNNL_ARG_WEIGHTS, p->w}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, dm}, {DNNL_ARG_SCRATCHPAD, pm}});
    }
    st.wait();
    p->calls->calls.fetch_add(1, std::memory_order_relaxed);
    // channels-last outputs [t0, t1) -> "tc", + res
    for (int64_t tb = t0; tb < t1; tb += 16) {
        const int64_t te = std::min<int64_t>(t1, tb + 16);
#if RTF_ONEDNN_X86
        if (tiles && Cout % 16 == 0 && te - tb == 16) {
            for (int64_t c0 = 0; c0 < Cout; c0 += 16) tile_out(s.yf.data(), base, Cout, tb, c0, res, ldr, y, ldy);
            continue;
        }
#endif
        for (int64_t co = 0; co < Cout; ++co) {
            float *row = y + co * ldy;
            const float *rr = res ? res + co * ldr : nullptr;
            for (int64_t t = tb; t < te; ++t) {
                const float v = s.yf[(t - base) * Cout + co];
                row[t] = rr ? v + rr[t] : v;
            }
        }
    }
}

// dst->src = {x, W (handle), b?, res?}
void conv_op(ggml_tensor *dst, int ith, int nth, void *ud) {
    const auto *g = static_cast<const Geometry *>(ud);
    const ggml_tensor *x = dst->src[0];
    const ggml_tensor *b = g->has_b ? dst->src[2] : nullptr;
    const ggml_tensor *res = g->has_res ? dst->src[g->has_b ? 3 : 2] : nullptr;
    const int64_t Tout = dst->ne[0], t0 = Tout * ith / nth, t1 = Tout * (ith + 1) / nth;
    try {
        slice(*g->w, static_cast<const float *>(x->data), x->nb[1] / sizeof(float), x->ne[0], g->stride, g->pad, g->dilation,
              b ? static_cast<const float *>(b->data) : nullptr, res ? static_cast<const float *>(res->data) : nullptr,
              res ? res->nb[1] / sizeof(float) : 0, static_cast<float *>(dst->data), dst->nb[1] / sizeof(float), t0, t1);
    } catch (const dnnl::error &e) {
        // no way to report from inside a graph compute; creation fails here only on a shape
        // oneDNN refuses, which the load-time probe (register_conv) would have caught
        std::fprintf(stderr, "rtf: oneDNN convolution failed (%s): %s\n", dnnl_status2str(e.status), e.what());
        std::abort();
    }
}

}  // namespace

bool conv_pays(int64_t Cin, ConvType type) {
    // f32: measured slower than ggml's im2col path on an AVX2 EPYC (docs/measurements.md §24), not
    // yet against our direct convolution on an AVX-512 CPU: only when forced (t2w-model.cpp).
    if (type == ConvType::f32) return false;
    return Cin % 16 == 0 && gemm::cpu_has_avx512f();
}

void register_conv(const ggml_tensor *key, const float *w, int64_t Cout, int64_t Cin, int64_t K, ConvType type) {
    auto cw = std::make_unique<ConvWeight>();
    cw->Cout = Cout;
    cw->Cin = Cin;
    cw->K = K;
    cw->type = type == ConvType::f32 ? dt::f32 : dt::bf16;
    const size_t n = static_cast<size_t>(Cout * Cin * K);
    if (type == ConvType::f32) {
        cw->plain_f32.assign(w, w + n);
    } else {
        cw->plain.resize(n);
        for (size_t i = 0; i < n; ++i) cw->plain[i] = detail::f32_to_bf16(w[i]);
    }
    cw->zero_bias.assign(static_cast<size_t>(Cout), 0.0f);
    try {  // probe: the unit-stride primitive must exist for this kernel
        cw->prim(1, 1);
    } catch (const dnnl::error &e) {
        throw_setup(std::string("oneDNN: no ") + (type == ConvType::f32 ? "f32" : "bf16") + " convolution for a " + std::to_string(Cout) + "x" + std::to_string(Cin) + "x" +
                    std::to_string(K) + " kernel: " + e.what());
    }
    registry().add(key, std::move(cw));
}

void unregister_conv(const ggml_tensor *key) { registry().remove(key); }
bool is_conv_registered(const ggml_tensor *key) { return registry().find(key) != nullptr; }

ggml_tensor *conv1d(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, int stride, int pad, int dilation,
                    ggml_tensor *res) {
    ConvWeight *cw = registry().find(w);
    if (!cw) throw_runtime("onednn::conv1d: kernel not registered");
    if (x->type != GGML_TYPE_F32 || x->ne[1] != cw->Cin || x->nb[0] != sizeof(float))
        throw_runtime("onednn::conv1d: x is not F32 [T, Cin] with contiguous rows");
    const int64_t Tout = (x->ne[0] + 2 * pad - static_cast<int64_t>(dilation) * (cw->K - 1) - 1) / stride + 1;
    if (Tout < 1) throw_runtime("onednn::conv1d: input shorter than the kernel");
    if (res && (res->ne[0] != Tout || res->ne[1] != cw->Cout || res->type != GGML_TYPE_F32))
        throw_runtime("onednn::conv1d: residual shape mismatch");
    Geometry *g;
    {
        std::unique_lock lk(cw->mu);
        auto &p = cw->geometries[{stride, pad, dilation, b != nullptr, res != nullptr}];
        if (!p) p = std::make_unique<Geometry>(Geometry{cw, stride, pad, dilation, b != nullptr, res != nullptr});
        g = p.get();
    }
    if (b && (b->type != GGML_TYPE_F32 || ggml_nelements(b) != cw->Cout || !ggml_is_contiguous(b)))
        throw_runtime("onednn::conv1d: bias must be F32 [Cout]");
    try {  // made now, while the graph is built, not in the middle of a window
        cw->prim(stride, dilation);
    } catch (const dnnl::error &e) {
        throw_runtime(std::string("onednn::conv1d: no primitive for this geometry: ") + e.what());
    }
    ggml_tensor *args[4] = {x, w, nullptr, nullptr};
    int n = 2;
    if (b) args[n++] = b;
    if (res) args[n++] = res;
    ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, Tout, cw->Cout, 1, 1, args, n, conv_op, GGML_N_TASKS_MAX, g);
    ggml_set_name(y, cw->type == dt::f32 ? "rtf:onednn-conv-f32" : "rtf:onednn-conv-bf16");
    return y;
}

void conv_slice(const ggml_tensor *key, const float *x, int64_t ldx, int64_t Tin, int stride, int pad, int dilation,
                const float *bias, const float *res, int64_t ldr, float *y, int64_t ldy, int64_t t0, int64_t t1) {
    ConvWeight *cw = registry().find(key);
    if (!cw) throw_runtime("onednn::conv_slice: kernel not registered");
    slice(*cw, x, ldx, Tin, stride, pad, dilation, bias, res, ldr, y, ldy, t0, t1);
}

#else

bool conv_pays(int64_t, ConvType) { return false; }
void register_conv(const ggml_tensor *, const float *, int64_t, int64_t, int64_t, ConvType) {
    throw_setup("oneDNN: not compiled in (install libdnnl-dev and rebuild)");
}
void unregister_conv(const ggml_tensor *) {}
bool is_conv_registered(const ggml_tensor *) { return false; }
ggml_tensor *conv1d(ggml_context *, ggml_tensor *, ggml_tensor *, ggml_tensor *, int, int, int, ggml_tensor *) {
    throw_runtime("onednn::conv1d: not compiled in");
}
void conv_slice(const ggml_tensor *, const float *, int64_t, int64_t, int, int, int, const float *, const float *, int64_t,
                float *, int64_t, int64_t, int64_t) {
    throw_runtime("onednn::conv_slice: not compiled in");
}

#endif

}  // namespace rtf::t2w::onednn
