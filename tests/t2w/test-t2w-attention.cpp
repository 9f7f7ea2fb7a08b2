// Unit tests of the fused DiT attention (src/models/t2w/dit-attention.h, label `unit`): the
// op in a ggml graph against its contract attention_reference() bit for bit — at the
// engine's shape (dh 64, 8 heads, 56 frames, a 302-frame cache, both CFG branches) and at
// shapes that leave remainders in every block (frames not a multiple of 6 or 16, more than
// 64 frames, a tiny cache, dh 8 = the portable path) — on 1 and 3 threads; the cache read
// through strided views, as the engine's view into the prompt cache; the whole against a
// double-precision softmax attention; and exp_neg() against libm. The AVX2 kernels are
// checked on any CPU with AVX2 (RTF_T2W_PACKED=avx2); on a CPU with neither the op runs the
// reference itself and the same tests hold.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <ggml-cpu.h>
#include <ggml.h>

#include "common/env-guard.h"
#include "common/randn.h"
#include "models/t2w/dit-attention.h"
#include "models/t2w/packed-gemm.h"

using namespace rtf::t2w;

namespace {

using rtf::test::randn;

struct Shape {
    int64_t dh, H, T, L, B;
};

// q, k, v [dh, H, T, B]; the cache lives in slot `slot` of a buffer of 3 slots per head, rows
// of 2·dh (+ 4 spare floats of row padding: the view's strides are not the dense ones).
struct Case {
    Shape s;
    std::vector<float> q, k, v, kvbuf;
    int64_t nb1, nb2, nb3, off;  // in floats
    explicit Case(Shape sh, unsigned seed) : s(sh) {
        const int64_t n = sh.dh * sh.H * sh.T * sh.B;
        q = randn(n, seed);
        k = randn(n, seed + 1);
        v = randn(n, seed + 2);
        nb1 = 2 * sh.dh + 4;
        nb2 = nb1 * sh.L;
        const int64_t slots = 3;
        nb3 = nb2 * sh.H * slots;
        off = nb2 * sh.H;  // slot 1
        kvbuf = randn(nb3 * sh.B, seed + 3);
    }
    std::vector<float> reference() const {
        std::vector<float> out(q.size());
        attn::attention_reference(q.data(), k.data(), v.data(), s.dh, s.H, s.T, s.B, kvbuf.data() + off, s.L, nb1, nb2, nb3,
                                  out.data());
        return out;
    }
    // Σ softmax(q·k/√dh)·v in double, keys [current ; cached]
    std::vector<double> exact() const {
        std::vector<double> out(q.size());
        const int64_t NK = s.T + s.L;
        std::vector<double> e(NK);
        for (int64_t b = 0; b < s.B; ++b)
            for (int64_t h = 0; h < s.H; ++h)
                for (int64_t t = 0; t < s.T; ++t) {
                    const float *qt = q.data() + ((b * s.T + t) * s.H + h) * s.dh;
                    auto key = [&](int64_t j) {
                        return j < s.T ? k.data() + ((b * s.T + j) * s.H + h) * s.dh
                                       : kvbuf.data() + off + b * nb3 + h * nb2 + (j - s.T) * nb1;
                    };
                    auto val = [&](int64_t j) {
                        return j < s.T ? v.data() + ((b * s.T + j) * s.H + h) * s.dh
                                       : kvbuf.data() + off + b * nb3 + h * nb2 + (j - s.T) * nb1 + s.dh;
                    };
                    double mx = -1e300, sum = 0;
                    for (int64_t j = 0; j < NK; ++j) {
                        double acc = 0;
                        for (int64_t d = 0; d < s.dh; ++d) acc += static_cast<double>(qt[d]) * key(j)[d];
                        e[j] = acc / std::sqrt(static_cast<double>(s.dh));
                        mx = std::max(mx, e[j]);
                    }
                    for (int64_t j = 0; j < NK; ++j) sum += (e[j] = std::exp(e[j] - mx));
                    for (int64_t d = 0; d < s.dh; ++d) {
                        double acc = 0;
                        for (int64_t j = 0; j < NK; ++j) acc += e[j] * val(j)[d];
                        out[((b * s.T + t) * s.H + h) * s.dh + d] = acc / sum;
                    }
                }
        return out;
    }
    // The op in a graph on nth threads (the cache as a strided 4-D view of the buffer).
    std::vector<float> run(int nth) const {
        const size_t bytes = (q.size() * 3 + kvbuf.size()) * sizeof(float) * 2 + 16 * 1024 * 1024;
        ggml_init_params ip{bytes, nullptr, false};
        ggml_context *ctx = ggml_init(ip);
        auto put = [&](const std::vector<float> &src, std::vector<int64_t> ne) {
            ggml_tensor *t = ggml_new_tensor(ctx, GGML_TYPE_F32, static_cast<int>(ne.size()), ne.data());
            std::memcpy(t->data, src.data(), src.size() * sizeof(float));
            return t;
        };
        ggml_tensor *tq = put(q, {s.dh, s.H, s.T, s.B}), *tk = put(k, {s.dh, s.H, s.T, s.B}), *tv = put(v, {s.dh, s.H, s.T, s.B});
        ggml_tensor *buf = put(kvbuf, {static_cast<int64_t>(kvbuf.size())});
        ggml_tensor *kv = ggml_view_4d(ctx, buf, 2 * s.dh, s.L, s.H, s.B, nb1 * sizeof(float), nb2 * sizeof(float),
                                       nb3 * sizeof(float), off * sizeof(float));
        ggml_tensor *o = attn::dit_attention(ctx, tq, tk, tv, kv);
        EXPECT_EQ(o->ne[0], s.dh * s.H);
        EXPECT_EQ(o->ne[1], s.T);
        EXPECT_EQ(o->ne[2], s.B);
        ggml_cgraph *gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, o);
        EXPECT_EQ(ggml_graph_compute_with_ctx(ctx, gf, nth), GGML_STATUS_SUCCESS);
        std::vector<float> out(static_cast<const float *>(o->data), static_cast<const float *>(o->data) + q.size());
        ggml_free(ctx);
        return out;
    }
};

bool bit_equal(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST(DitAttention, ExpNegIsWithinAFewUlpOfLibm) {
    double worst = 0;
    for (int i = 0; i <= 200000; ++i) {
        const float x = -87.0f * static_cast<float>(i) / 200000.0f;
        const double want = std::exp(static_cast<double>(x));
        worst = std::max(worst, std::abs(attn::exp_neg(x) - want) / want);
    }
    EXPECT_LT(worst, 4e-7);
    EXPECT_EQ(attn::exp_neg(0.0f), 1.0f);
    EXPECT_GE(attn::exp_neg(-1000.0f), 0.0f);  // clamped, not a garbage exponent
    EXPECT_LT(attn::exp_neg(-1000.0f), 2e-38f);
}

TEST(DitAttention, OpEqualsItsReferenceBitForBitOnEveryShapeAndSplit) {
    const Shape shapes[] = {{64, 8, 56, 302, 2},  // the engine's window, both CFG branches
                            {64, 2, 17, 5, 1},    // remainders: 17 = 2·6 + 5 frames, one 16-panel + 1
                            {64, 1, 70, 3, 1},    // more than 64 frames: a second group of panels
                            {64, 3, 1, 1, 2},     // one frame, one cached key
                            {8, 2, 6, 5, 1}};     // dh 8: the portable path
    unsigned seed = 11;
    for (const Shape &s : shapes) {
        SCOPED_TRACE("dh " + std::to_string(s.dh) + " H " + std::to_string(s.H) + " T " + std::to_string(s.T) + " L " +
                     std::to_string(s.L) + " B " + std::to_string(s.B));
        const Case c(s, seed += 7);
        const auto ref = c.reference();
        for (const int nth : {1, 3}) {
            EXPECT_TRUE(bit_equal(c.run(nth), ref)) << nth << " threads";
        }
    }
}

// The AVX2 kernels (an AVX2-only CPU's; RTF_T2W_PACKED=avx2 forces them on an AVX-512 one):
// 6-key score blocks, 8-query softmax, 6-frame x 16-dim output blocks (and their 1-5 frame tails); the same bits.
TEST(DitAttention, Avx2KernelsEqualTheReferenceBitForBit) {
    if (!gemm::cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 + FMA on this CPU";
    rtf::test::EnvGuard avx2("RTF_T2W_PACKED", "avx2");
    EXPECT_TRUE(attn::fused_enabled());
    const Shape shapes[] = {{64, 8, 56, 302, 2}, {64, 2, 17, 5, 1}, {64, 1, 70, 3, 1}, {64, 3, 1, 1, 2}, {64, 1, 2, 7, 1},
                            {64, 1, 9, 4, 1}};  // frame tails 2, 5, 4, 1, 2, 3
    unsigned seed = 101;
    for (const Shape &s : shapes) {
        SCOPED_TRACE("H " + std::to_string(s.H) + " T " + std::to_string(s.T) + " L " + std::to_string(s.L));
        const Case c(s, seed += 7);
        const auto ref = c.reference();
        for (const int nth : {1, 3}) EXPECT_TRUE(bit_equal(c.run(nth), ref)) << nth << " threads";
    }
}

TEST(DitAttention, ReferenceIsSoftmaxAttentionWithinFloatRounding) {
    for (const Shape s : {Shape{64, 8, 56, 302, 2}, Shape{8, 2, 6, 5, 1}}) {
        const Case c(s, 5);
        const auto got = c.reference();
        const auto want = c.exact();
        double worst = 0, scale = 0;
        for (size_t i = 0; i < got.size(); ++i) {
            worst = std::max(worst, std::abs(got[i] - want[i]));
            scale = std::max(scale, std::abs(want[i]));
        }
        EXPECT_LT(worst / scale, 2e-6) << "dh " << s.dh;
        // and it is not vacuous: a cache that is read changes the answer
        Case other = c;
        other.kvbuf[other.off + other.nb1 + 3] += 4.0f;  // a cached key of head 0, branch 0
        const auto moved = other.reference();
        EXPECT_FALSE(bit_equal(moved, got));
    }
}
