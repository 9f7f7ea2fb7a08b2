// The audio encoder's parts against plain loops (apm-reference.h) on tiny shapes: mel filter
// bank, FFT, log-mel, the four graph blocks (conv front, positions, one encoder block over a
// streaming cache of two chunks, projector + pooling), 100-ms padding, frame splitting.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include <ggml-cpu.h>
#include <ggml.h>

#include "apm-reference.h"
#include "core/error.h"
#include "core/mel-filters.h"
#include "models/apm/apm-blocks.h"
#include "models/apm/audio-input.h"
#include "models/apm/log-mel.h"

using namespace rtf;
using namespace rtf::apm;

namespace {

std::vector<float> randv(std::mt19937 &g, size_t n, float sd, float mean = 0.0f) {
    std::normal_distribution<float> nd(mean, sd);
    std::vector<float> v(n);
    for (auto &x : v) x = nd(g);
    return v;
}

// A ggml context with data (CPU), and F32 tensors filled from vectors.
struct Ctx {
    ggml_context *ctx;
    Ctx() {
        ggml_init_params p{64u << 20, nullptr, false};
        ctx = ggml_init(p);
    }
    ~Ctx() { ggml_free(ctx); }
    ggml_tensor *t(const std::vector<float> &v, std::initializer_list<int64_t> ne) {
        std::vector<int64_t> n(ne);
        ggml_tensor *x = ggml_new_tensor(ctx, GGML_TYPE_F32, static_cast<int>(n.size()), n.data());
        EXPECT_EQ(static_cast<size_t>(ggml_nelements(x)), v.size());
        std::memcpy(x->data, v.data(), v.size() * sizeof(float));
        return x;
    }
    std::vector<float> run(ggml_cgraph *gf, ggml_tensor *y) {
        ggml_build_forward_expand(gf, y);
        EXPECT_EQ(ggml_graph_compute_with_ctx(ctx, gf, 2), GGML_STATUS_SUCCESS);
        std::vector<float> out(static_cast<size_t>(ggml_nelements(y)));
        std::memcpy(out.data(), y->data, out.size() * sizeof(float));
        return out;
    }
};

}  // namespace

TEST(ApmMelFilters, MatchLibrosaSlaneyValues) {
    // Values of librosa.filters.mel(sr=16000, n_fft=400, n_mels=80) as re-derived with numpy
    // from librosa's formulas (Slaney scale and norm, float32 storage).
    const auto w = mel_filters_slaney(16000, 400, 80);
    ASSERT_EQ(w.size(), 80u * 201u);
    EXPECT_NEAR(w[0 * 201 + 1], 0.02486259490251541, 1e-8);
    EXPECT_NEAR(w[79 * 201 + 199], 0.0004487590049393475, 1e-9);
    EXPECT_NEAR(*std::max_element(w.begin() + 40 * 201, w.begin() + 41 * 201), 0.014735566452145576, 1e-8);
    double sum = 0.0;
    int nonzero = 0;
    for (float v : w) {
        sum += v;
        nonzero += v > 0.0f;
    }
    EXPECT_NEAR(sum, 1.999024092387117, 1e-5);
    EXPECT_EQ(nonzero, 391);
    EXPECT_THROW(mel_filters_slaney(0, 400, 80), Error);
}

TEST(ApmLogMel, FftEqualsDirectDft) {
    std::mt19937 g(1);
    const auto x = randv(g, 400, 1.0f);
    std::vector<float> c(400), s(400), out(800);
    for (int i = 0; i < 400; ++i) {
        c[static_cast<size_t>(i)] = static_cast<float>(std::cos(2 * M_PI * i / 400));
        s[static_cast<size_t>(i)] = static_cast<float>(std::sin(2 * M_PI * i / 400));
    }
    fft400(x.data(), out.data(), c, s);
    for (int k : {0, 1, 7, 100, 199, 200, 333}) {
        double re = 0, im = 0;
        for (int n = 0; n < 400; ++n) {
            re += x[static_cast<size_t>(n)] * std::cos(2 * M_PI * k * n / 400);
            im -= x[static_cast<size_t>(n)] * std::sin(2 * M_PI * k * n / 400);
        }
        EXPECT_NEAR(out[2 * static_cast<size_t>(k)], re, 1e-3) << k;
        EXPECT_NEAR(out[2 * static_cast<size_t>(k) + 1], im, 1e-3) << k;
    }
}

TEST(ApmLogMel, EqualsPlainLoopRecipe) {
    std::mt19937 g(2);
    // A tone plus noise, 0.1 s (10 frames) and 0.25 s (25 frames: not a multiple of 100 ms).
    for (size_t n : {1600u, 4000u}) {
        std::vector<float> x(n);
        std::normal_distribution<float> nd(0.0f, 0.05f);
        for (size_t i = 0; i < n; ++i) x[i] = 0.3f * static_cast<float>(std::sin(2 * M_PI * 440.0 * i / 16000.0)) + nd(g);
        const auto filters = mel_filters_slaney(16000, 400, 80);
        const LogMel lm(filters, 80);
        const Mel m = lm.compute(x.data(), x.size());
        EXPECT_EQ(m.n_frames, static_cast<int64_t>(n / 160));
        const auto want = ref::log_mel(x, filters, 80);
        ASSERT_EQ(m.data.size(), want.size());
        double mx = 0;
        for (size_t i = 0; i < want.size(); ++i) mx = std::max(mx, std::fabs(static_cast<double>(m.data[i]) - want[i]));
        EXPECT_LT(mx, 2e-4) << n;  // log10 units / 4: float FFT vs a double DFT
    }
    EXPECT_THROW(LogMel({1.0f, 2.0f}, 80), Error);
    const LogMel lm(mel_filters_slaney(16000, 400, 80), 80);
    std::vector<float> tiny(150, 0.1f);
    EXPECT_THROW(lm.compute(tiny.data(), tiny.size()), Error);
}

TEST(ApmLogMel, PadTo100msAndSplitFrames) {
    EXPECT_EQ(pad_to_100ms(std::vector<float>(10, 1.0f)).size(), 1600u);
    EXPECT_EQ(pad_to_100ms(std::vector<float>(1600, 1.0f)).size(), 1600u);
    const auto p = pad_to_100ms(std::vector<float>(1601, 1.0f));
    EXPECT_EQ(p.size(), 3200u);
    EXPECT_EQ(p[1600], 1.0f);
    EXPECT_EQ(p[1601], 0.0f);
    const auto f = split_frames(std::vector<float>(40000, 0.5f), 16000);
    ASSERT_EQ(f.size(), 3u);
    EXPECT_EQ(f[0].size(), 16000u);
    EXPECT_EQ(f[2].size(), 8000u);
    EXPECT_THROW(split_frames({1.0f}, 0), Error);
}

TEST(ApmBlocks, ConvFrontAndPositionsEqualPlainLoops) {
    std::mt19937 g(3);
    const int64_t n_mel = 6, d = 8, T_mel = 21, n_ctx = 40, off = 7;
    const auto mel = randv(g, static_cast<size_t>(n_mel * T_mel), 1.0f);
    const auto w1 = randv(g, static_cast<size_t>(3 * n_mel * d), 0.3f), b1 = randv(g, static_cast<size_t>(d), 0.1f);
    const auto w2 = randv(g, static_cast<size_t>(3 * d * d), 0.3f), b2 = randv(g, static_cast<size_t>(d), 0.1f);
    const auto pos = randv(g, static_cast<size_t>(d * n_ctx), 0.5f);
    Ctx c;
    ApmWeights w;
    w.conv1_w = c.t(w1, {3, n_mel, d});
    w.conv1_b = c.t(b1, {1, d});
    w.conv2_w = c.t(w2, {3, d, d});
    w.conv2_b = c.t(b2, {1, d});
    w.pos = c.t(pos, {d, n_ctx});
    ggml_tensor *in = c.t(mel, {T_mel, n_mel});
    ggml_cgraph *gf = ggml_new_graph(c.ctx);
    ggml_tensor *y = add_positions(c.ctx, conv_front(c.ctx, in, w), w.pos, off);
    const auto got = c.run(gf, y);
    int64_t T = 0;
    auto want = ref::conv_front(mel, n_mel, T_mel, w1, b1, w2, b2, d, &T);
    EXPECT_EQ(T, 11);
    EXPECT_EQ(y->ne[0], d);
    EXPECT_EQ(y->ne[1], T);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < d; ++i) want[static_cast<size_t>(t * d + i)] += pos[static_cast<size_t>((off + t) * d + i)];
    EXPECT_LT(ref::rel_err(got, want), 5e-3);  // ggml's im2col holds the conv input in F16
}

TEST(ApmBlocks, EncoderLayerOverTwoStreamedChunksEqualsPlainLoop) {
    std::mt19937 g(4);
    const int64_t d = 8, n_head = 2, n_ff = 16, n_ctx = 12, T = 4;
    Ctx c;
    ref::Layer rl;
    rl.n_ff = n_ff;
    ApmLayer l;
    auto mk = [&](std::vector<float> &dst, std::initializer_list<int64_t> ne, float sd, float mean = 0.0f) {
        size_t n = 1;
        for (auto e : ne) n *= static_cast<size_t>(e);
        dst = randv(g, n, sd, mean);
        return c.t(dst, ne);
    };
    l.attn_ln_w = mk(rl.ln1_w, {d}, 0.1f, 1.0f);
    l.attn_ln_b = mk(rl.ln1_b, {d}, 0.1f);
    l.q_w = mk(rl.q_w, {d, d}, 0.4f);
    l.q_b = mk(rl.q_b, {d}, 0.1f);
    l.k_w = mk(rl.k_w, {d, d}, 0.4f);
    l.v_w = mk(rl.v_w, {d, d}, 0.4f);
    l.v_b = mk(rl.v_b, {d}, 0.1f);
    l.o_w = mk(rl.o_w, {d, d}, 0.4f);
    l.o_b = mk(rl.o_b, {d}, 0.1f);
    l.mlp_ln_w = mk(rl.ln2_w, {d}, 0.1f, 1.0f);
    l.mlp_ln_b = mk(rl.ln2_b, {d}, 0.1f);
    l.fc1_w = mk(rl.fc1_w, {d, n_ff}, 0.4f);
    l.fc1_b = mk(rl.fc1_b, {n_ff}, 0.1f);
    l.fc2_w = mk(rl.fc2_w, {n_ff, d}, 0.3f);
    l.fc2_b = mk(rl.fc2_b, {d}, 0.1f);
    LayerCache cache;
    cache.k = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, d, n_ctx);
    cache.v = ggml_new_tensor_2d(c.ctx, GGML_TYPE_F32, n_ctx, d);
    std::vector<float> kc, vc;
    // Chunk 1 at n_past 0, chunk 2 at n_past 4: the second attends to 8 cached tokens.
    for (int64_t chunk = 0; chunk < 2; ++chunk) {
        const auto x = randv(g, static_cast<size_t>(d * T), 1.0f);
        ggml_tensor *xin = c.t(x, {d, T});
        ggml_cgraph *gf = ggml_new_graph(c.ctx);
        ggml_tensor *y = encoder_layer(c.ctx, gf, xin, l, cache, chunk * T, n_head, 1e-5f);
        const auto got = c.run(gf, y);
        const auto want = ref::encoder_layer(x, T, d, n_head, rl, kc, vc, 1e-5f);
        EXPECT_LT(ref::rel_err(got, want), 2e-3) << "chunk " << chunk;  // ggml's GELU is a table/approximation
    }
    // The cache holds both chunks' K rows in order.
    const auto *k = static_cast<const float *>(cache.k->data);
    for (size_t i = 0; i < kc.size(); ++i) EXPECT_NEAR(k[i], kc[i], 1e-4) << i;
}

TEST(ApmBlocks, ProjectPoolEqualsPlainLoop) {
    std::mt19937 g(5);
    const int64_t d = 8, n_proj = 12, n_out = 6, T = 13;  // 13 tokens -> 2 rows (3 dropped)
    Ctx c;
    std::vector<float> lw = randv(g, static_cast<size_t>(d), 0.1f, 1.0f), lb = randv(g, static_cast<size_t>(d), 0.1f);
    std::vector<float> w1 = randv(g, static_cast<size_t>(d * n_proj), 0.4f), b1 = randv(g, static_cast<size_t>(n_proj), 0.1f);
    std::vector<float> w2 = randv(g, static_cast<size_t>(n_proj * n_out), 0.4f), b2 = randv(g, static_cast<size_t>(n_out), 0.1f);
    ApmWeights w;
    w.ln_post_w = c.t(lw, {d});
    w.ln_post_b = c.t(lb, {d});
    w.proj1_w = c.t(w1, {d, n_proj});
    w.proj1_b = c.t(b1, {n_proj});
    w.proj2_w = c.t(w2, {n_proj, n_out});
    w.proj2_b = c.t(b2, {n_out});
    const auto x = randv(g, static_cast<size_t>(d * T), 1.0f);
    ggml_cgraph *gf = ggml_new_graph(c.ctx);
    ggml_tensor *y = project_pool(c.ctx, c.t(x, {d, T}), w, 1e-5f);
    const auto got = c.run(gf, y);
    int64_t n = 0;
    const auto want = ref::project_pool(x, T, d, lw, lb, w1, b1, n_proj, w2, b2, n_out, &n);
    EXPECT_EQ(n, 2);
    EXPECT_EQ(y->ne[0], n_out);
    EXPECT_EQ(y->ne[1], 2);
    EXPECT_LT(ref::rel_err(got, want), 1e-4);
}
