// Unit tests of the Token2Wav engine on tiny random weights (label `unit`): graph ops
// against plain loops, the host DSP kernels, and the streaming contract on a tiny kit.
#include <gtest/gtest.h>

#include <array>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

#include <ggml-alloc.h>
#include <ggml-backend.h>

#include "core/error.h"
#include "models/t2w/voice.h"
#include "models/t2w/t2w-dsp.h"
#include "models/t2w/packed-gemm.h"
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-ops.h"
#include "models/t2w/t2w-stream.h"
#include "models/t2w/token2mel.h"
#include "common/scratch-dir.h"
#include "quality/audio-checks.h"
#include "quality/equivalence.h"
#include "tiny-kit.h"

namespace fs = std::filesystem;
using namespace rtf::t2w;

namespace {

std::vector<float> randv(size_t n, unsigned seed, float s = 1.0f) {
    std::mt19937 r(seed);
    std::normal_distribution<float> d(0, s);
    std::vector<float> v(n);
    for (auto &x : v) x = d(r);
    return v;
}

// Runs a one-op graph on the CPU backend: inputs are filled from `data`, returns output.
struct MiniGraph {
    ggml_context *ctx;
    std::vector<std::pair<ggml_tensor *, std::vector<float>>> ins;
    MiniGraph() {
        ggml_init_params p{64 * 1024 * 1024, nullptr, true};
        ctx = ggml_init(p);
    }
    ~MiniGraph() { ggml_free(ctx); }
    ggml_tensor *in(std::vector<int64_t> ne, std::vector<float> data) {
        ggml_tensor *t = ggml_new_tensor(ctx, GGML_TYPE_F32, static_cast<int>(ne.size()), ne.data());
        ggml_set_input(t);
        ins.push_back({t, std::move(data)});
        return t;
    }
    std::vector<float> run(ggml_tensor *out) {
        ggml_backend_t be = ggml_backend_dev_init(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU), nullptr);
        ggml_cgraph *gf = ggml_new_graph(ctx);
        ggml_build_forward_expand(gf, out);
        ggml_gallocr_t a = ggml_gallocr_new(ggml_backend_get_default_buffer_type(be));
        EXPECT_TRUE(ggml_gallocr_alloc_graph(a, gf));
        for (auto &[t, d] : ins) ggml_backend_tensor_set(t, d.data(), 0, d.size() * sizeof(float));
        ggml_backend_graph_compute(be, gf);
        std::vector<float> r(static_cast<size_t>(ggml_nelements(out)));
        ggml_backend_tensor_get(out, r.data(), 0, r.size() * sizeof(float));
        ggml_gallocr_free(a);
        ggml_backend_free(be);
        return r;
    }
};

void expect_close(const std::vector<float> &a, const std::vector<float> &b, float tol) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << "at " << i;
}

}  // namespace

// conv over a channel-fastest input, valid padding, dilation 2, batch 2
TEST(T2wOps, Conv1dChannelFastest) {
    const int K = 3, Cin = 5, Cout = 4, T = 11, B = 2, dil = 2;
    auto w = randv(K * Cin * Cout, 1), b = randv(Cout, 2), x = randv(Cin * T * B, 3);
    MiniGraph g;
    auto *y = ops::conv1d_ct(g.ctx, g.in({Cin, T, B}, x), g.in({K, Cin, Cout}, w), g.in({Cout}, b), dil);
    auto got = g.run(y);
    const int To = T - (K - 1) * dil;
    std::vector<float> ref(static_cast<size_t>(Cout * To * B));
    for (int bb = 0; bb < B; ++bb)
        for (int t = 0; t < To; ++t)
            for (int co = 0; co < Cout; ++co) {
                double s = b[co];
                for (int ci = 0; ci < Cin; ++ci)
                    for (int k = 0; k < K; ++k) s += w[(co * Cin + ci) * K + k] * x[(bb * T + t + k * dil) * Cin + ci];
                ref[(bb * To + t) * Cout + co] = static_cast<float>(s);
            }
    expect_close(got, ref, 1e-4f);
}

// conv over a time-fastest input with zero padding, stride and dilation
TEST(T2wOps, Conv1dTimeFastest) {
    for (auto [K, stride, pad, dil] : std::vector<std::array<int, 4>>{{7, 1, 3, 1}, {3, 1, 3, 3}, {30, 15, 7, 1}, {6, 3, 1, 1}}) {
        const int Cin = 3, Cout = 4, T = 61;
        auto w = randv(K * Cin * Cout, 4), b = randv(Cout, 5), x = randv(T * Cin, 6);
        MiniGraph g;
        auto got = g.run(ops::conv1d_tc(g.ctx, g.in({T, Cin}, x), g.in({K, Cin, Cout}, w), g.in({Cout}, b), stride, pad, dil));
        const int To = (T + 2 * pad - dil * (K - 1) - 1) / stride + 1;
        std::vector<float> ref(static_cast<size_t>(To * Cout));
        for (int co = 0; co < Cout; ++co)
            for (int t = 0; t < To; ++t) {
                double s = b[co];
                for (int ci = 0; ci < Cin; ++ci)
                    for (int k = 0; k < K; ++k) {
                        const int ti = t * stride - pad + k * dil;
                        if (ti >= 0 && ti < T) s += w[(co * Cin + ci) * K + k] * x[ci * T + ti];
                    }
                ref[co * To + t] = static_cast<float>(s);
            }
        expect_close(got, ref, 1e-4f);
    }
}

// Plain-loop transposed conv (stride s, `pad` removed at both ends) of a [T, Cin] input.
std::vector<float> ref_transposed_conv(const std::vector<float> &w, const std::vector<float> &b, const std::vector<float> &x, int K,
                                       int stride, int pad, int Cin, int Cout, int T) {
    const int Tf = (T - 1) * stride + K, To = Tf - 2 * pad;
    std::vector<double> full(static_cast<size_t>(Tf * Cout), 0.0);
    for (int ci = 0; ci < Cin; ++ci)
        for (int co = 0; co < Cout; ++co)
            for (int t = 0; t < T; ++t)
                for (int k = 0; k < K; ++k) full[co * Tf + t * stride + k] += w[(ci * Cout + co) * K + k] * x[ci * T + t];
    std::vector<float> ref(static_cast<size_t>(To * Cout));
    for (int co = 0; co < Cout; ++co)
        for (int t = 0; t < To; ++t) ref[co * To + t] = static_cast<float>(full[co * Tf + t + pad] + b[co]);
    return ref;
}

TEST(T2wOps, TransposedConv) {
    const int K = 11, stride = 5, pad = 3, Cin = 4, Cout = 3, T = 9;
    auto w = randv(K * Cout * Cin, 7), b = randv(Cout, 8), x = randv(T * Cin, 9);
    MiniGraph g;
    auto got = g.run(ops::conv_transpose1d_tc(g.ctx, g.in({T, Cin}, x), g.in({K, Cout, Cin}, w), g.in({Cout}, b), stride, pad));
    ASSERT_EQ(got.size(), static_cast<size_t>(T * stride * Cout));
    expect_close(got, ref_transposed_conv(w, b, x, K, stride, pad, Cin, Cout, T), 1e-4f);
}

// The GEMM + overlap-add formulation on a packed kernel, for the HiFT shapes (K, s, pad) =
// (16, 8, 4), (11, 5, 3), (7, 3, 2): K a multiple of s, and not.
TEST(T2wOps, TransposedConvPacked) {
    for (auto [K, stride, pad] : std::vector<std::array<int, 3>>{{16, 8, 4}, {11, 5, 3}, {7, 3, 2}}) {
        const int Cin = 32, Cout = 5, T = 13;
        auto w = randv(K * Cout * Cin, 17), b = randv(Cout, 18), x = randv(T * Cin, 19);
        const auto wp = ops::pack_transposed_kernel(w, K, Cout, Cin, stride);
        MiniGraph g;
        auto got = g.run(ops::conv_transpose1d_tc_packed(g.ctx, g.in({T, Cin}, x), g.in({Cin, static_cast<int64_t>(wp.size()) / Cin}, wp),
                                                         K, Cout, stride, pad, g.in({Cout}, b)));
        ASSERT_EQ(got.size(), static_cast<size_t>(((T - 1) * stride + K - 2 * pad) * Cout)) << "K=" << K;
        expect_close(got, ref_transposed_conv(w, b, x, K, stride, pad, Cin, Cout, T), 1e-4f);
    }
}

// Snake as one custom op: bit-identical to the op chain, and to the formula.
TEST(T2wOps, SnakeFusedMatchesChain) {
    const int T = 37, C = 6;
    auto x = randv(T * C, 20, 2.0f), a = randv(C, 21);
    for (auto &v : a) v = std::fabs(v) + 0.05f;
    MiniGraph g1, g2;
    auto chain = g1.run(ops::snake(g1.ctx, g1.in({T, C}, x), g1.in({C}, a)));
    auto fused = g2.run(ops::snake_fused(g2.ctx, g2.in({T, C}, x), g2.in({C}, a)));
    ASSERT_EQ(chain.size(), fused.size());
    for (int c = 0; c < C; ++c)
        for (int t = 0; t < T; ++t) {
            const size_t i = static_cast<size_t>(c * T + t);
            // the fused sine differs from libm's by at most ~1.3e-7 (t2w-ops.cpp); sin² then
            // scaled by 1/α: a few 1e-7 relative to 1/α
            const double tol = 4e-7 / (a[c] + 1e-9) + 1e-6 * std::fabs(chain[i]);
            ASSERT_NEAR(fused[i], chain[i], tol) << c << "," << t;
            const double xv = x[c * T + t], s = std::sin(a[c] * xv);
            ASSERT_NEAR(fused[i], xv + s * s / (a[c] + 1e-9), 1e-4) << c << "," << t;
        }
}

// The vectorised sine over a wide range, large arguments (libm fallback) and NaN.
TEST(T2wOps, SnakeFusedSineAccuracy) {
    const int T = 4096;
    std::vector<float> x(T);
    std::mt19937 r(7);
    std::uniform_real_distribution<float> u(-300.0f, 300.0f);
    for (auto &v : x) v = u(r);
    x[0] = 3.0e6f;    // beyond the reduction's range: libm path
    x[1] = -7.5e5f;
    x[2] = 0.0f;
    std::vector<float> a = {1.0f};
    MiniGraph g;
    auto y = g.run(ops::snake_fused(g.ctx, g.in({T, 1}, x), g.in({1}, a)));
    for (int t = 0; t < T; ++t) {
        // the same float operations with libm's sine: only the sine differs (by <= ~1.3e-7,
        // so sin² by <= ~2.6e-7), plus one rounding of the sum
        const float s = std::sin(x[t]);
        const float ref = x[t] + (s * s) / (1.0f + 1e-9f);
        const double tol = std::fabs(x[t]) > 1e5f ? 0.0 : 3e-7 + 2.0 * std::nextafter(std::fabs(ref), INFINITY) - 2.0 * std::fabs(ref);
        ASSERT_NEAR(y[t], ref, tol) << "x = " << x[t];
    }
    std::vector<float> n = {std::nanf("")};
    MiniGraph g3;
    auto yn = g3.run(ops::snake_fused(g3.ctx, g3.in({1, 1}, n), g3.in({1}, a)));
    EXPECT_TRUE(std::isnan(yn[0]));
}

TEST(T2wDsp, IstftInvertsStft) {
    const int n = 480 * 3;
    auto x = randv(n, 10, 0.2f);
    auto spec = dsp::stft16(x);
    const int64_t F = n / 4 + 1;
    ASSERT_EQ(spec.size(), static_cast<size_t>(F * 18));
    auto y = dsp::istft16(spec.data(), spec.data() + 9 * F, F, 10.0f);
    ASSERT_EQ(y.size(), static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) ASSERT_NEAR(y[i], x[i], 1e-5f) << i;
    // clamp
    std::vector<float> big(n, 2.0f);
    auto sb = dsp::stft16(big);
    auto yb = dsp::istft16(sb.data(), sb.data() + 9 * F, F, 0.99f);
    for (float v : yb) ASSERT_LE(std::fabs(v), 0.99f);
}

TEST(T2wDsp, RelPosTableAndHamming) {
    const int d = 8, S = 5;
    auto pe = dsp::rel_pos_table(d, S);
    ASSERT_EQ(pe.size(), static_cast<size_t>((2 * S - 1) * d));
    for (int r = 0; r < 2 * S - 1; ++r) {
        const int p = S - 1 - r;
        for (int k = 0; k < d / 2; ++k) {
            const double w = std::pow(10000.0, -2.0 * k / d);
            EXPECT_NEAR(pe[r * d + 2 * k], std::sin(p * w), 1e-5);
            EXPECT_NEAR(pe[r * d + 2 * k + 1], std::cos(p * w), 1e-5);
        }
    }
    auto h = dsp::hamming(7680);
    EXPECT_NEAR(h[0], 0.08f, 1e-6f);
    EXPECT_NEAR(h[7679], 0.08f, 1e-6f);
    EXPECT_NEAR(h[3839] + h[3840], 2.0f, 1e-3f);
}

TEST(T2wDsp, HarmonicSourceSilentBelowThreshold) {
    std::vector<float> f0 = {0.0f, 5.0f, 200.0f, 200.0f};
    std::vector<float> wh(9, 0.5f);
    auto s = dsp::harmonic_source(f0, wh, 0.0f);
    ASSERT_EQ(s.size(), 4u * 480);
    for (int i = 0; i < 960; ++i) ASSERT_EQ(s[i], 0.0f);  // unvoiced frames (f0 <= 10)
    double e = 0;
    for (int i = 960; i < 1920; ++i) e += s[i] * s[i];
    EXPECT_GT(e, 1.0);
    // first harmonic at 200 Hz: 120 samples per period -> sign changes every ~60 samples
}

// ---------------- streaming on a tiny kit
class TinyKit : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        scratch = std::make_unique<rtf::test::ScratchDir>("t2w-tiny");
        dir = scratch->dir.string();
        test::write_tiny_kit(dir);
        model = T2wModel::load(dir);
    }
    // one thread each: the tiny graphs are dominated by per-node thread sync otherwise
    static T2wConfig base() {
        T2wConfig c;
        c.threads_t2m = 1;
        c.threads_voc = 1;
        return c;
    }
    static void TearDownTestSuite() {
        model.reset();
        scratch.reset();
    }
    static std::unique_ptr<rtf::test::ScratchDir> scratch;
    static std::string dir;
    static std::unique_ptr<T2wModel> model;
    static std::vector<int32_t> tokens(int n, unsigned seed) {
        std::mt19937 r(seed);
        std::vector<int32_t> v(static_cast<size_t>(n));
        for (auto &x : v) x = static_cast<int32_t>(r() % 6561);
        return v;
    }
    // A new stream with `cfg` fed `toks` `piece` codes per push (the last push final): its PCM.
    static std::vector<float> push_in_pieces(const T2wConfig &cfg, const std::vector<int32_t> &toks, size_t piece) {
        T2wStream st(*model, cfg);
        std::vector<float> out;
        for (size_t i = 0; i < toks.size(); i += piece) {
            const size_t end = std::min(i + piece, toks.size());
            auto pcm = st.push({toks.begin() + static_cast<long>(i), toks.begin() + static_cast<long>(end)}, end == toks.size());
            out.insert(out.end(), pcm.begin(), pcm.end());
        }
        return out;
    }
};
std::string TinyKit::dir;
std::unique_ptr<rtf::test::ScratchDir> TinyKit::scratch;
std::unique_ptr<T2wModel> TinyKit::model;

TEST_F(TinyKit, DimsInferredFromTensors) {
    EXPECT_EQ(model->enc_dims().d_model, 32);
    EXPECT_EQ(model->enc_dims().n_token_layers, 2);
    EXPECT_EQ(model->enc_dims().n_mel_layers, 1);
    EXPECT_EQ(model->dit_dims().depth, 2);
    EXPECT_EQ(model->dit_dims().n_heads, 2);
    EXPECT_EQ(model->prompt().n_timesteps, 2);
    EXPECT_EQ(model->prompt().att_len, 60);
    EXPECT_EQ(model->hift_dims().channels, (std::vector<int>{8, 4, 2}));
}

// The packed F32 GEMM (packed-gemm.h) in the engine: with AVX-512F or AVX2 the tiny kit's token2mel
// weights are packed in place at load, and the PCM stays within float rounding of ggml's
// mul_mat path (a model loaded with RTF_T2W_PACKED=0). Packing the wrong tensor, or a
// transposed product, would give noise, far below 60 dB.
TEST_F(TinyKit, PackedGemmMatchesGgmlMulMatPath) {
    if (gemm::kernel_isa() == gemm::Isa::portable) GTEST_SKIP() << "neither AVX-512F nor AVX2 + FMA: the packed GEMM is off";
    const char *prev = std::getenv("RTF_T2W_PACKED");
    const std::string saved = prev ? prev : "";
    setenv("RTF_T2W_PACKED", "1", 1);
    auto packed = T2wModel::load(dir);
    setenv("RTF_T2W_PACKED", "0", 1);
    auto plain = T2wModel::load(dir);
    if (prev) setenv("RTF_T2W_PACKED", saved.c_str(), 1); else unsetenv("RTF_T2W_PACKED");
    EXPECT_GT(packed->packed_weights(), 20);  // encoder, DiT linear layers and convs
    EXPECT_EQ(plain->packed_weights(), 0);
    const auto toks = tokens(60, 9);
    T2wStream a(*packed, base()), b(*plain, base());
    const auto pa = a.push(toks, true), pb = b.push(toks, true);
    ASSERT_EQ(pa.size(), pb.size());
    double sig = 0.0, err = 0.0;
    for (size_t i = 0; i < pa.size(); ++i) {
        sig += static_cast<double>(pb[i]) * pb[i];
        err += (static_cast<double>(pa[i]) - pb[i]) * (static_cast<double>(pa[i]) - pb[i]);
    }
    ASSERT_GT(sig, 0.0);
    EXPECT_GT(10.0 * std::log10(sig / std::max(err, 1e-30)), 60.0);
}

// Window lengths (spec §3.2): first 20160, steady 24000, final 480·(8+2n).
TEST_F(TinyKit, StreamedEqualsOneShot) {
    T2wConfig cfg = base();
    const auto toks = tokens(60, 3);  // + 3 silence = 63: windows 28, 28, final 13
    T2wStream one(*model, cfg);
    std::vector<WindowRecord> recs;
    auto a = one.push(toks, true, &recs);
    ASSERT_EQ(recs.size(), 3u);
    EXPECT_EQ(recs[0].samples, 20160);
    EXPECT_EQ(recs[1].samples, 24000);
    EXPECT_EQ(recs[2].samples, 480 * (8 + 2 * 13));
    EXPECT_TRUE(recs[2].final);
    T2wStream st(*model, cfg);
    std::vector<float> b;
    std::mt19937 r(5);
    size_t i = 0;
    while (i < toks.size()) {
        const size_t n = std::min(toks.size() - i, static_cast<size_t>(1 + r() % 9));
        auto pcm = st.push({toks.begin() + static_cast<long>(i), toks.begin() + static_cast<long>(i + n)}, false);
        b.insert(b.end(), pcm.begin(), pcm.end());
        i += n;
    }
    auto tail = st.push({}, true);
    b.insert(b.end(), tail.begin(), tail.end());
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) ASSERT_NEAR(a[k], b[k], 1e-6f) << k;
    // audio sanity: finite, not constant, seams no larger than steps inside windows
    double max_step = 0, max_seam = 0;
    std::vector<size_t> seams;
    size_t acc = 0;
    for (auto &w : recs) seams.push_back(acc += static_cast<size_t>(w.samples));
    float lo = a[0], hi = a[0];
    for (size_t k = 1; k < a.size(); ++k) {
        ASSERT_TRUE(std::isfinite(a[k]));
        lo = std::min(lo, a[k]);
        hi = std::max(hi, a[k]);
        const double s = std::fabs(a[k] - a[k - 1]);
        if (std::find(seams.begin(), seams.end(), k) != seams.end()) max_seam = std::max(max_seam, s);
        else max_step = std::max(max_step, s);
    }
    EXPECT_GT(hi - lo, 1e-3f);
    EXPECT_LE(max_seam, max_step);
}

TEST_F(TinyKit, ResetReproducesAndCfgMatters) {
    T2wConfig cfg = base();
    cfg.leading_silence = 0;
    const auto toks = tokens(30, 4);
    T2wStream st(*model, cfg);
    auto a = st.push(toks, true);
    st.reset();
    auto b = st.push(toks, true);
    ASSERT_EQ(a, b);
    cfg.cfg = false;
    T2wStream nc(*model, cfg);
    auto c = nc.push(toks, true);
    ASSERT_EQ(a.size(), c.size());
    EXPECT_NE(a, c);
}

// --t2w-first-window (issue 20): a first window of N tokens gives 480·(2(N-3)) - 3840
// samples, slides by N-3, and later windows are the reference's; the output still depends
// only on the token sequence (any push split), and the first seam is no jump: the
// quality gate's boundary_jump check passes at every window boundary.
TEST_F(TinyKit, ShortFirstWindowSizesAndSeamlessJoin) {
    T2wConfig cfg = base();
    cfg.first_window = 8;
    const auto toks = tokens(60, 3);  // + 3 silence = 63: windows 8, 28, 28, final 7 tokens
    T2wStream one(*model, cfg);
    std::vector<WindowRecord> recs;
    auto a = one.push(toks, true, &recs);
    ASSERT_EQ(recs.size(), 4u);
    EXPECT_EQ(recs[0].n_tokens, 8);
    EXPECT_EQ(recs[0].samples, 480 * 10 - 3840);
    EXPECT_EQ(recs[1].samples, 24000);
    EXPECT_EQ(recs[2].samples, 24000);
    EXPECT_EQ(recs[3].n_tokens, 63 - 5 - 25 - 25);
    EXPECT_EQ(recs[3].samples, 480 * (8 + 2 * recs[3].n_tokens));
    const auto b = push_in_pieces(cfg, toks, 3);
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) ASSERT_NEAR(a[k], b[k], 1e-6f) << k;
    std::vector<int64_t> seams;
    int64_t acc = 0;
    for (auto &w : recs) seams.push_back(acc += w.samples);
    rtf::quality::QualityConfig q;
    q.expect_speech = false;
    const auto rep = rtf::quality::check_audio(a, kSampleRate, seams, q);
    const auto *jump = rep.find("boundary_jump");
    ASSERT_NE(jump, nullptr);
    EXPECT_EQ(jump->status, rtf::quality::CheckStatus::Pass) << jump->reason;
    // a second utterance on the same stream starts with a short first window again
    recs.clear();
    one.push(toks, true, &recs);
    ASSERT_FALSE(recs.empty());
    EXPECT_EQ(recs[0].n_tokens, 8);
    // the knob's range
    cfg.first_window = kMinFirstWindow - 1;
    EXPECT_THROW(T2wStream(*model, cfg), rtf::Error);
    cfg.first_window = kWindowTokens + 1;
    EXPECT_THROW(T2wStream(*model, cfg), rtf::Error);
}

// --t2w-ramp: after the first window, windows of the ramp's sizes (each sliding by its size
// - 3), then the reference's 28; every non-first window gives 480·2(W-3) samples; the output
// depends only on the token sequence; a new utterance runs the ramp again; sizes outside
// 8..28 or more than kMaxRampWindows are refused.
TEST_F(TinyKit, RampWindowsSizesAndSplitIndependence) {
    T2wConfig cfg = base();
    cfg.first_window = 8;
    cfg.ramp = {12, 20};
    const auto toks = tokens(60, 5);  // + 3 silence = 63: windows 8, 12, 20, 28, final 7
    T2wStream one(*model, cfg);
    std::vector<WindowRecord> recs;
    auto a = one.push(toks, true, &recs);
    std::vector<int> sizes;
    for (const auto &w : recs) sizes.push_back(w.n_tokens);
    EXPECT_EQ(sizes, (std::vector<int>{8, 12, 20, 28, 63 - 5 - 9 - 17 - 25}));
    ASSERT_EQ(recs.size(), 5u);
    EXPECT_EQ(recs[0].samples, 480 * 10 - 3840);
    EXPECT_EQ(recs[1].samples, 480 * 18);
    EXPECT_EQ(recs[2].samples, 480 * 34);
    EXPECT_EQ(recs[3].samples, 24000);
    const auto b = push_in_pieces(cfg, toks, 4);
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) ASSERT_NEAR(a[k], b[k], 1e-6f) << k;
    // the ramp is other math than no ramp (other windows), and runs again for the next utterance
    T2wConfig plain = cfg;
    plain.ramp.clear();
    T2wStream p(*model, plain);
    EXPECT_NE(p.push(toks, true), a);
    recs.clear();
    one.push(toks, true, &recs);
    ASSERT_GE(recs.size(), 3u);
    EXPECT_EQ(recs[1].n_tokens, 12);
    EXPECT_EQ(recs[2].n_tokens, 20);
    cfg.ramp = {12, 7};
    EXPECT_THROW(T2wStream(*model, cfg), rtf::Error);
    cfg.ramp = {12, 29};
    EXPECT_THROW(T2wStream(*model, cfg), rtf::Error);
    cfg.ramp.assign(kMaxRampWindows + 1, 20);
    EXPECT_THROW(T2wStream(*model, cfg), rtf::Error);
}

// warm() builds every graph a stream can need: no window of any length, first or final,
// builds another one afterwards.
TEST_F(TinyKit, WarmBuildsEveryShape) {
    T2wConfig cfg = base();
    cfg.first_window = 12;
    cfg.ramp = {16, 22};
    T2wStream st(*model, cfg);
    st.warm(false);
    const int64_t built = st.graphs_built();
    EXPECT_GT(built, 0);
    for (int n : {1, 2, 5, 9, 12, 20, 25, 26, 40, 53, 70}) {  // utterances ending in every kind of final window
        st.reset();
        st.push(tokens(n, static_cast<unsigned>(n)), true);
    }
    EXPECT_EQ(st.graphs_built(), built);
    T2wStream cold(*model, cfg);  // without warm(), windows build their shapes on first use
    cold.push(tokens(30, 1), true);
    EXPECT_GT(cold.graphs_built(), 0);
}

// Two CFG-branch lanes on two threads compute exactly what one thread computes.
TEST_F(TinyKit, TwoLanesEqualOneThread) {
    T2wConfig one = base(), two = base();
    two.threads_t2m = 2;
    const auto toks = tokens(40, 6);
    T2wStream a(*model, one), b(*model, two);
    auto pa = a.push(toks, true);
    auto pb = b.push(toks, true);
    ASSERT_FALSE(pa.empty());
    EXPECT_EQ(pa, pb);
}

// Every window counts its host <-> backend copies (what crosses the host link when a part is
// on a device; on the CPU they are memcpys, counted alike): inputs, the DiT's per-step
// copies and outputs, the same bytes for the same windows, and the copies' time taken out of
// compute, never below zero, with one lane and with two.
TEST_F(TinyKit, WindowCopiesAreCounted) {
    for (int threads : {1, 2}) {
        T2wConfig cfg = base();
        cfg.threads_t2m = threads;
        const auto toks = tokens(40, 3);
        std::vector<WindowRecord> ra, rb;
        T2wStream a(*model, cfg), b(*model, cfg);
        a.push(toks, true, &ra);
        b.push(toks, true, &rb);
        ASSERT_EQ(ra.size(), rb.size());
        ASSERT_GE(ra.size(), 2u);
        for (size_t i = 0; i < ra.size(); ++i) {
            const WindowTimes &t = ra[i].times;
            SCOPED_TRACE("threads " + std::to_string(threads) + ", window " + std::to_string(i));
            EXPECT_GT(t.t2m.upload_bytes, 0u);
            EXPECT_GT(t.t2m.download_bytes, 0u);
            EXPECT_GT(t.voc.upload_bytes, 0u);
            // the vocoder's spectra come back: 2 x 9 floats per 4 samples, more than the samples
            EXPECT_GE(t.voc.download_bytes, 4u * static_cast<size_t>(ra[i].samples));
            EXPECT_EQ(t.t2m.upload_bytes, rb[i].times.t2m.upload_bytes);
            EXPECT_EQ(t.t2m.download_bytes, rb[i].times.t2m.download_bytes);
            EXPECT_EQ(t.voc.upload_bytes, rb[i].times.voc.upload_bytes);
            EXPECT_EQ(t.voc.download_bytes, rb[i].times.voc.download_bytes);
            EXPECT_GE(t.t2m.compute_ms, 0.0);
            EXPECT_GE(t.voc.compute_ms, 0.0);
            EXPECT_LE(t.t2m.upload_ms + t.t2m.download_ms, t.t2m.total_ms);
        }
    }
}

// Batch-2 CFG (issue 13): both CFG branches as one graph per Euler step give what the two
// single-branch graphs give, for the mel and for every streaming cache (the per-branch
// DiT conv caches included), on non-last and last windows, with 1 and 2 threads. Bound:
// max |difference| <= 1e-5 absolute (mel values here are O(1)); in practice the
// difference is 0, since every product sums in the same order whatever the batch. A batch
// that mixed the branches (attention across them, or a branch's cache swapped) gives
// differences of O(0.1).
TEST_F(TinyKit, BatchedCfgEqualsTwoSingleBranches) {
    const char *prev = std::getenv("RTF_T2W_CFG_BATCH");
    const std::string saved = prev ? prev : "";
    auto max_diff = [](const std::vector<float> &a, const std::vector<float> &b) {
        EXPECT_EQ(a.size(), b.size());
        double d = 0.0;
        for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
        return d;
    };
    for (int threads : {1, 2}) {
        T2wConfig cfg = base();
        cfg.threads_t2m = threads;
        setenv("RTF_T2W_CFG_BATCH", "1", 1);
        Token2Mel batched(*model, cfg);
        setenv("RTF_T2W_CFG_BATCH", "0", 1);
        Token2Mel single(*model, cfg);
        if (prev) setenv("RTF_T2W_CFG_BATCH", saved.c_str(), 1); else unsetenv("RTF_T2W_CFG_BATCH");
        EXPECT_TRUE(batched.cfg_batched());
        EXPECT_FALSE(single.cfg_batched());
        EXPECT_EQ(batched.lanes(), 1);
        EXPECT_EQ(single.lanes(), threads >= 2 ? 2 : 1);
        Token2MelState sa, sb;
        sa.reset(*model->voice());
        sb.reset(*model->voice());
        const auto toks = tokens(3 * kWindowTokens, 11 + static_cast<unsigned>(threads));
        for (int w = 0; w < 3; ++w) {
            const bool last = w == 2;
            const std::vector<int32_t> win(toks.begin() + w * kWindowTokens,
                                           toks.begin() + w * kWindowTokens + (last ? 13 : kWindowTokens));
            PartTimes ta, tb;
            const auto ma = batched.run(win, last, sa, ta);
            const auto mb = single.run(win, last, sb, tb);
            ASSERT_FALSE(ma.empty());
            EXPECT_LE(max_diff(ma, mb), 1e-5) << "mel, window " << w << ", " << threads << " thread(s)";
            EXPECT_LE(max_diff(sa.est_cnn, sb.est_cnn), 1e-5) << "DiT conv caches, window " << w;
            EXPECT_LE(max_diff(sa.conf_cnn, sb.conf_cnn), 1e-5) << "encoder conv cache, window " << w;
            EXPECT_LE(max_diff(sa.conf_att, sb.conf_att), 1e-5) << "encoder attention cache, window " << w;
        }
        // both branches' conv caches were written (the uncond half is not the prompt's any more)
        const auto fresh = model->voice()->est_cnn;
        const size_t half = fresh.size() / 2;
        EXPECT_GT(max_diff(std::vector<float>(sa.est_cnn.begin() + static_cast<long>(half), sa.est_cnn.end()),
                           std::vector<float>(fresh.begin() + static_cast<long>(half), fresh.end())),
                  1e-3);
    }
}

// Compute types (issue 13): the matmul weights are converted at load, the F32 originals
// stay for everything else, and each type's error against the f32 path is bounded.
namespace {
std::vector<float> run_with_mel(const T2wModel &m, const T2wConfig &cfg, const std::vector<int32_t> &toks,
                                std::vector<float> &mel) {
    T2wStream st(m, cfg);
    WindowTap tap;
    tap.t2m_out = [&mel](int64_t, const std::vector<float> &w, int) { mel.insert(mel.end(), w.begin(), w.end()); };
    st.set_tap(tap);
    return st.push(toks, true);
}
}  // namespace

TEST_F(TinyKit, ComputeTypesStayCloseToF32) {
    const auto toks = tokens(60, 3);
    std::vector<float> ref_mel;
    const auto ref_pcm = run_with_mel(*model, base(), toks, ref_mel);
    // bounds: measured on this kit (f16 66 dB, bf16 48 dB, q8_0 38 dB mel SNR), with margin
    const std::vector<std::pair<std::string, double>> cases = {{"f16", 55.0}, {"bf16", 38.0}, {"q8_0", 28.0}};
    for (const auto &[type, min_db] : cases) {
        auto typed = T2wModel::load(dir, T2wConfig::typed(type, "f32"));
        const ggml_tensor *q = typed->flow().mm("estimator.blocks.0.attn.to_q.weight");
        EXPECT_EQ(std::string(ggml_type_name(q->type)), type);
        EXPECT_EQ(typed->flow().get("estimator.blocks.0.attn.to_q.weight")->type, GGML_TYPE_F32);  // original kept
        EXPECT_EQ(typed->flow_extra().mm("input_embedding.weight")->type, GGML_TYPE_F32);         // a row lookup
        T2wConfig cfg = base();
        cfg.type_t2m = type;
        std::vector<float> mel;
        const auto pcm = run_with_mel(*typed, cfg, toks, mel);
        ASSERT_EQ(mel.size(), ref_mel.size());
        ASSERT_EQ(pcm.size(), ref_pcm.size());
        const double db = rtf::quality::snr_db(ref_mel, mel);
        EXPECT_TRUE(std::isfinite(db)) << type << ": identical to f32, so nothing was converted";
        EXPECT_GE(db, min_db) << type;
        EXPECT_LT(db, 120.0) << type;
    }
    // vocoder f16: token2mel untouched (identical mel), the audio within bounds
    auto v16 = T2wModel::load(dir, T2wConfig::typed("f32", "f16"));
    EXPECT_EQ(v16->hift().mm("conv_pre.weight")->type, GGML_TYPE_F16);
    T2wConfig cfg = base();
    cfg.type_voc = "f16";
    std::vector<float> mel;
    const auto pcm = run_with_mel(*v16, cfg, toks, mel);
    EXPECT_EQ(mel, ref_mel);
    const double db = rtf::quality::snr_db(ref_pcm, pcm);
    EXPECT_TRUE(std::isfinite(db));
    EXPECT_GE(db, 45.0);
}

TEST_F(TinyKit, UnknownComputeTypeIsAUsageError) {
    try {
        T2wModel::load(dir, T2wConfig::typed("q4_0", "f32"));
        FAIL() << "no error";
    } catch (const rtf::Error &e) {
        EXPECT_EQ(e.kind(), rtf::ErrorKind::Usage);
        EXPECT_EQ(e.setting(), "t2w-type-t2m") << e.what();
    }
    EXPECT_THROW(T2wModel::load(dir, T2wConfig::typed("f32", "q8_0")), rtf::Error);  // not a vocoder type
    // (bf16 is one where the build has oneDNN: test-t2w-onednn checks its load and refusal)
}

TEST_F(TinyKit, BadInputsAreUsageErrors) {
    T2wConfig cfg = base();
    T2wStream st(*model, cfg);
    try {
        st.push({1, 2, 6561}, false);
        FAIL() << "no error for token 6561";
    } catch (const rtf::Error &e) {
        EXPECT_EQ(e.kind(), rtf::ErrorKind::Usage);
        EXPECT_NE(std::string(e.what()).find("6561"), std::string::npos);
    }
    EXPECT_EQ(st.buffered_tokens(), 3u);  // nothing buffered by the failed call
    cfg.flow_steps = 3;
    EXPECT_THROW(T2wStream(*model, cfg), rtf::Error);
    cfg.flow_steps = 0;
    cfg.threads_t2m = 0;
    EXPECT_THROW(cfg.validate(), rtf::Error);
}

TEST_F(TinyKit, MalformedOrMismatchingFilesAreUsageErrors) {
    const std::string bad = dir + "-bad";
    fs::create_directories(bad);
    for (auto &e : fs::directory_iterator(dir)) fs::copy_file(e.path(), bad + "/" + e.path().filename().string(), fs::copy_options::overwrite_existing);
    auto expect_usage = [&](const char *what, const std::string &needle = "") {
        try {
            T2wModel::load(bad);
            ADD_FAILURE() << "no error for " << what;
        } catch (const rtf::Error &e) {
            EXPECT_EQ(e.kind(), rtf::ErrorKind::Usage) << what;
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << what << ": " << e.what();
        }
    };
    {  // garbage
        std::ofstream(bad + "/hifigan2.gguf") << "not a gguf file at all";
    }
    expect_usage("garbage hifigan2.gguf");
    fs::copy_file(dir + "/hifigan2.gguf", bad + "/hifigan2.gguf", fs::copy_options::overwrite_existing);
    {  // truncated
        fs::resize_file(bad + "/flow_matching.gguf", fs::file_size(bad + "/flow_matching.gguf") / 2);
    }
    // refused from the header, before any allocation, naming the file and the first cut tensor
    expect_usage("truncated flow_matching.gguf", "flow_matching.gguf: truncated: tensor '");
    fs::copy_file(dir + "/flow_matching.gguf", bad + "/flow_matching.gguf", fs::copy_options::overwrite_existing);
    {  // mismatching: a prompt cache written for another model width
        test::TinyKitDims k;
        k.d = 16;
        test::write_tiny_kit(bad + "/other", k, 9);
        fs::copy_file(bad + "/other/prompt_cache.gguf", bad + "/prompt_cache.gguf", fs::copy_options::overwrite_existing);
    }
    expect_usage("prompt cache of another width");
    fs::remove(bad + "/encoder.gguf");
    fs::remove_all(bad + "/other");
    expect_usage("missing encoder.gguf");
    fs::remove_all(bad);
}
