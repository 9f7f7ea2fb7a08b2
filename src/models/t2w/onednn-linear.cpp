#include "models/t2w/onednn-linear.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "core/cpu-features.h"
#include "core/error.h"
#include "models/t2w/bf16-round.h"
#include "models/t2w/packed-gemm.h"

#if RTF_HAVE_DNNL
#include <oneapi/dnnl/dnnl_debug.h>

#include "models/t2w/onednn-util.h"
#endif

namespace rtf::t2w::onednn {

namespace {

bool env_off(const char *name) {
    const char *v = std::getenv(name);
    return v && std::strcmp(v, "0") == 0;
}

}  // namespace

bool compiled() { return RTF_HAVE_DNNL != 0; }

bool available() { return compiled() && !env_off("RTF_T2W_ONEDNN") && !env_off("RTF_T2W_PACKED"); }

Backend backend_for(ggml_type type, int64_t N, int64_t K) {
    (void)N, (void)K;
    if (!available()) return Backend::Packed;
    if (const char *v = std::getenv("RTF_T2W_GEMM")) {
        if (std::strcmp(v, "onednn") == 0) return Backend::Onednn;
        if (std::strcmp(v, "packed") == 0) return Backend::Packed;
    }
    // Measured on the EPYC (docs/measurements.md §14, interleaved, golden workload): the packed
    // kernels win or tie for every shape and both types there, so oneDNN is the default only
    // where it reaches a unit ours cannot: AMX tiles for bf16.
    return type == GGML_TYPE_BF16 && isa().find("amx") != std::string::npos ? Backend::Onednn : Backend::Packed;
}

#if RTF_HAVE_DNNL

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

using detail::engine;

// One registered weight: its reordered copy and the primitives made for it so far, one per
// row count (window shapes repeat: a handful per model).
struct Weight {
    int64_t N = 0, K = 0;
    dt type = dt::f32;
    memory::desc wdesc;  // the layout the reorder chose
    memory wmem;         // owns the reordered data
    std::shared_mutex mu;  // guards prims (read-locked on the hot path: both CFG lanes share a weight)
    struct Prim {
        dnnl::matmul mm;
        size_t scratch = 0;
        std::shared_ptr<detail::ImplCounter> calls;
    };
    std::map<int64_t, std::shared_ptr<Prim>> prims;
    std::vector<float> zero_bias;  // matmul's bias when the layer has none

    dnnl::matmul::primitive_desc make_pd(int64_t M, const memory::desc &w) const {
        const memory::desc src({M, K}, type, tag::ab), bias({1, N}, dt::f32, tag::ab), dst({M, N}, dt::f32, tag::ab);
        return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, w, bias, dst), detail::user_scratchpad(), engine());
    }
    std::shared_ptr<Prim> prim(int64_t M) {
        detail::single_thread();
        {
            std::shared_lock rl(mu);
            auto it = prims.find(M);
            if (it != prims.end()) return it->second;
        }
        std::unique_lock lk(mu);
        auto &p = prims[M];
        if (!p) {
            auto pd = make_pd(M, wdesc);
            p = std::make_shared<Prim>();
            p->mm = dnnl::matmul(pd);
            p->scratch = pd.scratchpad_desc().get_size();
            p->calls = detail::new_impl_counter(std::string(type == dt::bf16 ? "bf16 " : "f32 ") + pd.impl_info_str());
        }
        return p;
    }
};

using Registry = detail::OwnedRegistry<Weight>;

// Every implementation counter made so far (matmul and convolution primitives).
struct Counters {
    std::mutex mu;
    std::vector<std::shared_ptr<detail::ImplCounter>> all;
};
Counters &counters() {
    static Counters c;
    return c;
}

Registry &registry() {
    static Registry r;
    return r;
}

// x: M dense rows of K floats; y: M dense rows of N (the primitives are made for dense rows).
void run(Weight &w, const float *x, int64_t M, const float *bias, float *y) {
    if (M <= 0) return;
    detail::single_thread();
    auto p = w.prim(M);
    detail::ThreadScratch &s = detail::scratch();
    if (s.pad.size() < p->scratch) s.pad.resize(p->scratch);
    const void *src = x;
    if (w.type == dt::bf16) {
        s.xb.resize(static_cast<size_t>(M * w.K));
        round_to_bf16(x, s.xb.data(), M * w.K);
        src = s.xb.data();
    }
    const memory::desc sd({M, w.K}, w.type, tag::ab), dd({M, w.N}, dt::f32, tag::ab);
    if (!bias) bias = w.zero_bias.data();
    memory sm(sd, engine(), const_cast<void *>(src)), dm(dd, engine(), y);
    memory bm({{1, w.N}, dt::f32, tag::ab}, engine(), const_cast<float *>(bias));
    memory pm({{static_cast<memory::dim>(p->scratch)}, dt::u8, tag::a}, engine(), s.pad.data());
    dnnl::stream &st = detail::thread_stream();
    p->mm.execute(st, {{DNNL_ARG_SRC, sm},
                       {DNNL_ARG_WEIGHTS, w.wmem},
                       {DNNL_ARG_BIAS, bm},
                       {DNNL_ARG_DST, dm},
                       {DNNL_ARG_SCRATCHPAD, pm}});
    st.wait();
    p->calls->calls.fetch_add(1, std::memory_order_relaxed);
}

// dst->src = {x (contiguous F32 rows), W (handle), b?}; user data: the Weight (alive while
// its model is, which outlives every graph built on it).
void linear_op(ggml_tensor *dst, int ith, int nth, void *ud) {
    auto *w = static_cast<Weight *>(ud);
    const ggml_tensor *x = dst->src[0], *b = dst->src[2];
    const int64_t M = x->ne[1] * x->ne[2] * x->ne[3];
    const int64_t m0 = M * ith / nth, m1 = M * (ith + 1) / nth;
    if (m1 <= m0) return;
    try {
        run(*w, static_cast<const float *>(x->data) + m0 * w->K, m1 - m0, b ? static_cast<const float *>(b->data) : nullptr,
            static_cast<float *>(dst->data) + m0 * w->N);
    } catch (const dnnl::error &e) {
        // inside a graph compute there is no way to report; a primitive that was created
        // at load for this weight fails here only on an allocation failure
        std::fprintf(stderr, "rtf: oneDNN matmul failed (%s): %s\n", dnnl_status2str(e.status), e.what());
        std::abort();
    }
}

}  // namespace

std::string version() {
    const dnnl_version_t *v = dnnl_version();
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

namespace detail {
void apply_isa_level() {
    static const bool once = [] {
        if (std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA")) return true;
        using isa_t = dnnl::cpu_isa;
        isa_t cap = isa_t::all;
        switch (isa_level()) {
        case IsaLevel::amx: cap = isa_t::all; break;
        case IsaLevel::avx512_bf16: cap = isa_t::avx512_core_bf16; break;
        case IsaLevel::avx512: cap = isa_t::avx512_core_vnni; break;  // Ice Lake's level
        case IsaLevel::avx2: cap = isa_t::avx2; break;
        case IsaLevel::baseline: cap = isa_t::sse41; break;
        }
        if (cap == isa_t::all) return true;
        try {
            dnnl::set_max_cpu_isa(cap);
        } catch (const dnnl::error &e) {
            std::fprintf(stderr, "rtf: oneDNN refused the kernel level %s (%s)\n", isa_level_name(isa_level()),
                         e.what());
        }
        return true;
    }();
    (void)once;
}
}  // namespace detail

std::string isa() {
    detail::apply_isa_level();
    switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::sse41: return "sse41";
    default: return "other";
    }
}

void register_weight(const ggml_tensor *key, const void *w, ggml_type src_type, int64_t N, int64_t K, ggml_type type) {
    if (type != GGML_TYPE_F32 && type != GGML_TYPE_BF16) throw_runtime("onednn::register_weight: compute type not f32/bf16");
    if (src_type != GGML_TYPE_F32 && src_type != GGML_TYPE_BF16) throw_runtime("onednn::register_weight: source not f32/bf16");
    auto wt = std::make_unique<Weight>();
    wt->N = N;
    wt->K = K;
    wt->type = type == GGML_TYPE_BF16 ? dt::bf16 : dt::f32;
    wt->zero_bias.assign(static_cast<size_t>(N), 0.0f);
    try {
        // the layout is chosen once, for a window-sized product, and kept for every row count
        detail::single_thread();
        const memory::desc any({K, N}, wt->type, tag::any);
        auto pd = wt->make_pd(64, any);
        wt->wdesc = pd.weights_desc();
        wt->wmem = memory(wt->wdesc, engine());
        // W[n][k] at n·K + k is oneDNN's {K, N} matrix in format "ba"
        const memory::desc plain({K, N}, src_type == GGML_TYPE_BF16 ? dt::bf16 : dt::f32, tag::ba);
        memory pm(plain, engine(), const_cast<void *>(w));
        dnnl::stream st(engine());
        dnnl::reorder(pm, wt->wmem).execute(st, pm, wt->wmem);
        st.wait();
    } catch (const dnnl::error &e) {
        throw_setup(std::string("oneDNN: no matmul for a ") + std::to_string(N) + "x" + std::to_string(K) + " weight: " +
                    e.what());
    }
    registry().add(key, std::move(wt));
}

void unregister_weight(const ggml_tensor *key) { registry().remove(key); }
bool is_registered(const ggml_tensor *key) { return registry().find(key) != nullptr; }

ggml_tensor *linear(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b) {
    Weight *wt = registry().find(w);
    if (!wt) throw_runtime("onednn::linear: weight not registered");
    if (x->type != GGML_TYPE_F32 || x->ne[0] != wt->K) throw_runtime("onednn::linear: x is not F32 [K, ...]");
    if (!ggml_is_contiguous(x)) x = ggml_cont(ctx, x);
    ggml_tensor *args[3] = {x, w, b};
    ggml_tensor *y = ggml_custom_4d(ctx, GGML_TYPE_F32, wt->N, x->ne[1], x->ne[2], x->ne[3], args, b ? 3 : 2, linear_op,
                          GGML_N_TASKS_MAX, wt);
    ggml_set_name(y, wt->type == dt::bf16 ? "rtf:onednn-matmul-bf16" : "rtf:onednn-matmul-f32");
    return y;
}

namespace detail {
std::shared_ptr<ImplCounter> new_impl_counter(const std::string &impl) {
    auto c = std::make_shared<ImplCounter>();
    c->impl = impl;
    std::lock_guard lk(counters().mu);
    counters().all.push_back(c);
    return c;
}
}  // namespace detail

std::vector<ImplCount> impls_used() {
    std::map<std::string, int64_t> sum;
    {
        std::lock_guard lk(counters().mu);
        for (const auto &c : counters().all) sum[c->impl] += c->calls.load(std::memory_order_relaxed);
    }
    std::vector<ImplCount> v;
    for (const auto &[impl, n] : sum)
        if (n > 0) v.push_back({impl, n});
    return v;
}

void matmul(const ggml_tensor *key, const float *x, int64_t M, const float *bias, float *y) {
    Weight *wt = registry().find(key);
    if (!wt) throw_runtime("onednn::matmul: weight not registered");
    run(*wt, x, M, bias, y);
}

#else  // no oneDNN: available() is false, nothing gets registered

std::string version() { return ""; }
std::string isa() { return ""; }
void register_weight(const ggml_tensor *, const void *, ggml_type, int64_t, int64_t, ggml_type) {
    throw_setup("oneDNN: not compiled in (install libdnnl-dev and rebuild)");
}
void unregister_weight(const ggml_tensor *) {}
bool is_registered(const ggml_tensor *) { return false; }
ggml_tensor *linear(ggml_context *, ggml_tensor *, ggml_tensor *, ggml_tensor *) {
    throw_runtime("onednn::linear: not compiled in");
}
std::vector<ImplCount> impls_used() { return {}; }
void matmul(const ggml_tensor *, const float *, int64_t, const float *, float *) {
    throw_runtime("onednn::matmul: not compiled in");
}

#endif

}  // namespace rtf::t2w::onednn
