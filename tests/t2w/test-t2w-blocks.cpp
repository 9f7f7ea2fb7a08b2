// Block-level unit tests of token2mel (label `unit`): each graph block the engine builds
// (src/models/t2w/token2mel-blocks.h, the very functions token2mel.cpp calls) is built on
// tiny random weights, computed on the ggml CPU backend and compared with a plain C++
// reference written from the spec (minicpmo45-speak-path.md §3.4-3.6): naive loops,
// double accumulation. Covered: the conformer's relative-position MHSA (with its cache),
// one conformer layer, the DiT attention (with its prompt cache and the 600-key limit),
// the DiT time condition + adaLN modulation, one DiT block, and the host Euler/CFG step
// with its time schedule. Tolerance: |got - ref| <= 1e-4·(1 + |ref|) per element.
//
// Each comparison also checks that a plausible mistake (a different rel-shift, keys in the
// other order, no truncation, no guidance...) would be caught: the wrong reference must
// differ from the graph by far more than the tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include "common/env-guard.h"
#include "models/t2w/t2w-dsp.h"
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-ops.h"
#include "models/t2w/token2mel-blocks.h"
#include "plain-ops.h"

using namespace rtf::t2w;

namespace {

constexpr double kTol = 1e-4;

using namespace rtf::test::plain;  // Vec: row-major [T][C] (= ggml "ct" ne [C, T]) unless noted

// ---------------------------------------------------------------- graph harness

// Named weights (found by the engine's builders through GgufWeights::get) and free inputs,
// all with random data, in one no-alloc context; run() allocates, uploads and computes on
// the CPU backend (1 thread) and returns the requested outputs.
class Net {
public:
    explicit Net(unsigned seed) : rng_(seed) {
        ggml_init_params p{16 * 1024 * 1024, nullptr, true};
        ctx = ggml_init(p);
        w.path = "test-t2w-blocks weights";
    }
    ~Net() { ggml_free(ctx); }
    Net(const Net &) = delete;
    Net &operator=(const Net &) = delete;

    // Normal(mean, sd) values.
    ggml_tensor *weight(const std::string &name, std::vector<int64_t> ne, double sd, double mean = 0.0) {
        ggml_tensor *t = input(ne, sd, mean);
        ggml_set_name(t, name.c_str());
        w.tensors[name] = t;
        return t;
    }
    ggml_tensor *input(std::vector<int64_t> ne, double sd, double mean = 0.0) {
        ggml_tensor *t = ggml_new_tensor(ctx, GGML_TYPE_F32, static_cast<int>(ne.size()), ne.data());
        ggml_set_input(t);
        std::normal_distribution<double> d(mean, sd);
        std::vector<float> v(static_cast<size_t>(ggml_nelements(t)));
        for (auto &x : v) x = static_cast<float>(d(rng_));
        data_[t] = std::move(v);
        return t;
    }
    ggml_tensor *input(std::vector<int64_t> ne, const std::vector<float> &values) {
        ggml_tensor *t = ggml_new_tensor(ctx, GGML_TYPE_F32, static_cast<int>(ne.size()), ne.data());
        ggml_set_input(t);
        data_[t] = values;
        return t;
    }
    // The host values of a weight / input, as doubles.
    Vec host(const std::string &name) const { return host(w.get(name)); }
    Vec host(ggml_tensor *t) const {
        const auto &v = data_.at(t);
        return Vec(v.begin(), v.end());
    }
    std::vector<Vec> run(const std::vector<ggml_tensor *> &outs) {
        ggml_backend_t be = ggml_backend_dev_init(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU), nullptr);
        ggml_cgraph *gf = ggml_new_graph_custom(ctx, 4096, false);
        for (auto *o : outs) {
            ggml_set_output(o);
            ggml_build_forward_expand(gf, o);
        }
        ggml_gallocr_t a = ggml_gallocr_new(ggml_backend_get_default_buffer_type(be));
        std::vector<Vec> r;
        if (!ggml_gallocr_alloc_graph(a, gf)) {
            ADD_FAILURE() << "graph allocation failed";
        } else {
            for (auto &[t, d] : data_) {
                if (t->buffer) ggml_backend_tensor_set(t, d.data(), 0, d.size() * sizeof(float));  // else not in this graph
            }
            EXPECT_EQ(ggml_backend_graph_compute(be, gf), GGML_STATUS_SUCCESS);
            for (auto *o : outs) {
                std::vector<float> f(static_cast<size_t>(ggml_nelements(o)));
                ggml_backend_tensor_get(o, f.data(), 0, f.size() * sizeof(float));
                r.emplace_back(f.begin(), f.end());
            }
        }
        ggml_gallocr_free(a);
        ggml_backend_free(be);
        return r;
    }

    ggml_context *ctx = nullptr;
    GgufWeights w;  // only `tensors` is used (ctx/buffer stay null: nothing for it to free)

private:
    std::mt19937 rng_;
    std::map<ggml_tensor *, std::vector<float>> data_;
};

// max over i of |a - b| / (1 + |b|)
double max_err(const Vec &got, const Vec &ref) {
    EXPECT_EQ(got.size(), ref.size());
    double m = 0;
    for (size_t i = 0; i < std::min(got.size(), ref.size()); ++i) m = std::max(m, std::fabs(got[i] - ref[i]) / (1.0 + std::fabs(ref[i])));
    return m;
}

// Asserts got ≈ ref within kTol, and prints the error (the report's "max error per block").
void expect_match(const char *what, const Vec &got, const Vec &ref) {
    ASSERT_EQ(got.size(), ref.size()) << what;
    const double e = max_err(got, ref);
    std::printf("  %-40s max |got-ref|/(1+|ref|) = %.3g over %zu values\n", what, e, ref.size());
    EXPECT_LE(e, kTol) << what;
    for (double v : got) ASSERT_TRUE(std::isfinite(v)) << what;
}

// The graph must be far from a deliberately wrong reference (the test can fail).
void expect_discriminates(const char *what, const Vec &got, const Vec &wrong) {
    const double e = max_err(got, wrong);
    EXPECT_GT(e, 100 * kTol) << what << ": the test could not tell this mistake apart";
}

// ---------------------------------------------------------------- plain reference ops

Vec add(Vec a, const Vec &b) {
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
    return a;
}

// ---------------------------------------------------------------- conformer (spec §3.4)

enum class Shift { Espnet, None };

// Rel-pos MHSA as the spec states it, up to linear_out. y [Tq][d] (normed input);
// cache [H][Lc][2hd] (ggml ne [2hd, Lc, H]), of which time entries [0, Sc) are used;
// pe [2S-1][d]. Outputs [Tq][d] and the new cache [H][S][2hd].
struct MhaRef {
    Vec out, new_cache;
};
MhaRef ref_rel_pos_mha(const Net &n, const std::string &p, const Vec &y, const Vec &cache, int Lc, const Vec &pe, int Sc, int H,
                       int hd, Shift shift = Shift::Espnet, bool use_pos = true) {
    const int d = H * hd, Tq = static_cast<int>(y.size() / d), S = Sc + Tq, Tp = 2 * S - 1;
    const Vec q = linear(y, n.host(p + "self_attn.linear_q.weight"), n.host(p + "self_attn.linear_q.bias"), d, d);
    const Vec k = linear(y, n.host(p + "self_attn.linear_k.weight"), n.host(p + "self_attn.linear_k.bias"), d, d);
    const Vec v = linear(y, n.host(p + "self_attn.linear_v.weight"), n.host(p + "self_attn.linear_v.bias"), d, d);
    const Vec P = linear(pe, n.host(p + "self_attn.linear_pos.weight"), {}, d, d);  // [Tp][d]
    const Vec u = n.host(p + "self_attn.pos_bias_u"), vb = n.host(p + "self_attn.pos_bias_v");  // [H][hd]
    MhaRef r;
    r.new_cache.assign(static_cast<size_t>(H) * S * 2 * hd, 0.0);
    Vec o(static_cast<size_t>(Tq) * d);
    for (int h = 0; h < H; ++h) {
        // full key/value sequence [cache ; current]
        auto K = [&](int j, int c) { return j < Sc ? cache[(static_cast<size_t>(h) * Lc + j) * 2 * hd + c] : k[static_cast<size_t>(j - Sc) * d + h * hd + c]; };
        auto V = [&](int j, int c) { return j < Sc ? cache[(static_cast<size_t>(h) * Lc + j) * 2 * hd + hd + c] : v[static_cast<size_t>(j - Sc) * d + h * hd + c]; };
        for (int j = 0; j < S; ++j)
            for (int c = 0; c < hd; ++c) {
                r.new_cache[(static_cast<size_t>(h) * S + j) * 2 * hd + c] = K(j, c);
                r.new_cache[(static_cast<size_t>(h) * S + j) * 2 * hd + hd + c] = V(j, c);
            }
        // BD' [Tq][Tp], then the ESPnet rel-shift done literally: left-pad one zero column,
        // reinterpret the row-major buffer as (Tp+1) x Tq, drop the first row, reinterpret
        // as Tq x Tp, keep the first S columns.
        Vec bdp(static_cast<size_t>(Tq) * Tp);
        for (int i = 0; i < Tq; ++i)
            for (int r2 = 0; r2 < Tp; ++r2) {
                double s = 0;
                for (int c = 0; c < hd; ++c) s += (q[static_cast<size_t>(i) * d + h * hd + c] + vb[h * hd + c]) * P[static_cast<size_t>(r2) * d + h * hd + c];
                bdp[static_cast<size_t>(i) * Tp + r2] = s;
            }
        Vec padded(static_cast<size_t>(Tq) * (Tp + 1), 0.0);
        for (int i = 0; i < Tq; ++i)
            for (int r2 = 0; r2 < Tp; ++r2) padded[static_cast<size_t>(i) * (Tp + 1) + 1 + r2] = bdp[static_cast<size_t>(i) * Tp + r2];
        const Vec shifted(padded.begin() + Tq, padded.end());  // (Tp+1)xTq minus its first row = Tq x Tp
        for (int i = 0; i < Tq; ++i) {
            Vec sc(S);
            for (int j = 0; j < S; ++j) {
                double ac = 0;
                for (int c = 0; c < hd; ++c) ac += (q[static_cast<size_t>(i) * d + h * hd + c] + u[h * hd + c]) * K(j, c);
                const double bd = shift == Shift::Espnet ? shifted[static_cast<size_t>(i) * Tp + j] : bdp[static_cast<size_t>(i) * Tp + j];
                sc[j] = (ac + (use_pos ? bd : 0.0)) / std::sqrt(static_cast<double>(hd));
            }
            const Vec pr = softmax(sc);
            for (int c = 0; c < hd; ++c) {
                double s = 0;
                for (int j = 0; j < S; ++j) s += pr[j] * V(j, c);
                o[static_cast<size_t>(i) * d + h * hd + c] = s;
            }
        }
    }
    r.out = linear(o, n.host(p + "self_attn.linear_out.weight"), n.host(p + "self_attn.linear_out.bias"), d, d);
    return r;
}

// Random weights of one conformer layer under prefix p.
void conformer_weights(Net &n, const std::string &p, int d, int H, int hd, int ffn) {
    const double sd = 1.0 / std::sqrt(static_cast<double>(d));
    n.weight(p + "norm_mha.weight", {d}, 0.1, 1.0);
    n.weight(p + "norm_mha.bias", {d}, 0.1);
    for (const char *l : {"linear_q", "linear_k", "linear_v", "linear_out"}) {
        n.weight(p + "self_attn." + l + ".weight", {d, d}, sd);
        n.weight(p + "self_attn." + l + ".bias", {d}, 0.1);
    }
    n.weight(p + "self_attn.linear_pos.weight", {d, d}, sd);
    n.weight(p + "self_attn.pos_bias_u", {hd, H}, 0.5);
    n.weight(p + "self_attn.pos_bias_v", {hd, H}, 0.5);
    n.weight(p + "norm_ff.weight", {d}, 0.1, 1.0);
    n.weight(p + "norm_ff.bias", {d}, 0.1);
    n.weight(p + "feed_forward.w_1.weight", {d, ffn}, sd);
    n.weight(p + "feed_forward.w_1.bias", {ffn}, 0.1);
    n.weight(p + "feed_forward.w_2.weight", {ffn, d}, 1.0 / std::sqrt(static_cast<double>(ffn)));
    n.weight(p + "feed_forward.w_2.bias", {d}, 0.1);
}

// The cache of one layer as the engine passes it: a [2hd, Sc, H] view of slot `layer` of a
// [2hd, Lc, H, n_layers] cache tensor (token-rate layers read only the first Lc/2 entries).
ggml_tensor *cache_view(Net &n, ggml_tensor *all, int Sc, int layer) {
    return ggml_view_3d(n.ctx, all, all->ne[0], Sc, all->ne[2], all->nb[1], all->nb[2], static_cast<size_t>(layer) * all->nb[3]);
}
// Host copy [H][Lc][2hd] of slot `layer`.
Vec cache_slot(const Vec &all, int hd, int Lc, int H, int layer) {
    const size_t n = static_cast<size_t>(2) * hd * Lc * H;
    return Vec(all.begin() + static_cast<long>(n * layer), all.begin() + static_cast<long>(n * (layer + 1)));
}

// ---------------------------------------------------------------- DiT (spec §3.6)

struct DitRef {
    Vec x, new_cnn;
};

// DiT attention up to proj. m [T][h]; cache [Hd][L][2dh]; keys = [current ; cached], the
// last max_keys of them kept.
Vec ref_dit_attention(const Net &n, const std::string &p, const Vec &m, const Vec &cache, int L, int Hd, int dh, int max_keys,
                      bool current_first = true) {
    const int h = Hd * dh, T = static_cast<int>(m.size() / h);
    Vec q = linear(m, n.host(p + "attn.to_q.weight"), n.host(p + "attn.to_q.bias"), h, h);
    Vec k = linear(m, n.host(p + "attn.to_k.weight"), n.host(p + "attn.to_k.bias"), h, h);
    const Vec v = linear(m, n.host(p + "attn.to_v.weight"), n.host(p + "attn.to_v.bias"), h, h);
    q = layer_norm(q, dh, n.host(p + "attn.q_norm.weight"), n.host(p + "attn.q_norm.bias"), 1e-5);  // per head
    k = layer_norm(k, dh, n.host(p + "attn.k_norm.weight"), n.host(p + "attn.k_norm.bias"), 1e-5);
    Vec o(static_cast<size_t>(T) * h);
    for (int hh = 0; hh < Hd; ++hh) {
        std::vector<Vec> keys, vals;  // the full sequence, in order
        auto push_current = [&] {
            for (int t = 0; t < T; ++t) {
                keys.emplace_back(k.begin() + t * h + hh * dh, k.begin() + t * h + hh * dh + dh);
                vals.emplace_back(v.begin() + t * h + hh * dh, v.begin() + t * h + hh * dh + dh);
            }
        };
        auto push_cached = [&] {
            for (int j = 0; j < L; ++j) {
                const size_t b = (static_cast<size_t>(hh) * L + j) * 2 * dh;
                keys.emplace_back(cache.begin() + static_cast<long>(b), cache.begin() + static_cast<long>(b + dh));
                vals.emplace_back(cache.begin() + static_cast<long>(b + dh), cache.begin() + static_cast<long>(b + 2 * dh));
            }
        };
        if (current_first) {
            push_current();
            push_cached();
        } else {
            push_cached();
            push_current();
        }
        const size_t first = keys.size() > static_cast<size_t>(max_keys) ? keys.size() - max_keys : 0;
        for (int t = 0; t < T; ++t) {
            Vec sc;
            for (size_t j = first; j < keys.size(); ++j) {
                double s = 0;
                for (int c = 0; c < dh; ++c) s += q[static_cast<size_t>(t) * h + hh * dh + c] * keys[j][c];
                sc.push_back(s / std::sqrt(static_cast<double>(dh)));
            }
            const Vec pr = softmax(sc);
            for (int c = 0; c < dh; ++c) {
                double s = 0;
                for (size_t j = first; j < keys.size(); ++j) s += pr[j - first] * vals[j][c];
                o[static_cast<size_t>(t) * h + hh * dh + c] = s;
            }
        }
    }
    return linear(o, n.host(p + "attn.proj.weight"), n.host(p + "attn.proj.bias"), h, h);
}

// mod(LN(z), shift, scale) = LN(z)·(1 + scale) + shift; LN affine-free, eps 1e-6.
Vec modulate(const Vec &z, const Vec &mod, int h, int jshift, int jscale) {
    Vec y = layer_norm(z, h, {}, {}, 1e-6);
    for (size_t r = 0; r < y.size() / h; ++r)
        for (int c = 0; c < h; ++c) y[r * h + c] = y[r * h + c] * (1.0 + mod[jscale * h + c]) + mod[jshift * h + c];
    return y;
}
// x + gate ⊙ y (gate = chunk j of mod, per channel)
Vec gated_add(const Vec &x, const Vec &y, const Vec &mod, int h, int j) {
    Vec r = x;
    for (size_t i = 0; i < r.size(); ++i) r[i] += mod[j * h + static_cast<int>(i % h)] * y[i];
    return r;
}

// One DiT block. x [T][h]; mod [9h]; att cache [Hd][L][2dh]; cnn cache [2][2h] (frame-major).
DitRef ref_dit_block(const Net &n, const std::string &p, const Vec &x0, const Vec &mod, const Vec &att, int L, const Vec &cnn, int Hd,
                     int dh, int max_keys, double (*act)(double) = gelu_ggml) {
    const int h = Hd * dh, T = static_cast<int>(x0.size() / h);
    DitRef r;
    Vec x = gated_add(x0, ref_dit_attention(n, p, modulate(x0, mod, h, 0, 1), att, L, Hd, dh, max_keys), mod, h, 2);
    // conv block: two causal K=3 convs with 2 cached input frames each
    const Vec m3 = modulate(x, mod, h, 6, 7);
    Vec in1, in2;
    for (int f = 0; f < 2; ++f)
        for (int c = 0; c < h; ++c) in1.push_back(cnn[static_cast<size_t>(f) * 2 * h + c]);
    in1.insert(in1.end(), m3.begin(), m3.end());
    Vec y = conv1d(in1, n.host(p + "conv.block.1.weight"), n.host(p + "conv.block.1.bias"), 3, h, h);
    y = layer_norm(y, h, n.host(p + "conv.block.3.weight"), n.host(p + "conv.block.3.bias"), 1e-5);
    for (auto &v : y) v = mish(v);
    for (int f = 0; f < 2; ++f)
        for (int c = 0; c < h; ++c) in2.push_back(cnn[static_cast<size_t>(f) * 2 * h + h + c]);
    in2.insert(in2.end(), y.begin(), y.end());
    y = conv1d(in2, n.host(p + "conv.block.6.weight"), n.host(p + "conv.block.6.bias"), 3, h, h);
    for (int f = 0; f < 2; ++f) {  // new caches: last 2 input frames of each conv
        for (int c = 0; c < h; ++c) r.new_cnn.push_back(in1[static_cast<size_t>(T + f) * h + c]);
        for (int c = 0; c < h; ++c) r.new_cnn.push_back(in2[static_cast<size_t>(T + f) * h + c]);
    }
    x = gated_add(x, y, mod, h, 8);
    // MLP
    const int mlp = static_cast<int>(n.host(p + "mlp.fc1.bias").size());
    y = linear(modulate(x, mod, h, 3, 4), n.host(p + "mlp.fc1.weight"), n.host(p + "mlp.fc1.bias"), h, mlp);
    for (auto &v : y) v = act(v);
    y = linear(y, n.host(p + "mlp.fc2.weight"), n.host(p + "mlp.fc2.bias"), mlp, h);
    r.x = gated_add(x, y, mod, h, 5);
    return r;
}

void dit_block_weights(Net &n, const std::string &p, int h, int dh, int mlp) {
    const double sd = 1.0 / std::sqrt(static_cast<double>(h));
    for (const char *l : {"to_q", "to_k", "to_v", "proj"}) {
        n.weight(p + "attn." + l + ".weight", {h, h}, sd);
        n.weight(p + "attn." + l + ".bias", {h}, 0.1);
    }
    for (const char *l : {"q_norm", "k_norm"}) {
        n.weight(p + "attn." + l + ".weight", {dh}, 0.1, 1.0);
        n.weight(p + "attn." + l + ".bias", {dh}, 0.1);
    }
    n.weight(p + "conv.block.1.weight", {3, h, h}, 1.0 / std::sqrt(3.0 * h));
    n.weight(p + "conv.block.1.bias", {h}, 0.1);
    n.weight(p + "conv.block.3.weight", {h}, 0.1, 1.0);
    n.weight(p + "conv.block.3.bias", {h}, 0.1);
    n.weight(p + "conv.block.6.weight", {3, h, h}, 1.0 / std::sqrt(3.0 * h));
    n.weight(p + "conv.block.6.bias", {h}, 0.1);
    n.weight(p + "mlp.fc1.weight", {h, mlp}, sd);
    n.weight(p + "mlp.fc1.bias", {mlp}, 0.1);
    n.weight(p + "mlp.fc2.weight", {mlp, h}, 1.0 / std::sqrt(static_cast<double>(mlp)));
    n.weight(p + "mlp.fc2.bias", {h}, 0.1);
}

// The 9·h modulation vector: shifts/scales small, gates O(1).
std::vector<float> random_mod(int h, unsigned seed) {
    std::mt19937 r(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> m(static_cast<size_t>(9) * h);
    for (int j = 0; j < 9; ++j)
        for (int c = 0; c < h; ++c) m[static_cast<size_t>(j) * h + c] = d(r) * ((j == 2 || j == 5 || j == 8) ? 1.0f : 0.3f);
    return m;
}

}  // namespace

// ---------------------------------------------------------------- tests

// Relative-position MHSA with a cache (a view into slot 1 of a multi-layer cache, as the
// engine passes it): token-rate style (the first Sc = Lc/2 of the Lc cached entries are
// read) and mel-rate style (all Lc).
// Random PE rows (not the sin table) so every relative offset carries a distinct value.
TEST(T2wBlocks, ConformerRelPosAttention) {
    const int H = 2, hd = 8, d = H * hd, Tq = 5;
    for (const int Sc : {4, 8}) {
        SCOPED_TRACE("Sc=" + std::to_string(Sc));
        const int Lc = 8, S = Sc + Tq, NL = 3, layer = 1;
        Net n(11 + Sc);
        const std::string p = "encoders.1.";
        conformer_weights(n, p, d, H, hd, 2 * d);
        ggml_tensor *y = n.input({d, Tq}, 1.0);
        ggml_tensor *cache = n.input({2 * hd, Lc, H, NL}, 1.0);
        ggml_tensor *pe = n.input({d, 2 * S - 1}, 1.0);
        ggml_tensor *new_cache = nullptr;
        ggml_tensor *o = blocks::rel_pos_mha(n.ctx, n.w, p, y, cache_view(n, cache, Sc, layer), pe, Sc, H, hd, &new_cache);
        auto got = n.run({o, new_cache});
        const Vec c = cache_slot(n.host(cache), hd, Lc, H, layer);
        const MhaRef ref = ref_rel_pos_mha(n, p, n.host(y), c, Lc, n.host(pe), Sc, H, hd);
        expect_match("rel-pos MHSA output", got[0], ref.out);
        expect_match("rel-pos MHSA new K|V cache", got[1], ref.new_cache);
        expect_discriminates("no rel-shift", got[0], ref_rel_pos_mha(n, p, n.host(y), c, Lc, n.host(pe), Sc, H, hd, Shift::None).out);
        expect_discriminates("no positional term", got[0],
                             ref_rel_pos_mha(n, p, n.host(y), c, Lc, n.host(pe), Sc, H, hd, Shift::Espnet, false).out);
    }
}

// One conformer layer (pre-norm MHSA + SiLU FFN, both residual), mel-rate style (the whole
// cache slot is read), with the engine's sin/cos position table.
TEST(T2wBlocks, ConformerLayer) {
    const int H = 2, hd = 8, d = H * hd, ffn = 48, Tq = 6, Lc = 7, Sc = Lc, S = Sc + Tq, NL = 2, layer = 1;
    Net n(21);
    const std::string p = "up_encoders.0.";
    conformer_weights(n, p, d, H, hd, ffn);
    ggml_tensor *x = n.input({d, Tq}, 1.0);
    ggml_tensor *cache = n.input({2 * hd, Lc, H, NL}, 1.0);
    const std::vector<float> table = dsp::rel_pos_table(d, S);
    ggml_tensor *pe = n.input({d, 2 * S - 1}, table);
    ggml_tensor *new_cache = nullptr;
    ggml_tensor *out = blocks::conformer_layer(n.ctx, n.w, p, x, cache_view(n, cache, Sc, layer), pe, Sc, H, hd, &new_cache);
    auto got = n.run({out, new_cache});

    const Vec c = cache_slot(n.host(cache), hd, Lc, H, layer);
    auto reference = [&](double ln_eps, bool ffn_residual) {
        Vec xr = n.host(x);
        const Vec y = layer_norm(xr, d, n.host(p + "norm_mha.weight"), n.host(p + "norm_mha.bias"), ln_eps);
        const MhaRef a = ref_rel_pos_mha(n, p, y, c, Lc, n.host(pe), Sc, H, hd);
        xr = add(xr, a.out);
        Vec f = layer_norm(xr, d, n.host(p + "norm_ff.weight"), n.host(p + "norm_ff.bias"), ln_eps);
        f = linear(f, n.host(p + "feed_forward.w_1.weight"), n.host(p + "feed_forward.w_1.bias"), d, ffn);
        for (auto &v : f) v = silu(v);
        f = linear(f, n.host(p + "feed_forward.w_2.weight"), n.host(p + "feed_forward.w_2.bias"), ffn, d);
        return std::make_pair(ffn_residual ? add(xr, f) : f, a.new_cache);
    };
    const auto ref = reference(1e-12, true);
    expect_match("conformer layer output", got[0], ref.first);
    expect_match("conformer layer new K|V cache", got[1], ref.second);
    expect_discriminates("FFN without residual", got[0], reference(1e-12, false).first);
}

// DiT attention: q/k LayerNorm per head, keys/values [current ; cached]; with and without
// the key limit (TOKEN2WAV_FM_MAX_T_CACHE, here 8 < T + L = 11: the 3 oldest current
// frames drop out). The cache is a view into slot 2 of a bigger buffer, as in the engine.
TEST(T2wBlocks, DitAttention) {
    const int Hd = 2, dh = 8, h = Hd * dh, T = 6, L = 5, slots = 3, slot = 2;
    for (const int max_keys : {blocks::kDitMaxKeys, 8}) {
        SCOPED_TRACE("max_keys=" + std::to_string(max_keys));
        Net n(31 + max_keys);
        const std::string p = "estimator.blocks.3.";
        dit_block_weights(n, p, h, dh, 2 * h);
        ggml_tensor *m = n.input({h, T}, 1.0);
        ggml_tensor *all = n.input({2 * dh, L, Hd * slots}, 1.0);
        ggml_tensor *att = ggml_view_3d(n.ctx, all, 2 * dh, L, Hd, all->nb[1], all->nb[2], static_cast<size_t>(slot) * Hd * all->nb[2]);
        ggml_tensor *o = blocks::dit_attention(n.ctx, n.w, p, m, att, Hd, dh, max_keys);
        const Vec av = n.host(all);
        const size_t per = static_cast<size_t>(2) * dh * L * Hd;
        const Vec cache(av.begin() + static_cast<long>(per * slot), av.begin() + static_cast<long>(per * (slot + 1)));
        // the engine's path: cached keys read in place, V^T of the cache prepared once (3
        // spare columns in front, as a shorter window leaves them)
        const int R = T + L + 3;
        const std::vector<float> kv(cache.begin(), cache.end());
        std::vector<float> vtv(static_cast<size_t>(R) * dh * Hd, -7.0f);
        blocks::fill_vt_cache(kv.data(), L, Hd, dh, vtv.data(), R);
        ggml_tensor *vt = n.input({R, dh, Hd}, vtv);
        ggml_tensor *o_vt = blocks::dit_attention(n.ctx, n.w, p, m, att, Hd, dh, max_keys, nullptr, vt);
        std::vector<float> kbv(vtv.size(), -7.0f);
        blocks::fill_k_cache(kv.data(), L, Hd, dh, kbv.data(), R);
        ggml_tensor *vt2 = n.input({R, dh, Hd}, vtv);
        ggml_tensor *kb = n.input({dh, R, Hd}, kbv);
        ggml_tensor *o_k = blocks::dit_attention(n.ctx, n.w, p, m, att, Hd, dh, max_keys, nullptr, vt2, kb);
        // the fused CPU op (dit-attention.h; beyond the key limit it falls back to the graph)
        ggml_tensor *o_f = blocks::dit_attention(n.ctx, n.w, p, m, att, Hd, dh, max_keys, nullptr, nullptr, nullptr, true);
        auto got = n.run({o, o_vt, o_k, o_f});
        expect_match("DiT attention output", got[0], ref_dit_attention(n, p, n.host(m), cache, L, Hd, dh, max_keys));
        expect_match("DiT attention output (V^T cache)", got[1], ref_dit_attention(n, p, n.host(m), cache, L, Hd, dh, max_keys));
        expect_match("DiT attention output (K, V^T caches)", got[2], ref_dit_attention(n, p, n.host(m), cache, L, Hd, dh, max_keys));
        expect_match("DiT attention output (fused op)", got[3], ref_dit_attention(n, p, n.host(m), cache, L, Hd, dh, max_keys));
        if (max_keys < T + L) {
            expect_discriminates("no key limit", got[0], ref_dit_attention(n, p, n.host(m), cache, L, Hd, dh, 1 << 20));
            expect_discriminates("[cached ; current] order", got[0], ref_dit_attention(n, p, n.host(m), cache, L, Hd, dh, max_keys, false));
        }
    }
}

// Time condition and adaLN modulation (computed once per Euler step by the engine):
// mod = W·SiLU(mlp.2(SiLU(mlp.0([cos(1000t·f_k) ; sin(1000t·f_k)])))) + b, f_k = 10000^(-k/half).
TEST(T2wBlocks, DitTimeConditionAndModulation) {
    const int freq = 32, half = freq / 2, h = 16;
    Net n(41);
    n.weight("estimator.t_embedder.mlp.0.weight", {freq, h}, 1.0 / std::sqrt(static_cast<double>(freq)));
    n.weight("estimator.t_embedder.mlp.0.bias", {h}, 0.1);
    n.weight("estimator.t_embedder.mlp.2.weight", {h, h}, 1.0 / std::sqrt(static_cast<double>(h)));
    n.weight("estimator.t_embedder.mlp.2.bias", {h}, 0.1);
    n.weight("estimator.blocks.0.adaLN_modulation.1.weight", {h, 9 * h}, 1.0 / std::sqrt(static_cast<double>(h)));
    n.weight("estimator.blocks.0.adaLN_modulation.1.bias", {9 * h}, 0.1);
    const float tval = blocks::flow_time_span(5)[2];  // 0.190983
    ggml_tensor *t = n.input({1}, std::vector<float>{tval});
    ggml_tensor *cs = blocks::dit_time_condition(n.ctx, n.w, t, freq, h);
    ggml_tensor *mod = ops::linear(n.ctx, cs, n.w.get("estimator.blocks.0.adaLN_modulation.1.weight"),
                                   n.w.get("estimator.blocks.0.adaLN_modulation.1.bias"));  // as build_constants
    auto got = n.run({mod});
    auto reference = [&](bool cos_first) {
        Vec emb(freq);
        for (int k = 0; k < half; ++k) {
            const double a = 1000.0 * tval * std::exp(-std::log(10000.0) * k / half);
            emb[k] = cos_first ? std::cos(a) : std::sin(a);
            emb[k + half] = cos_first ? std::sin(a) : std::cos(a);
        }
        Vec c = linear(emb, n.host("estimator.t_embedder.mlp.0.weight"), n.host("estimator.t_embedder.mlp.0.bias"), freq, h);
        for (auto &v : c) v = silu(v);
        c = linear(c, n.host("estimator.t_embedder.mlp.2.weight"), n.host("estimator.t_embedder.mlp.2.bias"), h, h);
        for (auto &v : c) v = silu(v);
        return linear(c, n.host("estimator.blocks.0.adaLN_modulation.1.weight"), n.host("estimator.blocks.0.adaLN_modulation.1.bias"), h, 9 * h);
    };
    expect_match("adaLN modulation (9h)", got[0], reference(true));
    expect_discriminates("[sin ; cos] embedding", got[0], reference(false));
}

// One DiT block: adaLN-modulated attention, causal conv block (2-frame caches in and out),
// GELU MLP, each gated and residual. The modulation vector, the attention cache and the conv
// cache are views into bigger buffers (a column of the per-step adaLN table, a slot of the
// prompt cache, a block of the conv-cache input), as the engine passes them.
TEST(T2wBlocks, DitBlock) {
    const int Hd = 2, dh = 8, h = Hd * dh, mlp = 48, T = 6, L = 5;
    for (const int max_keys : {blocks::kDitMaxKeys, 9}) {
        SCOPED_TRACE("max_keys=" + std::to_string(max_keys));
        Net n(51 + max_keys);
        const std::string p = "estimator.blocks.1.";
        dit_block_weights(n, p, h, dh, mlp);
        ggml_tensor *x = n.input({h, T}, 1.0);
        std::vector<float> mods;  // [9h, 3]: this block's column is 1
        for (int b = 0; b < 3; ++b) {
            auto m = random_mod(h, 60 + b);
            mods.insert(mods.end(), m.begin(), m.end());
        }
        ggml_tensor *ada = n.input({9 * h, 3}, mods);
        ggml_tensor *att_all = n.input({2 * dh, L, Hd * 4}, 1.0);
        ggml_tensor *cnn_all = n.input({2 * h, 2, 3}, 1.0);
        ggml_tensor *mod = ggml_view_1d(n.ctx, ada, 9 * h, ada->nb[1]);
        ggml_tensor *att = ggml_view_3d(n.ctx, att_all, 2 * dh, L, Hd, att_all->nb[1], att_all->nb[2], 3 * Hd * att_all->nb[2]);
        ggml_tensor *cnn = ggml_view_2d(n.ctx, cnn_all, 2 * h, 2, cnn_all->nb[1], 2 * cnn_all->nb[2]);
        ggml_tensor *new_cnn = nullptr;
        ggml_tensor *out = blocks::dit_block(n.ctx, n.w, p, x, mod, att, cnn, Hd, dh, &new_cnn, max_keys);
        auto got = n.run({out, new_cnn});

        const Vec modv(mods.begin() + 9 * h, mods.begin() + 18 * h);
        const Vec av = n.host(att_all), cv = n.host(cnn_all);
        const size_t per = static_cast<size_t>(2) * dh * L * Hd;
        const Vec att_c(av.begin() + static_cast<long>(3 * per), av.begin() + static_cast<long>(4 * per));
        const Vec cnn_c(cv.begin() + 2 * 4 * h, cv.begin() + 3 * 4 * h);
        const DitRef ref = ref_dit_block(n, p, n.host(x), modv, att_c, L, cnn_c, Hd, dh, max_keys);
        expect_match("DiT block output", got[0], ref.x);
        expect_match("DiT block new conv caches", got[1], ref.new_cnn);
        // GELU evaluated exactly instead of ggml's fp16 table: a ~1e-3 effect, reported only
        const double eg = max_err(got[0], ref_dit_block(n, p, n.host(x), modv, att_c, L, cnn_c, Hd, dh, max_keys, gelu_tanh).x);
        std::printf("  (vs exact tanh-GELU: %.3g, ggml's GELU is an fp16 table)\n", eg);
        const Vec other_mod(mods.begin(), mods.begin() + 9 * h);
        expect_discriminates("another block's modulation", got[0], ref_dit_block(n, p, n.host(x), other_mod, att_c, L, cnn_c, Hd, dh, max_keys).x);
        expect_discriminates("a zero conv cache", got[0], ref_dit_block(n, p, n.host(x), modv, att_c, L, Vec(cnn_c.size(), 0.0), Hd, dh, max_keys).x);
    }
}

// Flow-matching solver: the time schedule t_i = 1 - cos(πi/(2N)) and one Euler step with
// classifier-free guidance, x += (t_{i+1} - t_i)·((1+r)·f_cond - r·f_uncond), r = 0.7; and
// without guidance x += dt·f_cond.
// The fused Mish (one custom op, one vectorised exponential) against double precision and
// against the reference's float op chain exp -> +1 -> log -> tanh, over the range a DiT conv
// block sees and beyond (overflow, underflow, ±0). Bound: |got - exact| <= 2e-6·(1 + |z|).
// The vectorised GELU equals ggml_gelu bit for bit: every fp16 value in (-10, 10) and values
// between them, the clamps at +-10, the tails, and a length that leaves a masked tail.
TEST(T2wBlocks, GeluFastEqualsGgmlGelu) {
    std::vector<float> z;
    for (int i = -100000; i <= 100000; i += 3) z.push_back(static_cast<float>(i) * 1e-4f);
    for (float v : {-1000.0f, -10.5f, -10.0f, -9.9999f, -0.0f, 0.0f, 1e-30f, -1e-30f, 9.9999f, 10.0f, 10.5f, 1000.0f}) z.push_back(v);
    z.push_back(0.5f);  // 66680 values: not a multiple of 16
    // this CPU's row kernel, then the AVX2 one (RTF_T2W_PACKED=avx2; the same where it is the CPU's)
    for (const char *packed : {"", "avx2"}) {
        rtf::test::EnvGuard env("RTF_T2W_PACKED", *packed ? packed : std::getenv("RTF_T2W_PACKED"));
        Net n(43);
        ggml_tensor *x = n.input({static_cast<int64_t>(z.size())}, z);
        const auto got = n.run({blocks::gelu_fast(n.ctx, x), ggml_gelu(n.ctx, x)});
        size_t differ = 0;
        for (size_t i = 0; i < z.size(); ++i) differ += std::memcmp(&got[0][i], &got[1][i], sizeof(float)) != 0;
        EXPECT_EQ(differ, 0u) << "RTF_T2W_PACKED=" << packed;
        EXPECT_EQ(got[0].back(), got[1].back());
    }
}

TEST(T2wBlocks, MishFusedMatchesExactAndChain) {
    std::vector<float> z;
    for (int i = -2000; i <= 2000; ++i) z.push_back(static_cast<float>(i) * 0.01f);  // [-20, 20] step 0.01
    for (float v : {-1000.0f, -100.0f, -88.0f, -87.5f, -50.0f, -0.0f, 0.0f, 1e-30f, 25.0f, 88.0f, 89.0f, 1000.0f}) z.push_back(v);
    Net n(41);
    ggml_tensor *x = n.input({static_cast<int64_t>(z.size())}, z);
    const auto got = n.run({blocks::mish(n.ctx, x), blocks::mish_chain(n.ctx, x)});
    double worst = 0, worst_chain = 0;
    for (size_t i = 0; i < z.size(); ++i) {
        const double exact = mish(z[i]);
        ASSERT_TRUE(std::isfinite(got[0][i])) << "z=" << z[i];
        worst = std::max(worst, std::fabs(got[0][i] - exact) / (1.0 + std::fabs(exact)));
        if (std::fabs(z[i]) <= 20) worst_chain = std::max(worst_chain, std::fabs(got[0][i] - got[1][i]) / (1.0 + std::fabs(exact)));
    }
    std::printf("  fused Mish: max |got-exact|/(1+|exact|) = %.3g, vs the float op chain %.3g\n", worst, worst_chain);
    EXPECT_LE(worst, 2e-6);
    EXPECT_LE(worst_chain, 2e-6);
}

TEST(T2wBlocks, EulerStepWithCfg) {
    for (const int N : {1, 5, 10}) {
        const auto t = blocks::flow_time_span(N);
        ASSERT_EQ(t.size(), static_cast<size_t>(N + 1));
        for (int i = 0; i <= N; ++i) EXPECT_NEAR(t[i], 1.0 - std::cos(M_PI * i / (2.0 * N)), 1e-6) << "N=" << N << " i=" << i;
    }
    const double spec5[] = {0, 0.048943, 0.190983, 0.412215, 0.690983, 1};  // spec §3.5
    const auto t5 = blocks::flow_time_span(5);
    for (int i = 0; i <= 5; ++i) EXPECT_NEAR(t5[i], spec5[i], 1e-6);
    EXPECT_FLOAT_EQ(blocks::kCfgRate, 0.7f);

    const size_t n = 80 * 7;
    std::mt19937 r(71);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> x0(n), fc(n), fu(n);
    for (size_t i = 0; i < n; ++i) {
        x0[i] = d(r);
        fc[i] = d(r);
        fu[i] = d(r);
    }
    for (int s = 0; s < 5; ++s) {
        const float dt = t5[s + 1] - t5[s];
        std::vector<float> x = x0, y = x0;
        blocks::euler_cfg_step(x.data(), fc.data(), fu.data(), n, dt);
        blocks::euler_cfg_step(y.data(), fc.data(), nullptr, n, dt);
        Vec ref(n), ref_nocfg(n), wrong(n);
        const double dtd = (1.0 - std::cos(M_PI * (s + 1) / 10.0)) - (1.0 - std::cos(M_PI * s / 10.0));
        for (size_t i = 0; i < n; ++i) {
            ref[i] = x0[i] + dtd * (1.7 * fc[i] - 0.7 * fu[i]);
            ref_nocfg[i] = x0[i] + dtd * fc[i];
            wrong[i] = x0[i] + dtd * (0.7 * fc[i] + 0.3 * fu[i]);  // guidance the other way round
        }
        const Vec gx(x.begin(), x.end()), gy(y.begin(), y.end());
        expect_match(("Euler+CFG step " + std::to_string(s)).c_str(), gx, ref);
        expect_match(("Euler step, CFG off " + std::to_string(s)).c_str(), gy, ref_nocfg);
        expect_discriminates("no guidance", gx, ref_nocfg);
        expect_discriminates("inverted guidance", gx, wrong);
    }
}
