// Unit tests of the direct F32 convolution (src/models/t2w/packed-conv.h, label `unit`): the
// kernel against its contract conv_reference() — one fma() accumulator per output in
// (ci, k) order, so equality is exact (bit for bit) — on every kernel size / dilation /
// stride / padding the HiFT vocoder uses, odd lengths shorter and longer than a block, channel
// counts that are not multiples of the block, split across threads in every way; against a
// plain double loop (within the stated float bound); the ggml op in a graph on 1 and 2
// threads against the path it replaces (im2col + packed GEMM + ggml_add), bit for bit; and
// the vocoder of a tiny kit with and without it (RTF_T2W_CONV=0), to float rounding. The
// AVX2 kernel is checked on any CPU with AVX2 (RTF_T2W_PACKED=avx2); on a CPU with neither
// the same tests check the portable path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <ggml-cpu.h>
#include <ggml.h>

#include "common/env-guard.h"
#include "common/randn.h"
#include "common/scratch-dir.h"
#include "core/error.h"
#include "models/t2w/packed-conv.h"
#include "models/t2w/packed-gemm.h"
#include "models/t2w/t2w-config.h"
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-ops.h"
#include "models/t2w/t2w-stream.h"
#include "tiny-kit.h"

using namespace rtf::t2w;

namespace {

using rtf::test::randn;

bool bit_equal(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Case {
    int64_t Cin, Cout, K;
    int stride, pad, dilation;
    int64_t Tin;
};

std::string str(const Case &c) {
    return "Cin=" + std::to_string(c.Cin) + " Cout=" + std::to_string(c.Cout) + " K=" + std::to_string(c.K) +
           " s=" + std::to_string(c.stride) + " pad=" + std::to_string(c.pad) + " d=" + std::to_string(c.dilation) +
           " Tin=" + std::to_string(c.Tin);
}

// The vocoder's convolutions (spec §1.8, §3.8) at small channel counts, on lengths below,
// at and past the 48-time block and odd: ResBlock convs1 (K 3/7/11, dilation 1/3/5, pad
// (K·d - d)/2) and convs2, conv_pre (K 7), source_downs (K 30 s 15 pad 7; K 6 s 3 pad 1; K 1),
// the f0 condnet (K 3 pad 1), conv_post (Cout 18: not a multiple of 8).
std::vector<Case> vocoder_cases() {
    std::vector<Case> cs;
    for (const int64_t T : {2, 5, 47, 49, 97, 301})
        for (const int K : {3, 7, 11})
            for (const int d : {1, 3, 5}) cs.push_back({16, 16, K, 1, (K * d - d) / 2, d, T});
    for (const int64_t T : {58, 131}) {
        cs.push_back({80, 24, 7, 1, 3, 1, T});   // conv_pre
        cs.push_back({24, 18, 7, 1, 3, 1, T});   // conv_post
        cs.push_back({80, 16, 3, 1, 1, 1, T});   // f0 condnet
        cs.push_back({18, 16, 30, 15, 7, 1, T * 15 + 1});  // source_downs.0
        cs.push_back({18, 8, 6, 3, 1, 1, T * 3 + 1});      // source_downs.1
        cs.push_back({18, 8, 1, 1, 0, 1, T});              // source_downs.2
    }
    cs.push_back({5, 13, 4, 2, 0, 2, 77});  // odd everything, no padding
    return cs;
}

// Runs conv() for ith = 0..nth-1 (each writes its own blocks) into y.
void run_split(const std::vector<float> &packed, const conv::Geometry &g, const std::vector<float> &x, int64_t Tin,
               const float *b, const float *res, std::vector<float> &y, int nth) {
    const int64_t Tout = g.out_len(Tin);
    for (int ith = 0; ith < nth; ++ith) conv::conv(packed.data(), g, x.data(), Tin, Tin, b, res, Tout, y.data(), Tout, ith, nth);
}

}  // namespace

TEST(PackedConv, PackLayoutIsBlockCiKMajorWithZeroPadding) {
    const int64_t Cout = 11, Cin = 2, K = 3;
    std::vector<float> w(Cout * Cin * K);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i + 1);
    ASSERT_EQ(conv::packed_floats(Cout, Cin, K), 16 * Cin * K);
    std::vector<float> p(conv::packed_floats(Cout, Cin, K), -1.0f);
    conv::pack(w.data(), Cout, Cin, K, p.data());
    for (int64_t co = 0; co < 16; ++co)
        for (int64_t ci = 0; ci < Cin; ++ci)
            for (int64_t k = 0; k < K; ++k) {
                const float got = p[(((co / 8) * Cin + ci) * K + k) * 8 + co % 8];
                EXPECT_EQ(got, co < Cout ? w[(co * Cin + ci) * K + k] : 0.0f) << co << " " << ci << " " << k;
            }
}

TEST(PackedConv, OutLenIsPyTorchConv1d) {
    conv::Geometry g;
    g.K = 30, g.stride = 15, g.pad = 7;
    EXPECT_EQ(g.out_len(58 * 120 + 1), 58 * 8);  // source_downs.0: the source STFT frames -> stage 0's length
    g.K = 11, g.stride = 1, g.pad = 25, g.dilation = 5;
    EXPECT_EQ(g.out_len(301), 301);
}

namespace {
// Bit for bit equal to the plain loop, with and without bias and residual, for every split,
// on the kernel gemm::kernel_isa() picks now.
void expect_reference_bits_on_vocoder_cases() {
    unsigned seed = 1;
    for (const Case &c : vocoder_cases()) {
        conv::Geometry g;
        g.Cin = c.Cin, g.Cout = c.Cout, g.K = c.K, g.stride = c.stride, g.pad = c.pad, g.dilation = c.dilation;
        const int64_t Tout = g.out_len(c.Tin);
        ASSERT_GT(Tout, 0) << str(c);
        const auto w = randn(c.Cout * c.Cin * c.K, seed++), x = randn(c.Cin * c.Tin, seed++), b = randn(c.Cout, seed++),
                   res = randn(c.Cout * Tout, seed++);
        std::vector<float> packed(conv::packed_floats(c.Cout, c.Cin, c.K));
        conv::pack(w.data(), c.Cout, c.Cin, c.K, packed.data());
        for (const bool with_b : {false, true})
            for (const bool with_res : {false, true}) {
                const float *bp = with_b ? b.data() : nullptr;
                const float *rp = with_res ? res.data() : nullptr;
                std::vector<float> want(c.Cout * Tout);
                conv::conv_reference(w.data(), g, x.data(), c.Tin, c.Tin, bp, rp, Tout, want.data(), Tout);
                for (const int nth : {1, 2, 3, 7}) {
                    std::vector<float> got(want.size(), NAN);
                    run_split(packed, g, x, c.Tin, bp, rp, got, nth);
                    EXPECT_TRUE(bit_equal(got, want)) << str(c) << " bias=" << with_b << " res=" << with_res << " nth=" << nth;
                }
            }
    }
}
}  // namespace

TEST(PackedConv, EqualsReferenceBitForBit) { expect_reference_bits_on_vocoder_cases(); }

// The AVX2 + FMA kernel (an AVX2-only CPU's; RTF_T2W_PACKED=avx2 forces it on an AVX-512
// one): its 4 x 24 sub-blocks, masked edges and gathers, the same bits.
TEST(PackedConv, Avx2KernelEqualsReferenceBitForBit) {
    if (!gemm::cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
    rtf::test::EnvGuard avx2("RTF_T2W_PACKED", "avx2");
    expect_reference_bits_on_vocoder_cases();
}

// The contract itself against double arithmetic: |y - exact| <= n·2^-24·Σ|w·x| + 2^-24·|y|
// (n = Cin·K terms, each fma rounding once, then the bias add), i.e. float rounding only.
TEST(PackedConv, ReferenceIsWithinFloatRoundingOfDouble) {
    unsigned seed = 100;
    for (const Case &c : vocoder_cases()) {
        conv::Geometry g;
        g.Cin = c.Cin, g.Cout = c.Cout, g.K = c.K, g.stride = c.stride, g.pad = c.pad, g.dilation = c.dilation;
        const int64_t Tout = g.out_len(c.Tin);
        const auto w = randn(c.Cout * c.Cin * c.K, seed++), x = randn(c.Cin * c.Tin, seed++), b = randn(c.Cout, seed++);
        std::vector<float> packed(conv::packed_floats(c.Cout, c.Cin, c.K)), y(c.Cout * Tout);
        conv::pack(w.data(), c.Cout, c.Cin, c.K, packed.data());
        run_split(packed, g, x, c.Tin, b.data(), nullptr, y, 2);
        const double eps = std::ldexp(1.0, -24), n = static_cast<double>(c.Cin * c.K);
        for (int64_t co = 0; co < c.Cout; ++co)
            for (int64_t t = 0; t < Tout; ++t) {
                double exact = b[co], mag = 0.0;
                for (int64_t ci = 0; ci < c.Cin; ++ci)
                    for (int64_t k = 0; k < c.K; ++k) {
                        const int64_t i = t * c.stride + k * c.dilation - c.pad;
                        if (i < 0 || i >= c.Tin) continue;
                        const double p = static_cast<double>(w[(co * c.Cin + ci) * c.K + k]) * x[ci * c.Tin + i];
                        exact += p;
                        mag += std::fabs(p);
                    }
                const double got = y[co * Tout + t];
                ASSERT_LE(std::fabs(got - exact), n * eps * mag + eps * std::fabs(got) + 1e-30) << str(c) << " co=" << co << " t=" << t;
            }
    }
}

// The ggml op in a graph (1 and 2 threads) equals the formulation it replaces in the vocoder —
// im2col + the packed GEMM + transpose (ops::conv1d_tc on a gemm-packed kernel), then
// ggml_add of the residual — bit for bit, on a ResBlock conv and the strided source_downs.0.
TEST(PackedConv, GgmlOpEqualsIm2colGemmPath) {
    struct G {
        int64_t Cin, Cout, K;
        int s, pad, d;
        int64_t Tin;
        bool res;
    };
    for (const G &c : {G{32, 32, 11, 1, 25, 5, 301, true}, G{32, 16, 7, 1, 3, 1, 58, false}, G{18, 32, 30, 15, 7, 1, 58 * 15 + 1, false}}) {
        ggml_init_params ip{64 * 1024 * 1024, nullptr, false};
        ggml_context *ctx = ggml_init(ip);
        const auto w = randn(c.Cout * c.Cin * c.K, 7), x = randn(c.Cin * c.Tin, 8), b = randn(c.Cout, 9);
        ggml_tensor *tx = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, c.Tin, c.Cin);
        ggml_tensor *tb = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, c.Cout);
        ggml_tensor *wg = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, c.K, c.Cin, c.Cout);
        ggml_tensor *wc = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, c.K, c.Cin, c.Cout);
        std::memcpy(tx->data, x.data(), x.size() * 4);
        std::memcpy(tb->data, b.data(), b.size() * 4);
        std::memcpy(wg->data, w.data(), w.size() * 4);
        std::memcpy(wc->data, w.data(), w.size() * 4);
        gemm::pack_in_place(static_cast<float *>(wg->data), c.Cout, c.Cin * c.K);
        gemm::register_packed(wg);
        conv::pack_in_place(static_cast<float *>(wc->data), c.Cout, c.Cin, c.K);
        conv::register_packed(wc);
        conv::Geometry geo;
        geo.K = c.K, geo.stride = c.s, geo.pad = c.pad, geo.dilation = c.d;
        const int64_t Tout = geo.out_len(c.Tin);
        ggml_tensor *tr = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, Tout, c.Cout);
        const auto r = randn(Tout * c.Cout, 10);
        std::memcpy(tr->data, r.data(), r.size() * 4);
        ggml_tensor *old = ops::conv1d_tc(ctx, tx, wg, tb, c.s, c.pad, c.d);
        if (c.res) old = ggml_add(ctx, old, tr);
        ggml_tensor *direct = conv::conv1d(ctx, tx, wc, tb, c.s, c.pad, c.d, c.res ? tr : nullptr);
        ASSERT_EQ(direct->ne[0], old->ne[0]);
        ASSERT_EQ(direct->ne[1], old->ne[1]);
        for (const int nth : {1, 2}) {
            ggml_cgraph *gf = ggml_new_graph(ctx);
            ggml_build_forward_expand(gf, old);
            ggml_build_forward_expand(gf, direct);
            ASSERT_EQ(ggml_graph_compute_with_ctx(ctx, gf, nth), GGML_STATUS_SUCCESS);
            EXPECT_EQ(0, std::memcmp(old->data, direct->data, ggml_nbytes(old))) << "K=" << c.K << " nth=" << nth;
        }
        gemm::unregister_packed(wg);
        conv::unregister_packed(wc);
        ggml_free(ctx);
    }
}

TEST(PackedConv, RefusesUnpackedKernelAndMismatchingInput) {
    ggml_init_params ip{1024 * 1024, nullptr, true};
    ggml_context *ctx = ggml_init(ip);
    ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 50, 16);
    ggml_tensor *w = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 3, 16, 8);
    ggml_set_name(w, "convs1.0.weight");
    EXPECT_THROW(conv::conv1d(ctx, x, w, nullptr, 1, 1, 1), rtf::Error);  // not registered
    conv::register_packed(w);
    ggml_tensor *x8 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 50, 8);
    try {
        conv::conv1d(ctx, x8, w, nullptr, 1, 1, 1);
        ADD_FAILURE() << "Cin mismatch accepted";
    } catch (const rtf::Error &e) {
        EXPECT_NE(std::string(e.what()).find("convs1.0.weight"), std::string::npos) << e.what();
    }
    ggml_tensor *res = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 49, 8);
    EXPECT_THROW(conv::conv1d(ctx, x, w, nullptr, 1, 1, 1, res), rtf::Error);  // Tout is 50
    EXPECT_THROW(conv::conv1d(ctx, x, w, nullptr, 0, 1, 1), rtf::Error);        // stride 0
    EXPECT_NE(conv::conv1d(ctx, x, w, nullptr, 1, 1, 1), nullptr);
    conv::unregister_packed(w);
    ggml_free(ctx);
}

// The vocoder in the engine: a tiny kit whose HiFT channels (64/32/16, conv_pre 128) are all
// multiples of the GEMM's 16-row panel (so the im2col side packs the same kernels), loaded
// with the direct convolution and with RTF_T2W_CONV=0 (im2col + packed GEMM, ggml's mul_mat in the transposed convs). The convolutions are bit-equal
// (GgmlOpEqualsIm2colGemmPath); the transposed convs' product (packed GEMM vs mul_mat) sums in
// another order, so the PCM agrees to float rounding: SNR > 90 dB (a wrong kernel, tap or
// residual gives noise, far below).
TEST(PackedConv, VocoderOutputMatchesIm2colPath) {
    if (gemm::kernel_isa() == gemm::Isa::portable) GTEST_SKIP() << "neither AVX-512F nor AVX2 + FMA: weights are not packed";
    rtf::test::ScratchDir scratch("t2w-conv");
    test::TinyKitDims dims;
    dims.c0 = 128;
    test::write_tiny_kit(scratch.dir.string(), dims, 5);
    const char *prev = std::getenv("RTF_T2W_CONV");
    const std::string saved = prev ? prev : "";
    const char *prev_p = std::getenv("RTF_T2W_PACKED");
    const std::string saved_p = prev_p ? prev_p : "";
    unsetenv("RTF_T2W_PACKED");
    setenv("RTF_T2W_CONV", "1", 1);
    auto direct = T2wModel::load(scratch.dir.string());
    setenv("RTF_T2W_CONV", "0", 1);
    auto im2col = T2wModel::load(scratch.dir.string());
    if (prev) setenv("RTF_T2W_CONV", saved.c_str(), 1); else unsetenv("RTF_T2W_CONV");
    if (prev_p) setenv("RTF_T2W_PACKED", saved_p.c_str(), 1);
    ASSERT_EQ(direct->hift_dims().channels, (std::vector<int>{64, 32, 16}));
    EXPECT_GT(direct->packed_weights(), 0);
    T2wConfig cfg;
    cfg.threads_t2m = 1;
    cfg.threads_voc = 2;
    std::mt19937 rng(11);
    std::vector<int32_t> toks(60);
    for (auto &t : toks) t = static_cast<int32_t>(rng() % 6561);
    T2wStream a(*direct, cfg), b(*im2col, cfg);
    const auto pa = a.push(toks, true), pb = b.push(toks, true);
    ASSERT_FALSE(pa.empty());
    double energy = 0.0;
    for (float v : pa) energy += static_cast<double>(v) * v;
    EXPECT_GT(energy, 0.0);
    ASSERT_EQ(pa.size(), pb.size());
    double err = 0.0;
    for (size_t i = 0; i < pa.size(); ++i) err += (static_cast<double>(pa[i]) - pb[i]) * (static_cast<double>(pa[i]) - pb[i]);
    const double snr = 10.0 * std::log10(energy / std::max(err, 1e-30));
    std::printf("tiny-kit vocoder, direct vs im2col path: PCM SNR %.1f dB\n", snr);
    EXPECT_GT(snr, 90.0);
}
