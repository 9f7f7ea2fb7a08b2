// Unit tests of the packed F32 GEMM (src/models/t2w/packed-gemm.h, label `unit`): the
// kernel against its contract gemm_reference() — a plain loop with one fma() accumulator
// per output in k order, so equality is exact (bit for bit) — on shapes that are not
// multiples of the blocks (N not a multiple of 16 or 32, M from 1 past 12, odd K), split
// across threads in every way; packing in place; the ggml custom op in a graph on several
// threads; and the orientation against ggml's own mul_mat (within float rounding). The
// AVX2 kernel is checked on any CPU with AVX2 (forced by RTF_T2W_PACKED=avx2); on a CPU
// with neither the same tests check the portable path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include <ggml-cpu.h>
#include <ggml.h>

#include "common/env-guard.h"
#include "common/randn.h"
#include "models/t2w/packed-gemm.h"
#include "models/t2w/t2w-ops.h"
#include "common/isa-env.h"

using namespace rtf::t2w;

namespace {

using rtf::test::randn;

bool bit_equal(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Shape {
    int64_t N, K, M;
};

}  // namespace

TEST(PackedGemm, PackedFloatsRoundsUpToPanels) {
    EXPECT_EQ(gemm::packed_floats(16, 5), 80);
    EXPECT_EQ(gemm::packed_floats(17, 5), 160);
    EXPECT_EQ(gemm::packed_floats(1, 3), 48);
}

TEST(PackedGemm, PackLayoutIsPanelKMajorWithZeroPadding) {
    const int64_t N = 18, K = 3;
    std::vector<float> w(N * K);
    for (int64_t i = 0; i < N * K; ++i) w[i] = static_cast<float>(i + 1);
    std::vector<float> p(gemm::packed_floats(N, K), -1.0f);
    gemm::pack(w.data(), N, K, p.data());
    for (int64_t n = 0; n < 32; ++n)
        for (int64_t k = 0; k < K; ++k) {
            const float got = p[((n / 16) * K + k) * 16 + n % 16];
            EXPECT_EQ(got, n < N ? w[n * K + k] : 0.0f) << "n=" << n << " k=" << k;
        }
}

namespace {
// Every shape's product (with and without bias) equals the reference bit for bit, on the
// kernel gemm::kernel_isa() picks now.
void expect_reference_bits_on_odd_shapes() {
    const Shape shapes[] = {{1, 1, 1},    {5, 7, 1},     {16, 16, 12},  {17, 33, 13}, {31, 9, 2},  {32, 64, 25},
                            {33, 65, 11}, {48, 100, 24}, {80, 512, 56}, {47, 3, 37},  {64, 1, 5},  {96, 130, 1}};
    unsigned seed = 1;
    for (const auto &s : shapes) {
        const auto w = randn(s.N * s.K, seed++), x = randn(s.M * s.K, seed++), b = randn(s.N, seed++);
        std::vector<float> p(gemm::packed_floats(s.N, s.K));
        gemm::pack(w.data(), s.N, s.K, p.data());
        for (const bool with_bias : {false, true}) {
            const float *bp = with_bias ? b.data() : nullptr;
            std::vector<float> want(s.M * s.N), got(s.M * s.N, NAN);
            gemm::gemm_reference(w.data(), s.N, s.K, x.data(), s.K, s.M, bp, want.data(), s.N);
            gemm::gemm(p.data(), s.N, s.K, x.data(), s.K, s.M, bp, got.data(), s.N);
            EXPECT_TRUE(bit_equal(got, want)) << "N=" << s.N << " K=" << s.K << " M=" << s.M << " bias=" << with_bias;
        }
    }
}

}  // namespace

TEST(PackedGemm, EqualsReferenceBitForBitOnOddShapes) { expect_reference_bits_on_odd_shapes(); }

// The AVX2 + FMA kernel (an AVX2-only CPU's; RTF_T2W_PACKED=avx2 forces it on an AVX-512
// one, so every CI machine checks it): 6-token blocks and the masked last panel, bit for bit.
TEST(PackedGemm, Avx2KernelEqualsReferenceBitForBit) {
    if (!gemm::cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
    rtf::test::EnvGuard avx2("RTF_T2W_PACKED", "avx2");
    EXPECT_EQ(gemm::kernel_isa(), gemm::Isa::avx2);
    expect_reference_bits_on_odd_shapes();
}

TEST(PackedGemm, StridedRowsAndEveryThreadSplitGiveTheSameBits) {
    const int64_t N = 50, K = 37, M = 29, ldx = 41, ldy = 53;
    const auto w = randn(N * K, 11), x = randn(M * ldx, 12), b = randn(N, 13);
    std::vector<float> p(gemm::packed_floats(N, K));
    gemm::pack(w.data(), N, K, p.data());
    std::vector<float> want(M * ldy, 7.0f);
    gemm::gemm_reference(w.data(), N, K, x.data(), ldx, M, b.data(), want.data(), ldy);
    for (int nth = 1; nth <= 9; ++nth) {
        std::vector<float> got(M * ldy, 7.0f);  // the gaps between rows must stay untouched
        for (int ith = nth - 1; ith >= 0; --ith) gemm::gemm(p.data(), N, K, x.data(), ldx, M, b.data(), got.data(), ldy, ith, nth);
        EXPECT_TRUE(bit_equal(got, want)) << "nth=" << nth;
    }
}

TEST(PackedGemm, ResultOfARowDoesNotDependOnM) {
    // streamed == one-shot relies on it: the same token gives the same output in a
    // window of any length.
    const int64_t N = 40, K = 70, M = 27;
    const auto w = randn(N * K, 21), x = randn(M * K, 22);
    std::vector<float> p(gemm::packed_floats(N, K));
    gemm::pack(w.data(), N, K, p.data());
    std::vector<float> all(M * N);
    gemm::gemm(p.data(), N, K, x.data(), K, M, nullptr, all.data(), N);
    for (int64_t m0 = 0; m0 < M; m0 += 5) {
        const int64_t mm = std::min<int64_t>(7, M - m0);
        std::vector<float> part(mm * N);
        gemm::gemm(p.data(), N, K, x.data() + m0 * K, K, mm, nullptr, part.data(), N);
        EXPECT_EQ(0, std::memcmp(part.data(), all.data() + m0 * N, part.size() * sizeof(float))) << "m0=" << m0;
    }
}

TEST(PackedGemm, PackInPlaceEqualsPack) {
    const int64_t N = 48, K = 19;
    auto w = randn(N * K, 31);
    std::vector<float> p(gemm::packed_floats(N, K));
    ASSERT_EQ(static_cast<int64_t>(p.size()), N * K);
    gemm::pack(w.data(), N, K, p.data());
    gemm::pack_in_place(w.data(), N, K);
    EXPECT_TRUE(bit_equal(w, p));
}

TEST(PackedGemm, GgmlOpMatchesReferenceAndGgmlMulMat) {
    const int64_t N = 64, K = 45, M = 23;  // N % 16 == 0: packed in place, as the engine does
    const auto w = randn(N * K, 41), x = randn(M * K, 42), b = randn(N, 43);
    ggml_init_params ip{64 * 1024 * 1024, nullptr, false};
    ggml_context *ctx = ggml_init(ip);
    ggml_tensor *tw = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, N);
    ggml_tensor *tp = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, N);
    ggml_tensor *tx = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, K, M);
    ggml_tensor *tb = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, N);
    std::memcpy(tw->data, w.data(), w.size() * sizeof(float));
    std::memcpy(tp->data, w.data(), w.size() * sizeof(float));
    gemm::pack_in_place(static_cast<float *>(tp->data), N, K);
    std::memcpy(tx->data, x.data(), x.size() * sizeof(float));
    std::memcpy(tb->data, b.data(), b.size() * sizeof(float));
    ggml_tensor *yp = gemm::linear(ctx, tx, tp, tb);
    ggml_tensor *yg = ggml_add(ctx, ggml_mul_mat(ctx, tw, tx), tb);
    // A non-contiguous input (a transposed view) is made contiguous by linear().
    ggml_tensor *xt = ggml_cont(ctx, ggml_transpose(ctx, tx));  // [M, K]
    ggml_tensor *yt = gemm::linear(ctx, ggml_transpose(ctx, xt), tp, nullptr);
    ASSERT_EQ(yp->ne[0], N);
    ASSERT_EQ(yp->ne[1], M);
    for (const int nth : {1, 3}) {
        ggml_cgraph *gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, yp);
        ggml_build_forward_expand(gf, yg);
        ggml_build_forward_expand(gf, yt);
        ASSERT_EQ(ggml_graph_compute_with_ctx(ctx, gf, nth), GGML_STATUS_SUCCESS);
        std::vector<float> want(M * N), want_nb(M * N);
        gemm::gemm_reference(w.data(), N, K, x.data(), K, M, b.data(), want.data(), N);
        gemm::gemm_reference(w.data(), N, K, x.data(), K, M, nullptr, want_nb.data(), N);
        const float *got = static_cast<const float *>(yp->data);
        const float *gg = static_cast<const float *>(yg->data);
        EXPECT_EQ(0, std::memcmp(got, want.data(), want.size() * sizeof(float))) << "nth=" << nth;
        EXPECT_EQ(0, std::memcmp(yt->data, want_nb.data(), want_nb.size() * sizeof(float))) << "nth=" << nth;
        double max_err = 0.0;
        for (int64_t i = 0; i < M * N; ++i) max_err = std::max(max_err, static_cast<double>(std::fabs(got[i] - gg[i])));
        EXPECT_LT(max_err, 1e-4) << "nth=" << nth;  // |y| ~ sqrt(K) ~ 7: rounding only
    }
    ggml_free(ctx);
}

// The channel-fastest conv without im2col (gemm::conv_k_major): a [k, Cin, Cout] kernel packed
// k-major, the input's overlapping frames read in place, a batch of 2; equal bit for bit to
// the plain loop in its order (j-major, c inner) on 1 and 3 threads, within rounding of
// ops::conv1d_ct's im2col path on the unpacked kernel, and ops::conv1d_ct routes a
// registered k-major kernel to it.
TEST(PackedGemm, ConvKMajorReadsTheInputInPlace) {
    const int64_t k = 3, Cin = 37, Cout = 32, T = 29, B = 2, Tout = T - k + 1;
    const auto w = randn(k * Cin * Cout, 51), x = randn(Cin * T * B, 52), b = randn(Cout, 53);
    ggml_init_params ip{64 * 1024 * 1024, nullptr, false};
    ggml_context *ctx = ggml_init(ip);
    ggml_tensor *tw = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, Cin, Cout);
    ggml_tensor *tp = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, Cin, Cout);
    ggml_tensor *tx = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, Cin, T, B);
    ggml_tensor *tb = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, Cout);
    std::memcpy(tw->data, w.data(), w.size() * sizeof(float));
    std::memcpy(tp->data, w.data(), w.size() * sizeof(float));
    gemm::pack_conv_k_major_in_place(static_cast<float *>(tp->data), k, Cin, Cout);
    std::memcpy(tx->data, x.data(), x.size() * sizeof(float));
    std::memcpy(tb->data, b.data(), b.size() * sizeof(float));
    gemm::register_conv_k_major(tp);
    ggml_tensor *yp = gemm::conv_k_major(ctx, tx, tp, tb);
    ggml_tensor *yr = ops::conv1d_ct(ctx, tx, tp, tb);  // routed to the same op
    ggml_tensor *yg = ops::conv1d_ct(ctx, tx, tw, tb);  // im2col + ggml mul_mat
    ASSERT_EQ(yp->ne[0], Cout);
    ASSERT_EQ(yp->ne[1], Tout);
    ASSERT_EQ(yp->ne[2], B);
    std::vector<float> want(static_cast<size_t>(Cout * Tout * B));
    for (int64_t bb = 0; bb < B; ++bb)
        for (int64_t t = 0; t < Tout; ++t)
            for (int64_t n = 0; n < Cout; ++n) {
                float acc = 0.0f;
                for (int64_t j = 0; j < k; ++j)
                    for (int64_t c = 0; c < Cin; ++c) acc = std::fma(w[(n * Cin + c) * k + j], x[(bb * T + t + j) * Cin + c], acc);
                want[(bb * Tout + t) * Cout + n] = acc + b[n];
            }
    for (const int nth : {1, 3}) {
        ggml_cgraph *gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, yp);
        ggml_build_forward_expand(gf, yr);
        ggml_build_forward_expand(gf, yg);
        ASSERT_EQ(ggml_graph_compute_with_ctx(ctx, gf, nth), GGML_STATUS_SUCCESS);
        EXPECT_EQ(0, std::memcmp(yp->data, want.data(), want.size() * sizeof(float))) << "nth=" << nth;
        EXPECT_EQ(0, std::memcmp(yr->data, want.data(), want.size() * sizeof(float))) << "nth=" << nth;
        double max_err = 0.0;
        for (size_t i = 0; i < want.size(); ++i)
            max_err = std::max(max_err, static_cast<double>(std::fabs(static_cast<const float *>(yg->data)[i] - want[i])));
        EXPECT_LT(max_err, 1e-4) << "nth=" << nth;
    }
    gemm::unregister_conv_k_major(tp);
    EXPECT_FALSE(gemm::is_conv_k_major(tp));
    ggml_free(ctx);
}

TEST(PackedGemm, EnabledWithAvx512fOrAvx2Fma) {
    // The CPU's own answer (cpuid through the compiler), independent of the code under test:
    // a detection bug would otherwise turn the packed path off (or on) unnoticed.
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    // ... capped by the run's kernel level (RTF_ISA: scripts/test.sh runs this once per level)
    const bool avx512 = __builtin_cpu_supports("avx512f") && rtf::test::isa_env_allows("avx512");
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && rtf::test::isa_env_allows("avx2");
#else
    const bool avx512 = false, avx2 = false;
#endif
    EXPECT_EQ(gemm::cpu_has_avx512f(), avx512);
    EXPECT_EQ(gemm::cpu_has_avx2_fma(), avx2);
    const char *old = std::getenv("RTF_T2W_PACKED");
    const std::string saved = old ? old : "";
    ::unsetenv("RTF_T2W_PACKED");
    EXPECT_EQ(gemm::kernel_isa(), avx512 ? gemm::Isa::avx512 : avx2 ? gemm::Isa::avx2 : gemm::Isa::portable);
    EXPECT_EQ(gemm::packed_enabled(), avx512 || avx2);
    ::setenv("RTF_T2W_PACKED", "avx2", 1);  // the AVX2 kernel where the CPU has it, else as unset
    EXPECT_EQ(gemm::kernel_isa(), avx2 ? gemm::Isa::avx2 : avx512 ? gemm::Isa::avx512 : gemm::Isa::portable);
    EXPECT_EQ(gemm::packed_enabled(), avx512 || avx2);
    ::setenv("RTF_T2W_PACKED", "0", 1);
    EXPECT_FALSE(gemm::packed_enabled());
    if (old) ::setenv("RTF_T2W_PACKED", saved.c_str(), 1);
    else ::unsetenv("RTF_T2W_PACKED");
    EXPECT_STREQ(gemm::isa_name(gemm::Isa::avx2), "avx2");
    if (!avx512 && !avx2) GTEST_SKIP() << "neither AVX-512F nor AVX2 + FMA on this CPU: only the 'off' side was checked";
}
