// Unit tests of the oneDNN matmul for token2mel's linear layers (src/models/t2w/onednn-linear.h,
// label `unit`): each compute type against the plain-loop contract of its packed twin
// (gemm_reference for f32, gemm_bf16_reference for bf16) within the worst-case bound of a
// reordered F32 sum, on token2mel's block shapes and odd remainders; the ggml op (bias,
// non-contiguous input, 1 and 2 threads) against the direct call; bit-identical reruns; the
// switches (RTF_T2W_ONEDNN=0, RTF_T2W_GEMM) and the per-CPU choice; the engine with every
// linear layer on oneDNN against the packed path on the tiny kit. Without oneDNN in the build
// the numeric tests are skipped by name and the fallback is checked: nothing registers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <ggml-cpu.h>
#include <ggml.h>

#include "common/require.h"
#include "common/env-guard.h"
#include "common/randn.h"
#include "common/scratch-dir.h"
#include "core/error.h"
#include "models/t2w/onednn-conv.h"
#include "models/t2w/onednn-linear.h"
#include "models/t2w/packed-conv.h"
#include "models/t2w/packed-gemm-bf16.h"
#include "models/t2w/packed-gemm.h"
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-stream.h"
#include "tiny-kit.h"

using namespace rtf::t2w;

namespace {

using rtf::test::randn;

float bf16_round(float f) { return ggml_bf16_to_fp32(ggml_fp32_to_bf16(f)); }

using rtf::test::EnvGuard;

// |y - ref| against the worst case of any order of an F32 sum of K terms:
// gamma_K · Σ|w·x| with gamma_K = K·u / (1 - K·u), u = 2^-24 (plus the bias add's rounding).
void expect_within_sum_bound(const std::vector<float> &y, const std::vector<float> &ref, const std::vector<float> &w,
                             const std::vector<float> &x, int64_t N, int64_t K, int64_t M) {
    const double u = std::ldexp(1.0, -24), g = K * u / (1 - K * u);
    int64_t bad = 0;
    double worst = 0.0;
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            double abs_sum = 0.0;
            for (int64_t k = 0; k < K; ++k) abs_sum += std::fabs(static_cast<double>(w[n * K + k]) * x[m * K + k]);
            const double bound = 2 * g * abs_sum + 2 * u * std::fabs(ref[m * N + n]) + 1e-30;
            const double e = std::fabs(static_cast<double>(y[m * N + n]) - ref[m * N + n]);
            worst = std::max(worst, e / bound);
            if (e > bound) ++bad;
        }
    EXPECT_EQ(bad, 0) << "outputs outside the reordered-sum bound; worst error/bound " << worst;
    // (oneDNN 2.6 sums K <= 512 in order with FMAs: then every output is bit-identical to
    // the loop, worst = 0; a wrong layout or transposed product is far outside the bound)
}

// The tiny kit's PCM from `m` for 40 seeded random codes, the vocoder on 2 threads; and the SNR
// of `x` against `ref` in dB.
std::vector<float> tiny_pcm(const T2wModel &m, unsigned seed) {
    std::mt19937 r(seed);
    std::vector<int32_t> toks(40);
    for (auto &t : toks) t = static_cast<int32_t>(r() % 6561);
    T2wConfig cfg;
    cfg.threads_voc = 2;
    T2wStream st(m, cfg);
    return st.push(toks, true);
}
double snr_db(const std::vector<float> &ref, const std::vector<float> &x) {
    double s = 0, e = 0;
    for (size_t i = 0; i < ref.size(); ++i) s += double(ref[i]) * ref[i], e += (double(x[i]) - ref[i]) * (double(x[i]) - ref[i]);
    return 10.0 * std::log10(s / std::max(e, 1e-30));
}

#define NEED_ONEDNN() \
    if (!onednn::available()) RTF_SKIP_OR_FAIL("onednn", "oneDNN is not in this build (libdnnl-dev) or is switched off")

// oneDNN 2.6 makes bf16 matmuls and convolutions from avx512_core up (emulated there, native
// with AVX512-BF16 or AMX); on an AVX2 CPU it has none, and the engine never asks it for one
// (the bf16 paths need AVX-512 of their own: packed-gemm-bf16.h, onednn::conv_pays()).
bool onednn_has_bf16() { return onednn::isa().find("avx512") != std::string::npos || onednn::isa().find("amx") != std::string::npos; }
#define NEED_ONEDNN_BF16()                                                                                              \
    NEED_ONEDNN();                                                                                                      \
    if (!onednn_has_bf16()) GTEST_SKIP() << "oneDNN has no bf16 kernels on this CPU (ISA " << onednn::isa() << ")"

struct Shape {
    int64_t N, K, M;
};
// token2mel's linear shapes (DiT q/k/v/out, MLP fc1, fc2, final) at a 28-token window, a
// K >= 2048 fc2, odd remainders (M 1, 57; N not a multiple of 16)
const Shape kShapes[] = {{512, 512, 56}, {2048, 512, 56}, {512, 2048, 56}, {80, 512, 57}, {24, 40, 1}, {8, 2048, 3}};

}  // namespace

TEST(OnednnLinear, BuildAndSwitches) {
#if defined(RTF_EXPECT_DNNL) && RTF_EXPECT_DNNL
    EXPECT_TRUE(onednn::compiled()) << "CMake found oneDNN but the engine was built without it";
#endif
    if (!onednn::compiled()) {
        EXPECT_FALSE(onednn::available());
        EXPECT_EQ(onednn::backend_for(GGML_TYPE_F32, 512, 2048), onednn::Backend::Packed);
        ggml_tensor dummy{};
        EXPECT_FALSE(onednn::is_registered(&dummy));
        return;
    }
    EXPECT_FALSE(onednn::isa().empty());
    EXPECT_FALSE(onednn::version().empty());
    {
        EnvGuard off("RTF_T2W_ONEDNN", "0");
        EXPECT_FALSE(onednn::available());
        EXPECT_EQ(onednn::backend_for(GGML_TYPE_F32, 512, 2048), onednn::Backend::Packed);
    }
    {
        EnvGuard off("RTF_T2W_PACKED", "0");  // the switch for every CPU kernel of ours
        EXPECT_FALSE(onednn::available());
    }
    EnvGuard on("RTF_T2W_ONEDNN", nullptr);
    {
        EnvGuard force("RTF_T2W_GEMM", "onednn");
        EXPECT_EQ(onednn::backend_for(GGML_TYPE_F32, 512, 512), onednn::Backend::Onednn);
    }
    {
        EnvGuard force("RTF_T2W_GEMM", "packed");
        EXPECT_EQ(onednn::backend_for(GGML_TYPE_F32, 512, 2048), onednn::Backend::Packed);
        EXPECT_EQ(onednn::backend_for(GGML_TYPE_BF16, 512, 512), onednn::Backend::Packed);
    }
    EnvGuard deflt("RTF_T2W_GEMM", nullptr);
    // the per-CPU choice (onednn-linear.h): AMX takes bf16 to oneDNN; everything else stays on
    // the packed GEMMs
    const bool amx = onednn::isa().find("amx") != std::string::npos;
    EXPECT_EQ(onednn::backend_for(GGML_TYPE_BF16, 512, 512), amx ? onednn::Backend::Onednn : onednn::Backend::Packed);
    EXPECT_EQ(onednn::backend_for(GGML_TYPE_F32, 512, 2048), onednn::Backend::Packed);
    EXPECT_EQ(onednn::backend_for(GGML_TYPE_F32, 512, 512), onednn::Backend::Packed);
}

TEST(OnednnLinear, F32WithinTheReorderedSumBoundOfTheReference) {
    NEED_ONEDNN();
    for (const auto &s : kShapes) {
        SCOPED_TRACE(std::to_string(s.N) + "x" + std::to_string(s.K) + " M " + std::to_string(s.M));
        const auto w = randn(s.N * s.K, 1), x = randn(s.M * s.K, 2), b = randn(s.N, 3);
        ggml_tensor key{};
        onednn::register_weight(&key, w.data(), GGML_TYPE_F32, s.N, s.K, GGML_TYPE_F32);
        std::vector<float> y(s.M * s.N), ref(s.M * s.N);
        onednn::matmul(&key, x.data(), s.M, b.data(), y.data());
        gemm::gemm_reference(w.data(), s.N, s.K, x.data(), s.K, s.M, b.data(), ref.data(), s.N);
        expect_within_sum_bound(y, ref, w, x, s.N, s.K, s.M);
        // a rerun gives the same bits
        std::vector<float> y2(y.size());
        onednn::matmul(&key, x.data(), s.M, b.data(), y2.data());
        EXPECT_EQ(0, std::memcmp(y.data(), y2.data(), y.size() * sizeof(float)));
        onednn::unregister_weight(&key);
        EXPECT_FALSE(onednn::is_registered(&key));
    }
}

TEST(OnednnLinear, Bf16WithinTheReorderedSumBoundOfTheBf16Reference) {
    NEED_ONEDNN_BF16();
    for (const auto &s : kShapes) {
        SCOPED_TRACE(std::to_string(s.N) + "x" + std::to_string(s.K) + " M " + std::to_string(s.M));
        const auto w = randn(s.N * s.K, 4), x = randn(s.M * s.K, 5), b = randn(s.N, 6);
        // the weight handed over in F32: register_weight rounds it to bf16 (nearest even)
        ggml_tensor key{};
        onednn::register_weight(&key, w.data(), GGML_TYPE_F32, s.N, s.K, GGML_TYPE_BF16);
        std::vector<float> y(s.M * s.N), ref(s.M * s.N);
        onednn::matmul(&key, x.data(), s.M, b.data(), y.data());
        std::vector<uint16_t> wb(w.size()), xb(x.size());
        std::vector<float> wr(w.size()), xr(x.size());
        for (size_t i = 0; i < w.size(); ++i) wb[i] = ggml_fp32_to_bf16(w[i]).bits, wr[i] = bf16_round(w[i]);
        for (size_t i = 0; i < x.size(); ++i) xb[i] = ggml_fp32_to_bf16(x[i]).bits, xr[i] = bf16_round(x[i]);
        gemm::gemm_bf16_reference(wb.data(), s.N, s.K, xb.data(), s.K, s.M, b.data(), ref.data(), s.N);
        expect_within_sum_bound(y, ref, wr, xr, s.N, s.K, s.M);
        // and the weight handed over already in bf16 gives the same bits
        ggml_tensor key2{};
        onednn::register_weight(&key2, wb.data(), GGML_TYPE_BF16, s.N, s.K, GGML_TYPE_BF16);
        std::vector<float> y2(y.size());
        onednn::matmul(&key2, x.data(), s.M, b.data(), y2.data());
        EXPECT_EQ(0, std::memcmp(y.data(), y2.data(), y.size() * sizeof(float)));
        onednn::unregister_weight(&key);
        onednn::unregister_weight(&key2);
    }
}

// The ggml op in a graph: a strided (transposed-view) input made contiguous, the bias, no
// bias, and ggml's threads splitting the rows: 1 and 2 threads give the direct call's bits
// where oneDNN's f32 sum order does not depend on the row count (its avx512_core kernels: §14);
// on an AVX2 CPU (gemm:jit, whose K blocking follows M) within the reordered-sum bound.
TEST(OnednnLinear, GraphOpEqualsTheDirectCallOnAnyThreadCount) {
    NEED_ONEDNN();
    const int64_t N = 512, K = 512, M = 57;
    const auto w = randn(N * K, 7), x = randn(M * K, 8), b = randn(N, 9);
    ggml_init_params ip{static_cast<size_t>((N * K + 4 * M * K + 4 * M * N + N) * sizeof(float)) + (8 << 20), nullptr,
                        false};
    ggml_context *ctx = ggml_init(ip);
    ggml_tensor *tw = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, N);
    ggml_tensor *tb = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
    ggml_tensor *txt = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, M, K);  // x stored transposed
    std::memcpy(tb->data, b.data(), N * sizeof(float));
    auto *xt = static_cast<float *>(txt->data);
    for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) xt[k * M + m] = x[m * K + k];
    onednn::register_weight(tw, w.data(), GGML_TYPE_F32, N, K, GGML_TYPE_F32);
    ggml_tensor *xv = ggml_transpose(ctx, txt);  // ne = [K, M], not contiguous
    ggml_tensor *y_b = onednn::linear(ctx, xv, tw, tb);
    ggml_tensor *y_nb = onednn::linear(ctx, xv, tw, nullptr);
    std::vector<float> want_b(M * N), want_nb(M * N);
    onednn::matmul(tw, x.data(), M, b.data(), want_b.data());
    onednn::matmul(tw, x.data(), M, nullptr, want_nb.data());
    for (int threads : {1, 2}) {
        SCOPED_TRACE("threads " + std::to_string(threads));
        ggml_cgraph *gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, y_b);
        ggml_build_forward_expand(gf, y_nb);
        ASSERT_EQ(ggml_graph_compute_with_ctx(ctx, gf, threads), GGML_STATUS_SUCCESS);
        if (onednn_has_bf16()) {
            EXPECT_EQ(0, std::memcmp(y_b->data, want_b.data(), want_b.size() * sizeof(float)));
            EXPECT_EQ(0, std::memcmp(y_nb->data, want_nb.data(), want_nb.size() * sizeof(float)));
        } else {
            std::vector<float> ref(M * N), got(M * N);
            gemm::gemm_reference(w.data(), N, K, x.data(), K, M, b.data(), ref.data(), N);
            std::memcpy(got.data(), y_b->data, got.size() * sizeof(float));
            expect_within_sum_bound(got, ref, w, x, N, K, M);
        }
    }
    onednn::unregister_weight(tw);
    ggml_free(ctx);
    // the products were counted under oneDNN's own name for its kernel
    bool counted = false;
    for (const auto &ic : onednn::impls_used()) counted = counted || (ic.impl.rfind("f32 ", 0) == 0 && ic.calls > 0);
    EXPECT_TRUE(counted);
}

// The engine: the tiny kit with every token2mel linear layer forced onto oneDNN against the
// packed path (f32), and against the packed BF16 GEMM (bf16, where the CPU has it). A wrong
// layout or a transposed product gives noise, far below these floors.
TEST(OnednnLinear, EngineOnOnednnMatchesThePackedPath) {
    NEED_ONEDNN();
    rtf::test::ScratchDir scratch("t2w-onednn");
    const std::string dir = scratch.dir.string();
    test::write_tiny_kit(dir);
    std::mt19937 r(11);
    std::vector<int32_t> toks(60);
    for (auto &t : toks) t = static_cast<int32_t>(r() % 6561);
    EnvGuard voc("RTF_T2W_VOC_ONEDNN_F32", "0");  // the linear layers alone (the vocoder's convs: below)
    for (const char *type : {"f32", "bf16"}) {
        SCOPED_TRACE(type);
        if (std::string(type) == "bf16" && !gemm::bf16_packed_enabled())  // f32 was checked above
            GTEST_SKIP() << "bf16: no packed BF16 GEMM to compare with (no AVX512-BF16 on this CPU or at this kernel "
                            "level, RTF_ISA); the f32 comparison ran";
        std::unique_ptr<T2wModel> on, off;
        {
            EnvGuard g("RTF_T2W_GEMM", "onednn");
            on = T2wModel::load(dir, T2wConfig::typed(type, "f32"));
        }
        {
            EnvGuard g("RTF_T2W_GEMM", "packed");
            off = T2wModel::load(dir, T2wConfig::typed(type, "f32"));
        }
        EXPECT_GT(on->onednn_weights(), 10);  // encoder and DiT linear layers
        EXPECT_EQ(off->onednn_weights(), 0);
        T2wConfig cfg;
        cfg.threads_t2m = 2;
        cfg.threads_voc = 1;
        T2wStream a(*on, cfg), b(*off, cfg);
        const auto pa = a.push(toks, true), pb = b.push(toks, true);
        ASSERT_EQ(pa.size(), pb.size());
        // f32: float rounding only; bf16: both round the same activations to bf16, but a last-bit
        // difference upstream can move a rounding downstream
        EXPECT_GT(snr_db(pb, pa), std::string(type) == "f32" ? 60.0 : 30.0);
        T2wStream a2(*on, cfg);
        const auto pa2 = a2.push(toks, true);
        EXPECT_EQ(0, std::memcmp(pa.data(), pa2.data(), pa.size() * sizeof(float))) << "not bit-identical across runs";
    }
}

// The oneDNN convolution (onednn-conv.h) against the f32 contract of the direct convolution
// (conv::conv_reference) run on the kernel and input as the type rounds them (bf16; f32 as
// given), within the reordered-sum bound of its Cin·K terms: 'same' padding with dilations 1,
// 3, 5, kernels 3 / 7 / 11, the residual fused or not, channel counts on the 16x16-tile path
// and off it, lengths shorter than one chunk and not a multiple of 16; the ggml op on 1, 2 and
// 3 threads gives the bits of the single-thread slice (the chunking does not move a result).
void check_conv_bound(onednn::ConvType type) {
    struct C {
        int64_t Cin, Cout, K, T;
        int d;
        bool res;
    };
    const C cases[] = {{64, 64, 11, 700, 5, true}, {32, 32, 3, 301, 1, false}, {16, 48, 7, 50, 3, true},
                       {24, 8, 5, 97, 1, true},    {80, 16, 7, 260, 1, false}};
    for (const auto &c : cases) {
        SCOPED_TRACE("Cin " + std::to_string(c.Cin) + " Cout " + std::to_string(c.Cout) + " K " + std::to_string(c.K) +
                     " T " + std::to_string(c.T) + " d " + std::to_string(c.d));
        const int pad = static_cast<int>((c.K * c.d - c.d) / 2);
        const auto w = randn(c.Cout * c.Cin * c.K, 21), x = randn(c.Cin * c.T, 22), b = randn(c.Cout, 23),
                   r = randn(c.Cout * c.T, 24);
        std::vector<float> wr(w.size()), xr(x.size());
        const bool bf = type == onednn::ConvType::bf16;
        for (size_t i = 0; i < w.size(); ++i) wr[i] = bf ? bf16_round(w[i]) : w[i];
        for (size_t i = 0; i < x.size(); ++i) xr[i] = bf ? bf16_round(x[i]) : x[i];
        conv::Geometry g;
        g.Cin = c.Cin, g.Cout = c.Cout, g.K = c.K, g.pad = pad, g.dilation = c.d;
        const int64_t Tout = g.out_len(c.T);
        ASSERT_EQ(Tout, c.T);
        std::vector<float> ref(c.Cout * Tout);
        conv::conv_reference(wr.data(), g, xr.data(), c.T, c.T, b.data(), c.res ? r.data() : nullptr, Tout, ref.data(), Tout);

        ggml_init_params ip{static_cast<size_t>((w.size() + 6 * x.size() + 6 * r.size() + b.size()) * sizeof(float)) + (8 << 20),
                            nullptr, false};
        ggml_context *ctx = ggml_init(ip);
        ggml_tensor *tw = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, c.K, c.Cin, c.Cout);
        ggml_tensor *tx = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, c.T, c.Cin);
        ggml_tensor *tb = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, c.Cout);
        ggml_tensor *tr = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, Tout, c.Cout);
        std::memcpy(tw->data, w.data(), w.size() * sizeof(float));
        std::memcpy(tx->data, x.data(), x.size() * sizeof(float));
        std::memcpy(tb->data, b.data(), b.size() * sizeof(float));
        std::memcpy(tr->data, r.data(), r.size() * sizeof(float));
        onednn::register_conv(tw, w.data(), c.Cout, c.Cin, c.K, type);
        ASSERT_TRUE(onednn::is_conv_registered(tw));
        // the whole output on one thread, directly
        std::vector<float> one(ref.size());
        onednn::conv_slice(tw, x.data(), c.T, c.T, 1, pad, c.d, b.data(), c.res ? r.data() : nullptr, Tout, one.data(), Tout, 0,
                           Tout);
        // the bound: |err| <= 2·gamma_n·Σ|w·x| (+ the bias and residual adds' rounding)
        const double u = std::ldexp(1.0, -24), gam = (c.Cin * c.K + 2) * u / (1 - (c.Cin * c.K + 2) * u);
        int64_t bad = 0;
        for (int64_t co = 0; co < c.Cout; ++co)
            for (int64_t t = 0; t < Tout; ++t) {
                double abs_sum = std::fabs(b[co]) + (c.res ? std::fabs(r[co * Tout + t]) : 0.0);
                for (int64_t ci = 0; ci < c.Cin; ++ci)
                    for (int64_t k = 0; k < c.K; ++k) {
                        const int64_t ti = t + k * c.d - pad;
                        if (ti >= 0 && ti < c.T) abs_sum += std::fabs(double(wr[(co * c.Cin + ci) * c.K + k]) * xr[ci * c.T + ti]);
                    }
                if (std::fabs(double(one[co * Tout + t]) - ref[co * Tout + t]) > 2 * gam * abs_sum + 1e-30) ++bad;
            }
        EXPECT_EQ(bad, 0) << "outputs outside the reordered-sum bound of the reference";
        ggml_tensor *y = onednn::conv1d(ctx, tx, tw, tb, 1, pad, c.d, c.res ? tr : nullptr);
        for (int threads : {1, 2, 3}) {
            SCOPED_TRACE("threads " + std::to_string(threads));
            std::memset(y->data, 0, ggml_nbytes(y));
            ggml_cgraph *gf = ggml_new_graph(ctx);
            ggml_build_forward_expand(gf, y);
            ASSERT_EQ(ggml_graph_compute_with_ctx(ctx, gf, threads), GGML_STATUS_SUCCESS);
            EXPECT_EQ(0, std::memcmp(y->data, one.data(), one.size() * sizeof(float)));
        }
        onednn::unregister_conv(tw);
        EXPECT_FALSE(onednn::is_conv_registered(tw));
        ggml_free(ctx);
    }
}

TEST(OnednnConv, Bf16WithinTheReorderedSumBoundOnAnyThreadCount) {
    NEED_ONEDNN_BF16();
    check_conv_bound(onednn::ConvType::bf16);
}

TEST(OnednnConv, F32WithinTheReorderedSumBoundOnAnyThreadCount) {
    NEED_ONEDNN();
    check_conv_bound(onednn::ConvType::f32);
}

// The f32 vocoder's convolutions on oneDNN (RTF_T2W_VOC_ONEDNN_F32=1, the A/B switch) against
// the direct convolution / im2col path: f32 rounding only, and the same bits on a second run.
TEST(OnednnConv, F32VocoderOnOnednnMatchesTheNativePath) {
    NEED_ONEDNN();
    rtf::test::ScratchDir scratch("t2w-onednn-voc-f32");
    const std::string dir = scratch.dir.string();
    test::write_tiny_kit(dir);
    std::unique_ptr<T2wModel> on, off;
    {
        EnvGuard g("RTF_T2W_VOC_ONEDNN_F32", "1");
        on = T2wModel::load(dir, T2wConfig::typed("f32", "f32"));
    }
    {
        EnvGuard g("RTF_T2W_VOC_ONEDNN_F32", "0");
        off = T2wModel::load(dir, T2wConfig::typed("f32", "f32"));
    }
    EXPECT_GT(on->onednn_weights(), off->onednn_weights());
    const auto pa = tiny_pcm(*on, 7), pb = tiny_pcm(*off, 7);
    ASSERT_EQ(pa.size(), pb.size());
    EXPECT_GT(snr_db(pb, pa), 60.0);
    const auto pa2 = tiny_pcm(*on, 7);
    EXPECT_EQ(0, std::memcmp(pa.data(), pa2.data(), pa.size() * sizeof(float))) << "not bit-identical across runs";
}

// `--t2w-type-voc bf16`: without oneDNN (or switched off) a clear refusal at load; with it the
// tiny kit's vocoder runs its convolutions on oneDNN, close to the f32 vocoder.
TEST(OnednnConv, Bf16VocoderLoadsOrIsRefusedWithTheReason) {
    rtf::test::ScratchDir scratch("t2w-onednn-voc");
    const std::string dir = scratch.dir.string();
    test::write_tiny_kit(dir);
    {
        EnvGuard off("RTF_T2W_ONEDNN", "0");
        try {
            T2wModel::load(dir, T2wConfig::typed("f32", "bf16"));
            ADD_FAILURE() << "a bf16 vocoder loaded without oneDNN";
        } catch (const rtf::Error &e) {
            EXPECT_EQ(e.setting(), "t2w-type-voc") << e.what();
            EXPECT_NE(std::string(e.what()).find("bf16 needs"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("f32 or f16"), std::string::npos) << e.what();
        }
    }
    if (!onednn::available()) RTF_SKIP_OR_FAIL("onednn", "oneDNN is not in this build: only the refusal was checked");
    if (!gemm::cpu_has_avx512f()) GTEST_SKIP() << "no AVX-512F: the bf16 vocoder keeps every kernel f32";
    auto bf = T2wModel::load(dir, T2wConfig::typed("f32", "bf16"));
    auto f32 = T2wModel::load(dir, T2wConfig::typed("f32", "f32"));
    EXPECT_GT(bf->onednn_weights(), 0);
    EXPECT_EQ(f32->onednn_weights(), 0);
    const auto pa = tiny_pcm(*bf, 5), pb = tiny_pcm(*f32, 5);
    ASSERT_EQ(pa.size(), pb.size());
    // the tiny kit's 16/8/4-channel stages are partly off the tile path; bf16 rounding only
    EXPECT_GT(snr_db(pb, pa), 25.0);
}
