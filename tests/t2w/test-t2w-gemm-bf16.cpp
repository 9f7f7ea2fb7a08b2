// Unit tests of the packed BF16 GEMM (src/models/t2w/packed-gemm-bf16.h, label `unit`): the
// AVX512-BF16 kernel against its contract gemm_bf16_reference() — a plain loop of fma()s in
// the instruction's order (the odd k of each pair first) — bit for bit, on every block
// remainder and thread split; the packed layout; refusals (N not a multiple of 16, odd K);
// the ggml op in a graph (activations rounded to bf16 by ggml's copy) against the reference
// and, within rounding, against ggml's own bf16 mul_mat. The kernel tests are skipped, and
// reported as skipped by name of the feature, on a CPU without AVX512-BF16; that the CPU
// lacks it is checked against the CPU's own answer first, so a detection bug cannot turn the
// kernel tests into silent skips.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include <ggml-cpu.h>
#include <ggml.h>

#include "models/t2w/bf16-round.h"
#include "models/t2w/packed-gemm-bf16.h"
#include "common/isa-env.h"

using namespace rtf::t2w;

namespace {

std::vector<uint16_t> randn_bf16(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<uint16_t> v(n);
    for (auto &x : v) x = ggml_fp32_to_bf16(d(rng)).bits;
    return v;
}

bool bit_equal(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// What the CPU itself says (cpuid through the compiler), independent of the code under test,
// within the run's kernel level.
bool cpu_says_avx512bf16() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    // ... capped by the run's kernel level (RTF_ISA: scripts/test.sh runs this once per level)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16") &&
           rtf::test::isa_env_allows("avx512-bf16");
#else
    return false;
#endif
}

#define NEED_BF16()                                                                                          \
    if (!gemm::cpu_has_avx512bf16())                                                                         \
    GTEST_SKIP() << "no AVX512-BF16 (the VDPBF16PS instruction) on this CPU or at this kernel level (RTF_ISA): the packed BF16 kernel cannot run"

}  // namespace

TEST(PackedGemmBf16, PackLayoutIsPanelPairMajorAndRefusesOddShapes) {
    const int64_t N = 32, K = 6;
    std::vector<uint16_t> w(N * K);
    for (int64_t i = 0; i < N * K; ++i) w[i] = static_cast<uint16_t>(i + 1);
    auto p = w;
    ASSERT_TRUE(gemm::pack_bf16_in_place(p.data(), N, K));
    for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k)
            EXPECT_EQ(p[(((n / 16) * (K / 2) + k / 2) * 16 + n % 16) * 2 + k % 2], w[n * K + k]) << n << "," << k;
    auto q = w;
    EXPECT_FALSE(gemm::pack_bf16_in_place(q.data(), 24, 8));  // N % 16 != 0
    EXPECT_FALSE(gemm::pack_bf16_in_place(q.data(), 16, 7));  // odd K
    EXPECT_EQ(q, w);                                           // refused: untouched
}

TEST(PackedGemmBf16, DetectionAgreesWithTheCpuAndTheSwitch) {
    EXPECT_EQ(gemm::cpu_has_avx512bf16(), cpu_says_avx512bf16());
    const char *old = std::getenv("RTF_T2W_PACKED");
    const std::string saved = old ? old : "";
    ::unsetenv("RTF_T2W_PACKED");
    EXPECT_EQ(gemm::bf16_packed_enabled(), cpu_says_avx512bf16());
    ::setenv("RTF_T2W_PACKED", "0", 1);
    EXPECT_FALSE(gemm::bf16_packed_enabled());
    if (old) ::setenv("RTF_T2W_PACKED", saved.c_str(), 1);
    else ::unsetenv("RTF_T2W_PACKED");
    if (!cpu_says_avx512bf16()) GTEST_SKIP() << "no AVX512-BF16 on this CPU or at this kernel level (RTF_ISA): only the 'off' side was checked";
}

TEST(PackedGemmBf16, EqualsReferenceBitForBitOnEveryBlockRemainder) {
    NEED_BF16();
    struct Shape {
        int64_t N, K, M;
    };
    const Shape shapes[] = {{16, 2, 1},   {16, 16, 12}, {32, 64, 13}, {48, 130, 25},
                            {80, 512, 56}, {64, 6, 37},  {96, 100, 11}, {16, 1024, 3}};
    unsigned seed = 1;
    for (const auto &s : shapes) {
        const auto w = randn_bf16(s.N * s.K, seed++), x = randn_bf16(s.M * s.K, seed++);
        std::vector<float> b(s.N);
        for (int64_t n = 0; n < s.N; ++n) b[n] = 0.25f * static_cast<float>(n % 7) - 0.5f;
        auto p = w;
        ASSERT_TRUE(gemm::pack_bf16_in_place(p.data(), s.N, s.K));
        for (const bool with_bias : {false, true}) {
            const float *bp = with_bias ? b.data() : nullptr;
            std::vector<float> want(s.M * s.N), got(s.M * s.N, NAN);
            gemm::gemm_bf16_reference(w.data(), s.N, s.K, x.data(), s.K, s.M, bp, want.data(), s.N);
            gemm::gemm_bf16(p.data(), s.N, s.K, x.data(), s.K, s.M, bp, got.data(), s.N);
            EXPECT_TRUE(bit_equal(got, want)) << "N=" << s.N << " K=" << s.K << " M=" << s.M << " bias=" << with_bias;
        }
    }
}

TEST(PackedGemmBf16, StridedRowsAndEveryThreadSplitGiveTheSameBits) {
    NEED_BF16();
    const int64_t N = 48, K = 38, M = 29, ldx = 42, ldy = 53;
    const auto w = randn_bf16(N * K, 11), x = randn_bf16(M * ldx, 12);
    std::vector<float> b(N, 0.5f);
    auto p = w;
    ASSERT_TRUE(gemm::pack_bf16_in_place(p.data(), N, K));
    std::vector<float> want(M * ldy, 7.0f);
    gemm::gemm_bf16_reference(w.data(), N, K, x.data(), ldx, M, b.data(), want.data(), ldy);
    for (int nth = 1; nth <= 7; ++nth) {
        std::vector<float> got(M * ldy, 7.0f);  // the gaps between rows stay untouched
        for (int ith = nth - 1; ith >= 0; --ith)
            gemm::gemm_bf16(p.data(), N, K, x.data(), ldx, M, b.data(), got.data(), ldy, ith, nth);
        EXPECT_TRUE(bit_equal(got, want)) << "nth=" << nth;
    }
}

TEST(PackedGemmBf16, GgmlOpMatchesReferenceAndGgmlBf16MulMat) {
    NEED_BF16();
    const int64_t N = 64, K = 46, M = 23;
    const auto w = randn_bf16(N * K, 41);
    std::mt19937 rng(42);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> x(M * K), b(N);
    for (auto &v : x) v = d(rng);
    for (auto &v : b) v = d(rng);
    ggml_init_params ip{64 * 1024 * 1024, nullptr, false};
    ggml_context *ctx = ggml_init(ip);
    ggml_tensor *tw = ggml_new_tensor_2d(ctx, GGML_TYPE_BF16, K, N);
    ggml_tensor *tp = ggml_new_tensor_2d(ctx, GGML_TYPE_BF16, K, N);
    ggml_tensor *tx = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, M);
    ggml_tensor *tb = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
    std::memcpy(tw->data, w.data(), w.size() * sizeof(uint16_t));
    std::memcpy(tp->data, w.data(), w.size() * sizeof(uint16_t));
    ASSERT_TRUE(gemm::pack_bf16_in_place(static_cast<uint16_t *>(tp->data), N, K));
    std::memcpy(tx->data, x.data(), x.size() * sizeof(float));
    std::memcpy(tb->data, b.data(), b.size() * sizeof(float));
    ggml_tensor *yp = gemm::linear_bf16(ctx, tx, tp, tb);
    ggml_tensor *yg = ggml_add(ctx, ggml_mul_mat(ctx, tw, tx), tb);
    ggml_tensor *yt = gemm::linear_bf16(ctx, ggml_transpose(ctx, ggml_cont(ctx, ggml_transpose(ctx, tx))), tp, nullptr);
    ASSERT_EQ(yp->ne[0], N);
    ASSERT_EQ(yp->ne[1], M);
    std::vector<uint16_t> xb(x.size());
    for (size_t i = 0; i < x.size(); ++i) xb[i] = ggml_fp32_to_bf16(x[i]).bits;
    std::vector<float> want(M * N), want_nb(M * N);
    gemm::gemm_bf16_reference(w.data(), N, K, xb.data(), K, M, b.data(), want.data(), N);
    gemm::gemm_bf16_reference(w.data(), N, K, xb.data(), K, M, nullptr, want_nb.data(), N);
    for (const int nth : {1, 3}) {
        ggml_cgraph *gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, yp);
        ggml_build_forward_expand(gf, yg);
        ggml_build_forward_expand(gf, yt);
        ASSERT_EQ(ggml_graph_compute_with_ctx(ctx, gf, nth), GGML_STATUS_SUCCESS);
        EXPECT_EQ(0, std::memcmp(yp->data, want.data(), want.size() * sizeof(float))) << "nth=" << nth;
        EXPECT_EQ(0, std::memcmp(yt->data, want_nb.data(), want_nb.size() * sizeof(float))) << "nth=" << nth;
        const float *got = static_cast<const float *>(yp->data), *gg = static_cast<const float *>(yg->data);
        double max_err = 0.0;
        for (int64_t i = 0; i < M * N; ++i) max_err = std::max(max_err, static_cast<double>(std::fabs(got[i] - gg[i])));
        EXPECT_LT(max_err, 1e-3) << "nth=" << nth;  // same bf16 inputs, another summation order
    }
    ggml_free(ctx);
}

// The bf16 channel-fastest conv without im2col (conv_k_major_bf16): a bf16 [k, Cin, Cout]
// kernel packed k-major, the input rounded by the op and its overlapping frames read in
// place, batch 2: bit for bit the reference product over the k-major kernel and the rounded
// frames, on 1 and 3 threads; odd shapes are refused.
TEST(PackedGemmBf16, ConvKMajorEqualsTheReferenceOverOverlappingFrames) {
    NEED_BF16();
    const int64_t k = 3, Cin = 38, Cout = 32, T = 27, B = 2, Tout = T - k + 1, K = k * Cin;
    const auto w = randn_bf16(k * Cin * Cout, 61);
    std::mt19937 rng(62);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> x(Cin * T * B), b(Cout);
    for (auto &v : x) v = d(rng);
    for (auto &v : b) v = d(rng);
    std::vector<uint16_t> odd(3 * 5 * 16);
    EXPECT_FALSE(gemm::pack_conv_k_major_bf16_in_place(odd.data(), 3, 5, 16));  // k·Cin odd
    ggml_init_params ip{64 * 1024 * 1024, nullptr, false};
    ggml_context *ctx = ggml_init(ip);
    ggml_tensor *tp = ggml_new_tensor_3d(ctx, GGML_TYPE_BF16, k, Cin, Cout);
    ggml_tensor *tx = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, Cin, T, B);
    ggml_tensor *tb = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, Cout);
    std::memcpy(tp->data, w.data(), w.size() * sizeof(uint16_t));
    ASSERT_TRUE(gemm::pack_conv_k_major_bf16_in_place(static_cast<uint16_t *>(tp->data), k, Cin, Cout));
    std::memcpy(tx->data, x.data(), x.size() * sizeof(float));
    std::memcpy(tb->data, b.data(), b.size() * sizeof(float));
    ggml_tensor *y = gemm::conv_k_major_bf16(ctx, tx, tp, tb);
    ASSERT_EQ(y->ne[0], Cout);
    ASSERT_EQ(y->ne[1], Tout);
    ASSERT_EQ(y->ne[2], B);
    std::vector<uint16_t> wk(static_cast<size_t>(K * Cout)), xb(x.size());
    for (int64_t n = 0; n < Cout; ++n)
        for (int64_t c = 0; c < Cin; ++c)
            for (int64_t j = 0; j < k; ++j) wk[(n * k + j) * Cin + c] = w[(n * Cin + c) * k + j];
    for (size_t i = 0; i < x.size(); ++i) xb[i] = ggml_fp32_to_bf16(x[i]).bits;
    std::vector<float> want(static_cast<size_t>(Cout * Tout * B));
    for (int64_t bb = 0; bb < B; ++bb)
        gemm::gemm_bf16_reference(wk.data(), Cout, K, xb.data() + bb * T * Cin, Cin, Tout, b.data(), want.data() + bb * Tout * Cout,
                                  Cout);
    for (const int nth : {1, 3}) {
        ggml_cgraph *gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, y);
        ASSERT_EQ(ggml_graph_compute_with_ctx(ctx, gf, nth), GGML_STATUS_SUCCESS);
        EXPECT_EQ(0, std::memcmp(y->data, want.data(), want.size() * sizeof(float))) << "nth=" << nth;
    }
    ggml_free(ctx);
}

// The op's own rounding of the activations (bf16-round.h) gives ggml's F32 -> BF16 bits on
// every kind of value: ties to even both ways, the largest finite values (to inf), inf, NaN
// (quiet), denormals, signed zeros; lengths off the 16-lane step.
TEST(PackedGemmBf16, ActivationRoundingIsGgmlsBitForBit) {
    std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.5f, 3.4028235e38f, -3.4028235e38f, INFINITY, -INFINITY, NAN, -NAN,
                            1e-40f, -1e-42f, 1.17549435e-38f};
    for (uint32_t u : {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu, 0x7fc00001u, 0x7f800001u, 0xff800001u, 0x00008000u}) {
        float f;
        std::memcpy(&f, &u, 4);
        v.push_back(f);
    }
    std::mt19937 rng(3);
    std::uniform_int_distribution<uint32_t> bits;
    while (v.size() < 16 * 40 + 7) {
        const uint32_t u = bits(rng);
        float f;
        std::memcpy(&f, &u, 4);
        v.push_back(f);
    }
    for (size_t n : {v.size(), size_t{15}, size_t{16}, size_t{33}}) {
        std::vector<uint16_t> got(n);
        round_to_bf16(v.data(), got.data(), static_cast<int64_t>(n));
        for (size_t i = 0; i < n; ++i) EXPECT_EQ(got[i], ggml_fp32_to_bf16(v[i]).bits) << "value #" << i << " = " << v[i];
    }
}
