// Prompt-cache builder tests (label `unit`, tiny kit written in-process): the cache that
// build_prompt_cache() computes (spec minicpmo45-speak-path.md §3.9) against an independent
// plain-loop computation of §3.4-3.6 in double precision written here from the spec (not the
// engine's graph builders); the file layout (§1.9 keys and shapes) for 5, 3 and 2 steps as
// T2wModel loads it; identical bytes when built twice (and with another thread count); bad
// bundle files refused naming the file; a stream runs with --flow-steps N on a cache built for N.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <ggml-backend.h>
#include <ggml.h>

#include "common/scratch-dir.h"
#include "core/error.h"
#include "models/gguf/gguf-file.h"
#include "models/t2w/voice.h"
#include "models/t2w/prompt-cache-builder.h"
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-stream.h"
#include "plain-ops.h"
#include "tiny-kit.h"

using namespace rtf::t2w;
namespace fs = std::filesystem;

namespace {

using namespace rtf::test::plain;  // Vec: row-major [T][C]

// Tiny shapes: 2 token-rate + 1 mel-rate conformer layers, DiT depth 2, T_p = 11 (T1 = 8, T_m = 16).
test::TinyKitDims tiny_dims() {
    test::TinyKitDims k;
    k.d = 16;
    k.heads = 2;
    k.ffn = 32;
    k.dit_h = 16;
    k.dit_heads = 2;
    k.dit_mlp = 32;
    k.depth = 2;
    k.L = 16;
    return k;
}

PromptBundle random_bundle(int Tp, unsigned seed) {
    std::mt19937 r(seed);
    std::normal_distribution<float> n(0.0f, 1.0f);
    std::uniform_int_distribution<int32_t> code(0, 6560);
    PromptBundle b;
    b.spk.resize(kSpkDim);
    for (auto &v : b.spk) v = n(r);
    b.tokens.resize(static_cast<size_t>(Tp));
    for (auto &v : b.tokens) v = code(r);
    b.mel.resize(static_cast<size_t>(2) * (Tp - 3) * kMelBins);
    for (auto &v : b.mel) v = n(r);
    return b;
}

// ------------------------------------------------------------ plain reference (spec §3.4-3.6)

struct Weights {
    const T2wModel &m;
    Vec operator()(const GgufWeights &w, const std::string &name) const {
        ggml_tensor *t = w.get(name);
        std::vector<float> f(static_cast<size_t>(ggml_nelements(t)));
        ggml_backend_tensor_get(t, f.data(), 0, f.size() * sizeof(float));
        return Vec(f.begin(), f.end());
    }
};

Vec zeros_then(int n_zero_frames, const Vec &x, int C) {
    Vec r(static_cast<size_t>(n_zero_frames) * C, 0.0);
    r.insert(r.end(), x.begin(), x.end());
    return r;
}
struct RefCache {
    Vec conf_cnn, conf_att, est_cnn, est_att;  // the layouts of prompt_cache.gguf (ggml order)
};

// One conformer layer without a cache; returns x' and writes K‖V [H][T][2hd] into kv.
Vec ref_conformer(const Weights &W, const GgufWeights &we, const std::string &p, const Vec &x0, int d, int H, Vec &kv) {
    const int hd = d / H, T = static_cast<int>(x0.size() / d);
    const Vec y = layer_norm(x0, d, W(we, p + "norm_mha.weight"), W(we, p + "norm_mha.bias"), 1e-12);
    const Vec q = linear(y, W(we, p + "self_attn.linear_q.weight"), W(we, p + "self_attn.linear_q.bias"), d, d);
    const Vec k = linear(y, W(we, p + "self_attn.linear_k.weight"), W(we, p + "self_attn.linear_k.bias"), d, d);
    const Vec v = linear(y, W(we, p + "self_attn.linear_v.weight"), W(we, p + "self_attn.linear_v.bias"), d, d);
    const Vec u = W(we, p + "self_attn.pos_bias_u"), vb = W(we, p + "self_attn.pos_bias_v");
    const Vec Wpos = W(we, p + "self_attn.linear_pos.weight");
    // P(r) = linear_pos(PE(r)) for the relative position r = i - j of query i and key j
    auto P = [&](int r) {
        Vec pe(d);
        for (int kk = 0; kk < d / 2; ++kk) {
            const double w = std::pow(10000.0, -2.0 * kk / d);
            pe[2 * kk] = std::sin(r * w);
            pe[2 * kk + 1] = std::cos(r * w);
        }
        return linear(pe, Wpos, {}, d, d);
    };
    std::vector<Vec> Pr(2 * T - 1);
    for (int r = -(T - 1); r <= T - 1; ++r) Pr[r + T - 1] = P(r);
    kv.assign(static_cast<size_t>(H) * T * 2 * hd, 0.0);
    Vec o(static_cast<size_t>(T) * d);
    for (int h = 0; h < H; ++h) {
        for (int j = 0; j < T; ++j)
            for (int c = 0; c < hd; ++c) {
                kv[(static_cast<size_t>(h) * T + j) * 2 * hd + c] = k[static_cast<size_t>(j) * d + h * hd + c];
                kv[(static_cast<size_t>(h) * T + j) * 2 * hd + hd + c] = v[static_cast<size_t>(j) * d + h * hd + c];
            }
        for (int i = 0; i < T; ++i) {
            Vec sc(T);
            for (int j = 0; j < T; ++j) {
                double ac = 0, bd = 0;
                for (int c = 0; c < hd; ++c) {
                    const double qc = q[static_cast<size_t>(i) * d + h * hd + c];
                    ac += (qc + u[h * hd + c]) * k[static_cast<size_t>(j) * d + h * hd + c];
                    bd += (qc + vb[h * hd + c]) * Pr[i - j + T - 1][h * hd + c];
                }
                sc[j] = (ac + bd) / std::sqrt(static_cast<double>(hd));
            }
            const Vec pr = softmax(sc);
            for (int c = 0; c < hd; ++c) {
                double s = 0;
                for (int j = 0; j < T; ++j) s += pr[j] * v[static_cast<size_t>(j) * d + h * hd + c];
                o[static_cast<size_t>(i) * d + h * hd + c] = s;
            }
        }
    }
    Vec x = x0;
    const Vec att = linear(o, W(we, p + "self_attn.linear_out.weight"), W(we, p + "self_attn.linear_out.bias"), d, d);
    for (size_t i = 0; i < x.size(); ++i) x[i] += att[i];
    const int ffn = static_cast<int>(W(we, p + "feed_forward.w_1.bias").size());
    Vec f = linear(layer_norm(x, d, W(we, p + "norm_ff.weight"), W(we, p + "norm_ff.bias"), 1e-12), W(we, p + "feed_forward.w_1.weight"),
                W(we, p + "feed_forward.w_1.bias"), d, ffn);
    for (auto &z : f) z = silu(z);
    f = linear(f, W(we, p + "feed_forward.w_2.weight"), W(we, p + "feed_forward.w_2.bias"), ffn, d);
    for (size_t i = 0; i < x.size(); ++i) x[i] += f[i];
    return x;
}

RefCache reference_setup(const T2wModel &m, const PromptBundle &b, int N, float temperature) {
    const Weights W{m};
    const GgufWeights &we = m.encoder(), &wx = m.flow_extra(), &wf = m.flow();
    const EncoderDims &E = m.enc_dims();
    const DitDims &D = m.dit_dims();
    const int d = E.d_model, H = E.n_heads, hd = d / H;
    const int Tp = b.n_tokens(), T1 = Tp - 3, Tm = 2 * T1;
    const int NL = E.n_token_layers + E.n_mel_layers;
    RefCache r;

    // ---- encoder (§3.4), one non-last chunk, no caches
    const Vec emb = W(wx, "input_embedding.weight");
    Vec X;
    for (int32_t t : b.tokens) X.insert(X.end(), emb.begin() + static_cast<long>(t) * d, emb.begin() + static_cast<long>(t + 1) * d);
    Vec e = layer_norm(linear(X, W(we, "embed.out.0.weight"), W(we, "embed.out.0.bias"), d, d), d, W(we, "embed.out.1.weight"),
                 W(we, "embed.out.1.bias"), 1e-5);
    for (auto &v : e) v *= std::sqrt(static_cast<double>(d));
    Vec hpl = conv1d(e, W(we, "pre_lookahead_layer.conv1.weight"), W(we, "pre_lookahead_layer.conv1.bias"), 4, d, d);  // T1 frames
    for (auto &v : hpl) v = v > 0 ? v : 0.01 * v;
    Vec x = conv1d(zeros_then(2, hpl, d), W(we, "pre_lookahead_layer.conv2.weight"), W(we, "pre_lookahead_layer.conv2.bias"), 3, d, d);
    for (size_t i = 0; i < x.size(); ++i) x[i] += e[i];
    r.conf_cnn.assign(hpl.end() - 2 * d, hpl.end());  // cache_pl: last 2 frames of h
    r.conf_att.assign(static_cast<size_t>(2) * hd * Tm * H * NL, 0.0);
    auto put_att = [&](int layer, const Vec &kv, int S) {  // [H][S][2hd] -> slot `layer`, time entries 0..Tm-1
        for (int h = 0; h < H; ++h)
            for (int tau = 0; tau < Tm; ++tau)
                for (int c = 0; c < 2 * hd; ++c)
                    r.conf_att[((static_cast<size_t>(layer) * H + h) * Tm + tau) * 2 * hd + c] =
                        kv[(static_cast<size_t>(h) * S + tau % S) * 2 * hd + c];  // token-rate: [c ; c] (§3.7)
    };
    for (int i = 0; i < E.n_token_layers; ++i) {
        Vec kv;
        x = ref_conformer(W, we, "encoders." + std::to_string(i) + ".", x, d, H, kv);
        put_att(i, kv, T1);
    }
    Vec rep;
    for (int t = 0; t < T1; ++t)
        for (int k = 0; k < 2; ++k) rep.insert(rep.end(), x.begin() + static_cast<long>(t) * d, x.begin() + static_cast<long>(t + 1) * d);
    const Vec uin = zeros_then(4, rep, d);
    r.conf_cnn.insert(r.conf_cnn.end(), uin.end() - 4 * d, uin.end());  // cache_up: last 4 frames
    Vec u = conv1d(uin, W(we, "up_layer.conv.weight"), W(we, "up_layer.conv.bias"), 5, d, d);
    u = layer_norm(linear(u, W(we, "up_embed.out.0.weight"), W(we, "up_embed.out.0.bias"), d, d), d, W(we, "up_embed.out.1.weight"),
             W(we, "up_embed.out.1.bias"), 1e-5);
    for (auto &v : u) v *= std::sqrt(static_cast<double>(d));
    for (int j = 0; j < E.n_mel_layers; ++j) {
        Vec kv;
        u = ref_conformer(W, we, "up_encoders." + std::to_string(j) + ".", u, d, H, kv);
        put_att(E.n_token_layers + j, kv, Tm);
    }
    u = layer_norm(u, d, W(we, "after_norm.weight"), W(we, "after_norm.bias"), 1e-5);
    const Vec mu = linear(u, W(wx, "encoder_proj.weight"), W(wx, "encoder_proj.bias"), d, kMelBins);  // [Tm][80]
    double ss = 0;
    for (float s : b.spk) ss += static_cast<double>(s) * s;
    Vec spk_n(b.spk.begin(), b.spk.end());
    for (auto &v : spk_n) v /= std::sqrt(ss + 1e-12);
    const Vec vspk = linear(spk_n, W(wx, "spk_embed_affine_layer.weight"), W(wx, "spk_embed_affine_layer.bias"), kSpkDim, kMelBins);

    // ---- CFM (§3.5-3.6): N Euler steps, CFG, no caches, cond = prompt mel
    const int h = D.hidden, Hd = D.n_heads, dh = h / Hd, depth = D.depth;
    const size_t n_slots = static_cast<size_t>(depth) * N;
    r.est_att.assign(static_cast<size_t>(2) * dh * Tm * Hd * n_slots * 2, 0.0);
    r.est_cnn.assign(static_cast<size_t>(2) * h * 2 * n_slots * 2, 0.0);
    Vec xs(static_cast<size_t>(Tm) * kMelBins);
    {
        std::mt19937 rng(42);
        std::normal_distribution<float> dist(0.0f, 1.0f);
        for (auto &v : xs) v = temperature * dist(rng);
    }
    const std::string e_ = "estimator.";
    for (int s = 0; s < N; ++s) {
        const double t0 = 1.0 - std::cos(M_PI * s / (2.0 * N)), t1 = 1.0 - std::cos(M_PI * (s + 1) / (2.0 * N));
        Vec temb(256);
        for (int k = 0; k < 128; ++k) {
            const double f = std::exp(-std::log(10000.0) * k / 128.0);
            temb[k] = std::cos(1000.0 * t0 * f);
            temb[128 + k] = std::sin(1000.0 * t0 * f);
        }
        Vec c = linear(temb, W(wf, e_ + "t_embedder.mlp.0.weight"), W(wf, e_ + "t_embedder.mlp.0.bias"), 256, h);
        for (auto &z : c) z = silu(z);
        c = linear(c, W(wf, e_ + "t_embedder.mlp.2.weight"), W(wf, e_ + "t_embedder.mlp.2.bias"), h, h);
        for (auto &z : c) z = silu(z);
        Vec fout[2];
        for (int br = 0; br < 2; ++br) {
            Vec in;
            for (int t = 0; t < Tm; ++t)
                for (int part = 0; part < 4; ++part)
                    for (int ch = 0; ch < kMelBins; ++ch) {
                        const size_t i = static_cast<size_t>(t) * kMelBins + ch;
                        double v = 0;
                        if (part == 0) v = xs[i];
                        else if (br == 0 && part == 1) v = mu[i];
                        else if (br == 0 && part == 2) v = vspk[ch];
                        else if (br == 0 && part == 3) v = b.mel[i];
                        in.push_back(v);
                    }
            Vec hx = linear(in, W(wf, e_ + "in_proj.weight"), W(wf, e_ + "in_proj.bias"), 4 * kMelBins, h);
            for (int blk = 0; blk < depth; ++blk) {
                const std::string p = e_ + "blocks." + std::to_string(blk) + ".";
                const size_t slot = static_cast<size_t>(s) * depth + blk;
                const Vec mod = linear(c, W(wf, p + "adaLN_modulation.1.weight"), W(wf, p + "adaLN_modulation.1.bias"), h, 9 * h);
                auto modulate = [&](const Vec &z, int js, int jc) {
                    Vec y = layer_norm(z, h, {}, {}, 1e-6);
                    for (size_t i = 0; i < y.size(); ++i) y[i] = y[i] * (1.0 + mod[jc * h + i % h]) + mod[js * h + i % h];
                    return y;
                };
                auto gated = [&](Vec &z, const Vec &y, int j) {
                    for (size_t i = 0; i < z.size(); ++i) z[i] += mod[j * h + i % h] * y[i];
                };
                // attention: keys = the current frames only (no cache)
                const Vec mm = modulate(hx, 0, 1);
                Vec q = layer_norm(linear(mm, W(wf, p + "attn.to_q.weight"), W(wf, p + "attn.to_q.bias"), h, h), dh, W(wf, p + "attn.q_norm.weight"),
                             W(wf, p + "attn.q_norm.bias"), 1e-5);
                Vec k = layer_norm(linear(mm, W(wf, p + "attn.to_k.weight"), W(wf, p + "attn.to_k.bias"), h, h), dh, W(wf, p + "attn.k_norm.weight"),
                             W(wf, p + "attn.k_norm.bias"), 1e-5);
                const Vec v = linear(mm, W(wf, p + "attn.to_v.weight"), W(wf, p + "attn.to_v.bias"), h, h);
                Vec o(static_cast<size_t>(Tm) * h);
                for (int hh = 0; hh < Hd; ++hh) {
                    for (int t = 0; t < Tm; ++t)
                        for (int cc = 0; cc < dh; ++cc) {
                            const size_t base = (((br * n_slots + slot) * Hd + hh) * Tm + t) * 2 * dh;
                            r.est_att[base + cc] = k[static_cast<size_t>(t) * h + hh * dh + cc];
                            r.est_att[base + dh + cc] = v[static_cast<size_t>(t) * h + hh * dh + cc];
                        }
                    for (int i = 0; i < Tm; ++i) {
                        Vec sc(Tm);
                        for (int j = 0; j < Tm; ++j) {
                            double a = 0;
                            for (int cc = 0; cc < dh; ++cc) a += q[static_cast<size_t>(i) * h + hh * dh + cc] * k[static_cast<size_t>(j) * h + hh * dh + cc];
                            sc[j] = a / std::sqrt(static_cast<double>(dh));
                        }
                        const Vec pr = softmax(sc);
                        for (int cc = 0; cc < dh; ++cc) {
                            double a = 0;
                            for (int j = 0; j < Tm; ++j) a += pr[j] * v[static_cast<size_t>(j) * h + hh * dh + cc];
                            o[static_cast<size_t>(i) * h + hh * dh + cc] = a;
                        }
                    }
                }
                gated(hx, linear(o, W(wf, p + "attn.proj.weight"), W(wf, p + "attn.proj.bias"), h, h), 2);
                // causal conv block, zero left context
                const Vec in1 = zeros_then(2, modulate(hx, 6, 7), h);
                Vec y = layer_norm(conv1d(in1, W(wf, p + "conv.block.1.weight"), W(wf, p + "conv.block.1.bias"), 3, h, h), h,
                             W(wf, p + "conv.block.3.weight"), W(wf, p + "conv.block.3.bias"), 1e-5);
                for (auto &z : y) z = z * std::tanh(std::log1p(std::exp(z)));
                const Vec in2 = zeros_then(2, y, h);
                y = conv1d(in2, W(wf, p + "conv.block.6.weight"), W(wf, p + "conv.block.6.bias"), 3, h, h);
                for (int f = 0; f < 2; ++f)
                    for (int cc = 0; cc < h; ++cc) {
                        const size_t base = ((br * n_slots + slot) * 2 + f) * 2 * h;
                        r.est_cnn[base + cc] = in1[static_cast<size_t>(Tm + f) * h + cc];
                        r.est_cnn[base + h + cc] = in2[static_cast<size_t>(Tm + f) * h + cc];
                    }
                gated(hx, y, 8);
                const int mlp = static_cast<int>(W(wf, p + "mlp.fc1.bias").size());
                y = linear(modulate(hx, 3, 4), W(wf, p + "mlp.fc1.weight"), W(wf, p + "mlp.fc1.bias"), h, mlp);
                for (auto &z : y) z = gelu_ggml(z);
                gated(hx, linear(y, W(wf, p + "mlp.fc2.weight"), W(wf, p + "mlp.fc2.bias"), mlp, h), 5);
            }
            const Vec fm = linear(c, W(wf, e_ + "final_layer.adaLN_modulation.1.weight"), W(wf, e_ + "final_layer.adaLN_modulation.1.bias"), h, 2 * h);
            Vec nf = layer_norm(hx, h, {}, {}, 1e-6);
            for (size_t i = 0; i < nf.size(); ++i) nf[i] = nf[i] * (1.0 + fm[h + i % h]) + fm[i % h];
            fout[br] = linear(nf, W(wf, e_ + "final_layer.linear.weight"), W(wf, e_ + "final_layer.linear.bias"), h, kMelBins);
        }
        for (size_t i = 0; i < xs.size(); ++i) xs[i] += (t1 - t0) * (1.7 * fout[0][i] - 0.7 * fout[1][i]);
    }
    return r;
}

// max over i of |got - ref| / (1 + |ref|)
double max_err(const std::vector<float> &got, const Vec &ref) {
    EXPECT_EQ(got.size(), ref.size());
    double m = 0;
    for (size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
        if (!std::isfinite(got[i])) return INFINITY;
        m = std::max(m, std::fabs(got[i] - ref[i]) / (1.0 + std::fabs(ref[i])));
    }
    return m;
}

std::string slurp(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// `model` is what the builder runs on (its matrix weights packed for the packed GEMM where
// the CPU has AVX-512F); `plain` is the same kit loaded with packing off, whose weights are
// plain matrices the reference loops can read.
struct Kit {
    rtf::test::ScratchDir tmp{"t2w-prompt"};
    std::unique_ptr<T2wModel> model, plain;
    Kit() {
        test::write_tiny_kit(tmp.file("kit"), tiny_dims(), 7);
        model = T2wModel::load(tmp.file("kit"), {}, T2wLoadOptions::weights_only());
        setenv("RTF_T2W_PACKED", "0", 1);
        plain = T2wModel::load(tmp.file("kit"), {}, T2wLoadOptions::weights_only());
        unsetenv("RTF_T2W_PACKED");
    }
};

}  // namespace

// Every tensor of a built cache against the plain loops of §3.9 (2 and 3 steps), with a
// check that a plausible mistake would be seen (token-rate cache written once, not [c ; c];
// another step's slot).
TEST(T2wPrompt, CacheMatchesPlainLoopsOfSpec39) {
    Kit kit;
    const PromptBundle b = random_bundle(11, 3);
    constexpr double kTol = 1e-4;  // as test-t2w-blocks; measured ~2e-6
    for (int N : {2, 3}) {
        PromptCacheOptions o;
        o.steps = N;
        o.threads = 2;
        const PromptCache c = build_prompt_cache(*kit.model, b, o);
        const RefCache r = reference_setup(*kit.plain, b, N, 1.0f);
        EXPECT_EQ(c.n_timesteps, N);
        EXPECT_EQ(c.att_len, 16);
        EXPECT_EQ(c.spk, b.spk);
        const struct {
            const char *name;
            const std::vector<float> &got;
            const Vec &ref;
        } cmp[] = {{"conformer_cnn_cache", c.conf_cnn, r.conf_cnn},
                   {"conformer_att_cache", c.conf_att, r.conf_att},
                   {"estimator_cnn_cache", c.est_cnn, r.est_cnn},
                   {"estimator_att_cache", c.est_att, r.est_att}};
        for (const auto &t : cmp) {
            const double e = max_err(t.got, t.ref);
            std::printf("  N=%d %-22s max |got-ref|/(1+|ref|) = %.3g over %zu values\n", N, t.name, e, t.ref.size());
            EXPECT_LE(e, kTol) << t.name << " N=" << N;
        }
        // discrimination: the token-rate layers' second half is the duplicate, not later frames
        Vec once = r.conf_att;
        const int hd = 8, H = 2, Tm = 16;
        for (int h = 0; h < H; ++h)
            for (int tau = Tm / 2; tau < Tm; ++tau)
                for (int cc = 0; cc < 2 * hd; ++cc) once[(static_cast<size_t>(h) * Tm + tau) * 2 * hd + cc] = 0.0;
        EXPECT_GT(max_err(c.conf_att, once), 100 * kTol);
        // the last step's slots differ from the first step's (the caches follow x_s)
        const size_t slot = static_cast<size_t>(2) * 8 * Tm * 2;  // 2dh·Tm·Hd
        const std::vector<float> first(c.est_att.begin(), c.est_att.begin() + static_cast<long>(slot));
        const Vec last(r.est_att.begin() + static_cast<long>(slot * 2 * (N - 1)), r.est_att.begin() + static_cast<long>(slot * (2 * (N - 1) + 1)));
        EXPECT_GT(max_err(first, last), 100 * kTol);
    }
}

// 5, 3 and 2 steps: the file has the §1.9 keys and shapes, T2wModel loads it, and a stream
// runs with --flow-steps N (and refuses another N naming the file).
TEST(T2wPrompt, FileLayoutPerStepCountAndStreamRuns) {
    Kit kit;
    const PromptBundle b = random_bundle(11, 4);
    for (int N : {5, 3, 2}) {
        PromptCacheOptions o;
        o.steps = N;
        const std::string path = kit.tmp.file("pc" + std::to_string(N) + ".gguf");
        write_prompt_cache(build_prompt_cache(*kit.model, b, o), path);
        EXPECT_FALSE(fs::exists(path + ".part"));
        const rtf::gguf::GgufFile g(path);
        EXPECT_EQ(g.get_int("mtmd.prompt_cache.version"), 2);
        EXPECT_EQ(g.get_int("mtmd.prompt_cache.n_timesteps"), N);
        EXPECT_FLOAT_EQ(static_cast<float>(g.get_float("mtmd.prompt_cache.temperature")), 1.0f);
        EXPECT_EQ(g.get_int("mtmd.prompt_cache.pre_lookahead"), 3);
        EXPECT_EQ(g.get_int("mtmd.prompt_cache.chunk_main"), 25);
        EXPECT_EQ(g.get_int("mtmd.prompt_cache.chunk_total"), 28);
        EXPECT_EQ(g.get_int("mtmd.prompt_cache.up_rate"), 2);
        auto m = T2wModel::load(kit.tmp.file("kit"), {}, T2wLoadOptions::prompt(path));
        EXPECT_EQ(m->prompt().n_timesteps, N);
        EXPECT_EQ(m->prompt().att_len, 16);
        EXPECT_EQ(m->prompt_file(), path);
        EXPECT_EQ(m->voice()->conf_cnn.size(), 16u * 6);
        EXPECT_EQ(m->voice()->conf_att.size(), 16u * 16 * 2 * 3);
        EXPECT_EQ(m->voice()->est_cnn.size(), static_cast<size_t>(32) * 2 * 2 * N * 2);
        const ggml_tensor *ea = m->voice()->est_att_cache();
        EXPECT_EQ(ea->ne[0], 16);
        EXPECT_EQ(ea->ne[1], 16);
        EXPECT_EQ(ea->ne[2], 2 * 2 * N);
        EXPECT_EQ(ea->ne[3], 2);
        T2wConfig cfg;
        cfg.flow_steps = N;
        cfg.threads_t2m = cfg.threads_voc = 1;
        T2wStream st(*m, cfg);
        EXPECT_EQ(st.flow_steps(), N);
        const std::vector<int32_t> codes(30, 1234);
        auto pcm = st.push(codes, true);
        ASSERT_FALSE(pcm.empty());
        for (float v : pcm) ASSERT_TRUE(std::isfinite(v));
        cfg.flow_steps = N == 5 ? 3 : 5;
        try {
            T2wStream bad(*m, cfg);
            ADD_FAILURE() << "--flow-steps " << cfg.flow_steps << " accepted on a " << N << "-step cache";
        } catch (const rtf::Error &e) {
            EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
            EXPECT_EQ(e.setting(), "flow-steps") << e.what();
            EXPECT_EQ(error_text(e).rfind("--flow-steps: ", 0), 0u) << error_text(e);
        }
    }
}

// The same inputs give the same bytes, whatever the thread count; another temperature or
// bundle gives other bytes (the comparison can fail).
TEST(T2wPrompt, IdenticalBytesTwice) {
    Kit kit;
    const PromptBundle b = random_bundle(11, 5);
    PromptCacheOptions o;
    o.steps = 3;
    o.threads = 1;
    write_prompt_cache(build_prompt_cache(*kit.model, b, o), kit.tmp.file("a.gguf"));
    o.threads = 2;
    write_prompt_cache(build_prompt_cache(*kit.model, b, o), kit.tmp.file("b.gguf"));
    write_prompt_cache(build_prompt_cache(*kit.model, b, o), kit.tmp.file("c.gguf"));
    o.temperature = 0.5f;
    write_prompt_cache(build_prompt_cache(*kit.model, b, o), kit.tmp.file("d.gguf"));
    const std::string a = slurp(kit.tmp.file("a.gguf"));
    ASSERT_GT(a.size(), 1000u);
    EXPECT_TRUE(a == slurp(kit.tmp.file("b.gguf")));
    EXPECT_TRUE(a == slurp(kit.tmp.file("c.gguf")));
    EXPECT_FALSE(a == slurp(kit.tmp.file("d.gguf")));
}

// Bad bundles: each error names the file and what was expected.
TEST(T2wPrompt, BadBundleFilesNamed) {
    rtf::test::ScratchDir tmp("t2w-prompt-bad");
    const PromptBundle good = random_bundle(11, 6);
    auto expect_error = [&](const std::string &dir, const std::string &file, const std::string &what) {
        try {
            (void)PromptBundle::load(dir);
            ADD_FAILURE() << "accepted: " << what;
        } catch (const rtf::Error &e) {
            EXPECT_EQ(e.kind(), rtf::ErrorKind::Usage);
            const std::string msg = e.what();
            EXPECT_NE(msg.find(file), std::string::npos) << what << ": " << msg;
            EXPECT_NE(msg.find("expected"), std::string::npos) << what << ": " << msg;
        }
    };
    good.save(tmp.file("ok"));
    EXPECT_EQ(PromptBundle::load(tmp.file("ok")).tokens, good.tokens);

    PromptBundle b = good;
    b.spk.resize(191);
    b.save(tmp.file("spk"));
    expect_error(tmp.file("spk"), "spk_f32.bin", "191 speaker floats");

    b = good;
    b.tokens.resize(3);
    b.mel.clear();
    b.mel.resize(80);
    b.save(tmp.file("short"));
    expect_error(tmp.file("short"), "prompt_tokens_i32.bin", "T_p = 3");

    b = good;
    b.mel.resize(b.mel.size() - 80);
    b.save(tmp.file("mel"));
    expect_error(tmp.file("mel"), "prompt_mel_btc_f32.bin", "T_m one row short");

    good.save(tmp.file("odd"));
    {
        std::ofstream f(tmp.file("odd") + "/prompt_mel_btc_f32.bin", std::ios::binary | std::ios::app);
        f.put('x');
    }
    expect_error(tmp.file("odd"), "prompt_mel_btc_f32.bin", "a partial float");

    good.save(tmp.file("missing"));
    fs::remove(tmp.file("missing") + "/spk_f32.bin");
    expect_error(tmp.file("missing"), "spk_f32.bin", "missing file");

    b = good;
    b.tokens[2] = 6561;
    try {
        b.validate("bundle-x", 6561);
        ADD_FAILURE() << "code 6561 accepted";
    } catch (const rtf::Error &e) {
        EXPECT_NE(std::string(e.what()).find("prompt_tokens_i32.bin"), std::string::npos) << e.what();
    }
    expect_error(tmp.file("nowhere"), "nowhere", "no directory");
}
