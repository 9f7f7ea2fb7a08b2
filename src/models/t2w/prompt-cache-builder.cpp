#include "models/t2w/prompt-cache-builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include <ggml-backend.h>
#include <ggml.h>
#include <gguf.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/t2w/t2w-backend.h"
#include "models/t2w/t2w-dsp.h"
#include "models/t2w/t2w-graph.h"
#include "models/t2w/t2w-op-profile.h"
#include "models/t2w/t2w-ops.h"
#include "models/t2w/token2mel-blocks.h"

namespace rtf::t2w {

namespace fs = std::filesystem;
using ops::conv1d_ct;
using ops::layer_norm;
using ops::linear;
using ops::slice_t;

namespace {

// Whole file as values of T; Usage errors name the file and what it should hold.
template <typename T>
std::vector<T> read_values(const fs::path &path, const char *what) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) throw_usage("prompt bundle: " + path.string() + " not found (expected " + what + ")");
    const auto bytes = fs::file_size(path, ec);
    if (ec) throw_usage("prompt bundle: cannot read the size of " + path.string());
    if (bytes == 0 || bytes % sizeof(T) != 0) {
        throw_usage("prompt bundle: " + path.string() + " has " + std::to_string(bytes) + " bytes, not a whole number (> 0) of " +
                    std::to_string(sizeof(T)) + "-byte values (expected " + what + ")");
    }
    std::vector<T> v(bytes / sizeof(T));
    std::FILE *f = std::fopen(path.string().c_str(), "rb");
    if (!f) throw_usage("prompt bundle: cannot open " + path.string());
    const size_t got = std::fread(v.data(), sizeof(T), v.size(), f);
    std::fclose(f);
    if (got != v.size()) throw_usage("prompt bundle: short read of " + path.string());
    return v;
}

template <typename T>
void write_values(const fs::path &path, const std::vector<T> &v) {
    std::FILE *f = std::fopen(path.string().c_str(), "wb");
    if (!f) throw_setup("cannot write " + path.string());
    const bool ok = std::fwrite(v.data(), sizeof(T), v.size(), f) == v.size();
    if (std::fclose(f) != 0 || !ok) throw_setup("write failed for " + path.string());
}

std::string ne_str(const std::vector<int64_t> &ne) {
    std::string s = "[";
    for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

// One CPU backend and the graph we compute on it, with checked compute.
void compute(ggml_backend_t be, Graph &g, const char *what) {
    if (compute_graph(be, g.gf, what) != GGML_STATUS_SUCCESS) {
        throw_runtime(std::string("t2w-prompt: ") + what + " graph compute failed on " + ggml_backend_name(be));
    }
}

void set_zero(ggml_tensor *t) {
    const std::vector<uint8_t> z(ggml_nbytes(t), 0);
    ggml_backend_tensor_set(t, z.data(), 0, z.size());
}

std::vector<float> get_f32(ggml_tensor *t) {
    std::vector<float> v(static_cast<size_t>(ggml_nelements(t)));
    ggml_backend_tensor_get(t, v.data(), 0, v.size() * sizeof(float));
    return v;
}

}  // namespace

// ---------------------------------------------------------------- bundle

PromptBundle PromptBundle::load(const std::string &dir) {
    const fs::path d(dir);
    std::error_code ec;
    if (!fs::is_directory(d, ec)) throw_usage("prompt bundle: " + dir + " is not a directory (expected the folder holding " +
                                              kBundleSpkFile + ", " + kBundleTokensFile + ", " + kBundleMelFile + ")");
    PromptBundle b;
    b.spk = read_values<float>(d / kBundleSpkFile, "192 float32 values: the speaker x-vector");
    b.tokens = read_values<int32_t>(d / kBundleTokensFile, "T_p > 3 int32 audio codes");
    b.mel = read_values<float>(d / kBundleMelFile, "T_m x 80 float32 values, T_m = 2*(T_p-3), time-major");
    b.validate(dir);
    return b;
}

void PromptBundle::validate(const std::string &where, int vocab) const {
    const fs::path d(where);
    if (spk.size() != static_cast<size_t>(kSpkDim)) {
        throw_usage("prompt bundle: " + (d / kBundleSpkFile).string() + " holds " + std::to_string(spk.size()) +
                    " float32 values, expected 192 (the speaker x-vector)");
    }
    const int Tp = n_tokens();
    if (Tp <= 3) {
        throw_usage("prompt bundle: " + (d / kBundleTokensFile).string() + " holds " + std::to_string(Tp) +
                    " int32 codes, expected more than 3 (the last 3 are the encoder's look-ahead)");
    }
    const size_t want = static_cast<size_t>(2) * (Tp - 3) * kMelBins;
    if (mel.size() != want) {
        std::string got = std::to_string(mel.size()) + " float32 values";
        if (mel.size() % kMelBins == 0) got += " (" + std::to_string(mel.size() / kMelBins) + " rows of 80)";
        throw_usage("prompt bundle: " + (d / kBundleMelFile).string() + " holds " + got + ", expected T_m = 2*(T_p-3) = " +
                    std::to_string(2 * (Tp - 3)) + " rows of 80 (" + std::to_string(want) + " values) for the " +
                    std::to_string(Tp) + " codes of " + kBundleTokensFile);
    }
    for (float v : spk)
        if (!std::isfinite(v)) throw_usage("prompt bundle: " + (d / kBundleSpkFile).string() + " holds a NaN or infinite value");
    for (float v : mel)
        if (!std::isfinite(v)) throw_usage("prompt bundle: " + (d / kBundleMelFile).string() + " holds a NaN or infinite value");
    for (size_t i = 0; i < tokens.size(); ++i) {
        const int32_t t = tokens[i];
        if (t < 0 || (vocab > 0 && t >= vocab)) {
            throw_usage("prompt bundle: " + (d / kBundleTokensFile).string() + ": code " + std::to_string(t) + " at index " +
                        std::to_string(i) + " is out of range (audio codes are 0.." +
                        (vocab > 0 ? std::to_string(vocab - 1) : std::string("6560")) + ")");
        }
    }
}

void PromptBundle::save(const std::string &dir) const {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw_setup("cannot create " + dir + ": " + ec.message());
    write_values(fs::path(dir) / kBundleSpkFile, spk);
    write_values(fs::path(dir) / kBundleTokensFile, tokens);
    write_values(fs::path(dir) / kBundleMelFile, mel);
}

// ---------------------------------------------------------------- options, result

void PromptCacheOptions::validate() const {
    if (steps < 1 || steps > 100) throw_setting("steps", std::to_string(steps) + ": the Euler step count must be 1..100 (the reference uses 5)");
    if (!(temperature > 0.0f) || !std::isfinite(temperature)) {
        throw_setting("temperature", std::to_string(temperature) + ": must be a finite number > 0 (the reference uses 1.0)");
    }
    if (threads < 1 || threads > 512) throw_setting("threads", std::to_string(threads) + ": must be 1..512");
}

nlohmann::json PromptCache::to_json() const {
    return {{"n_timesteps", n_timesteps},
            {"temperature", temperature},
            {"att_len", att_len},
            {"tensors",
             {{"prompt_cache.spk_cb", ne_spk},
              {"prompt_cache.conformer_cnn_cache", ne_conf_cnn},
              {"prompt_cache.conformer_att_cache", ne_conf_att},
              {"prompt_cache.estimator_cnn_cache", ne_est_cnn},
              {"prompt_cache.estimator_att_cache", ne_est_att}}}};
}

// ---------------------------------------------------------------- §3.9

PromptCache build_prompt_cache(const T2wModel &m, const PromptBundle &bundle, const PromptCacheOptions &opt) {
    opt.validate();
    const EncoderDims &E = m.enc_dims();
    const DitDims &D = m.dit_dims();
    bundle.validate("the prompt bundle", E.vocab);
    if (E.lookahead != 3) {
        throw_usage(m.dir() + "/encoder.gguf: pre-look-ahead of " + std::to_string(E.lookahead) +
                    " frames; a prompt bundle's T_m = 2*(T_p-3) assumes 3");
    }
    const int N = opt.steps;
    const int d = E.d_model, H = E.n_heads, hd = E.head_dim;
    const int Tp = bundle.n_tokens(), T1 = Tp - E.lookahead, Tm = E.up_rate * T1;
    const int NL = E.n_token_layers + E.n_mel_layers;
    const int cpl = E.conv2_k - 1, cup = E.up_k - 1;
    const int h = D.hidden, Hd = D.n_heads, dh = D.head_dim;
    const int total = 1 + 2 * N;
    const GgufWeights &we = m.encoder(), &wx = m.flow_extra(), &wf = m.flow();

    ggml_backend_t be = make_backend(m.device_t2m(), opt.threads);
    struct BackendFree {
        ggml_backend_t b;
        ~BackendFree() { ggml_backend_free(b); }
    } be_guard{be};
    const bool cpu = ggml_backend_dev_type(m.device_t2m()) == GGML_BACKEND_DEVICE_TYPE_CPU;  // CPU custom ops allowed

    PromptCache out;
    out.n_timesteps = N;
    out.temperature = opt.temperature;
    out.att_len = Tm;
    out.spk = bundle.spk;
    out.ne_spk = {kSpkDim};
    out.ne_conf_cnn = {d, cpl + cup, 1};
    out.ne_conf_att = {2 * hd, Tm, H, NL};
    out.ne_est_cnn = {2 * h, 2, static_cast<int64_t>(D.depth) * N, 2};
    out.ne_est_att = {2 * dh, Tm, static_cast<int64_t>(Hd) * D.depth * N, 2};

    // ---------------- encoder: one non-last chunk on the prompt codes, no caches.
    // The same ops as Token2Mel's encoder graph (token2mel.cpp), with zero conv context
    // and no attention cache; the `rest` rows [mu ; v ; prompt mel] of the cond branch.
    std::vector<float> rest_cond;
    {
        Graph g(static_cast<size_t>(NL) * 160 + 256);
        ggml_context *ctx = g.ctx;
        ggml_tensor *tok = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, Tp);
        ggml_set_input(tok);
        ggml_tensor *cnn0 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, d, cpl + cup);  // zeros: no conv context
        ggml_set_input(cnn0);
        ggml_tensor *spk = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, kSpkDim);
        ggml_set_input(spk);
        ggml_tensor *cond = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, kMelBins, Tm);
        ggml_set_input(cond);
        ggml_tensor *pe_tok = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, d, 2 * T1 - 1);
        ggml_set_input(pe_tok);
        ggml_tensor *pe_mel = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, d, 2 * Tm - 1);
        ggml_set_input(pe_mel);

        const float xscale = std::sqrt(static_cast<float>(d));
        ggml_tensor *e = ggml_get_rows(ctx, wx.get("input_embedding.weight"), tok);  // [d, Tp]
        e = linear(ctx, e, we.mm("embed.out.0.weight"), we.get("embed.out.0.bias"));
        e = layer_norm(ctx, e, we.get("embed.out.1.weight"), we.get("embed.out.1.bias"), 1e-5f);
        e = ggml_scale(ctx, e, xscale);
        ggml_tensor *hpl = conv1d_ct(ctx, e, we.get("pre_lookahead_layer.conv1.weight"), we.get("pre_lookahead_layer.conv1.bias"));
        hpl = ggml_leaky_relu(ctx, hpl, 0.01f, false);  // [d, T1]
        ggml_tensor *gg = conv1d_ct(ctx, ggml_concat(ctx, ggml_cont(ctx, slice_t(ctx, cnn0, 0, cpl)), hpl, 1),
                                    we.get("pre_lookahead_layer.conv2.weight"), we.get("pre_lookahead_layer.conv2.bias"));
        ggml_tensor *xe = ggml_add(ctx, gg, slice_t(ctx, e, 0, T1));
        ggml_tensor *new_pl = ggml_cont(ctx, slice_t(ctx, hpl, T1 - cpl, cpl));
        std::vector<ggml_tensor *> new_att(NL, nullptr);
        for (int i = 0; i < E.n_token_layers; ++i) {
            xe = blocks::conformer_layer(ctx, we, "encoders." + std::to_string(i) + ".", xe, nullptr, pe_tok, 0, H, hd, &new_att[i]);
        }
        ggml_tensor *rep = ggml_repeat(ctx, ggml_reshape_3d(ctx, xe, d, 1, T1), ggml_new_tensor_3d(ctx, GGML_TYPE_F32, d, E.up_rate, T1));
        rep = ggml_reshape_2d(ctx, rep, d, Tm);
        ggml_tensor *uin = ggml_concat(ctx, ggml_cont(ctx, slice_t(ctx, cnn0, cpl, cup)), rep, 1);  // [d, cup+Tm]
        ggml_tensor *u = conv1d_ct(ctx, uin, we.get("up_layer.conv.weight"), we.get("up_layer.conv.bias"));
        ggml_tensor *new_up = ggml_cont(ctx, slice_t(ctx, uin, Tm, cup));
        ggml_tensor *new_cnn = ggml_concat(ctx, new_pl, new_up, 1);  // [d, 6]
        u = linear(ctx, u, we.mm("up_embed.out.0.weight"), we.get("up_embed.out.0.bias"));
        u = layer_norm(ctx, u, we.get("up_embed.out.1.weight"), we.get("up_embed.out.1.bias"), 1e-5f);
        u = ggml_scale(ctx, u, xscale);
        for (int j = 0; j < E.n_mel_layers; ++j) {
            const int li = E.n_token_layers + j;
            u = blocks::conformer_layer(ctx, we, "up_encoders." + std::to_string(j) + ".", u, nullptr, pe_mel, 0, H, hd, &new_att[li]);
        }
        u = layer_norm(ctx, u, we.get("after_norm.weight"), we.get("after_norm.bias"), 1e-5f);
        ggml_tensor *mu = linear(ctx, u, wx.mm("encoder_proj.weight"), wx.get("encoder_proj.bias"));  // [80, Tm]
        ggml_tensor *ss = ggml_sum(ctx, ggml_sqr(ctx, spk));
        ggml_tensor *inv = ggml_sqrt(ctx, ggml_scale_bias(ctx, ss, 1.0f, 1e-12f));
        ggml_tensor *spk_n = ggml_div(ctx, spk, ggml_repeat(ctx, inv, spk));
        ggml_tensor *vspk = linear(ctx, spk_n, wx.mm("spk_embed_affine_layer.weight"), wx.get("spk_embed_affine_layer.bias"));
        ggml_tensor *spk_t = ggml_repeat(ctx, ggml_reshape_2d(ctx, vspk, kMelBins, 1), mu);          // [80, Tm]
        ggml_tensor *rest = ggml_concat(ctx, ggml_concat(ctx, mu, spk_t, 0), cond, 0);               // [240, Tm]
        for (ggml_tensor *t : {new_cnn, rest}) {
            ggml_set_output(t);
            ggml_build_forward_expand(g.gf, t);
        }
        for (ggml_tensor *t : new_att) {
            ggml_set_output(t);
            ggml_build_forward_expand(g.gf, t);
        }
        g.allocate(be, "prompt encoder");
        ggml_backend_tensor_set(tok, bundle.tokens.data(), 0, bundle.tokens.size() * sizeof(int32_t));
        set_zero(cnn0);
        ggml_backend_tensor_set(spk, bundle.spk.data(), 0, bundle.spk.size() * sizeof(float));
        ggml_backend_tensor_set(cond, bundle.mel.data(), 0, bundle.mel.size() * sizeof(float));
        const std::vector<float> pt = dsp::rel_pos_table(d, T1), pm = dsp::rel_pos_table(d, Tm);
        ggml_backend_tensor_set(pe_tok, pt.data(), 0, pt.size() * sizeof(float));
        ggml_backend_tensor_set(pe_mel, pm.data(), 0, pm.size() * sizeof(float));
        compute(be, g, "encoder");

        out.conf_cnn = get_f32(new_cnn);
        rest_cond = get_f32(rest);
        // conformer_att_cache [2hd, Tm, H, NL]: token-rate layers [c ; c] (docs/minicpmo45.md §4.7:
        // their cache is written duplicated along time), mel-rate layers as computed.
        out.conf_att.assign(static_cast<size_t>(2) * hd * Tm * H * NL, 0.0f);
        const size_t row = static_cast<size_t>(2) * hd;
        for (int li = 0; li < NL; ++li) {
            const bool tok_layer = li < E.n_token_layers;
            const int S = tok_layer ? T1 : Tm;
            const std::vector<float> a = get_f32(new_att[li]);  // [2hd, S, H]
            for (int hh = 0; hh < H; ++hh) {
                for (int tau = 0; tau < Tm; ++tau) {
                    const float *from = a.data() + row * ((tau % S) + static_cast<size_t>(S) * hh);
                    float *to = out.conf_att.data() + row * (tau + static_cast<size_t>(Tm) * (hh + static_cast<size_t>(H) * li));
                    std::copy(from, from + row, to);
                }
            }
        }
        if (opt.progress) opt.progress("encoder", 1, total);
    }

    // ---------------- CFM chunk: N Euler steps × 2 CFG branches, no caches, cond = prompt mel.
    // One DiT graph, recomputed per (step, branch) with t, x and the rest rows as inputs.
    const size_t slot_att = static_cast<size_t>(2) * dh * Tm * Hd;  // one (step, block) slot, one branch
    const size_t slot_cnn = static_cast<size_t>(2) * h * 2;
    const size_t n_slots = static_cast<size_t>(D.depth) * N;
    out.est_att.assign(slot_att * n_slots * 2, 0.0f);
    out.est_cnn.assign(slot_cnn * n_slots * 2, 0.0f);
    {
        Graph g(static_cast<size_t>(D.depth) * 200 + 256);
        ggml_context *ctx = g.ctx;
        ggml_tensor *tt = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
        ggml_set_input(tt);
        ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, kMelBins, Tm);
        ggml_set_input(x);
        ggml_tensor *rest = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 3 * kMelBins, Tm);
        ggml_set_input(rest);
        ggml_tensor *cnn0 = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2 * h, 2);  // zeros: no conv context
        ggml_set_input(cnn0);
        ggml_tensor *c_silu = blocks::dit_time_condition(ctx, wf, tt, D.freq_dim, h);
        ggml_tensor *hx = linear(ctx, ggml_concat(ctx, x, rest, 0), wf.mm("estimator.in_proj.weight"), wf.get("estimator.in_proj.bias"));
        std::vector<ggml_tensor *> blk_att(D.depth), blk_cnn(D.depth);
        for (int blk = 0; blk < D.depth; ++blk) {
            const std::string p = "estimator.blocks." + std::to_string(blk) + ".";
            ggml_tensor *mod = linear(ctx, c_silu, wf.mm(p + "adaLN_modulation.1.weight"), wf.get(p + "adaLN_modulation.1.bias"));
            mod = ggml_reshape_1d(ctx, mod, 9 * h);
            hx = blocks::dit_block(ctx, wf, p, hx, mod, nullptr, cnn0, Hd, dh, &blk_cnn[blk], blocks::kDitMaxKeys, &blk_att[blk],
                                  cpu);
        }
        ggml_tensor *fm = ggml_reshape_1d(ctx, linear(ctx, c_silu, wf.mm("estimator.final_layer.adaLN_modulation.1.weight"),
                                                      wf.get("estimator.final_layer.adaLN_modulation.1.bias")), 2 * h);
        ggml_tensor *fshift = ggml_view_1d(ctx, fm, h, 0), *fscale = ggml_view_1d(ctx, fm, h, h * sizeof(float));
        ggml_tensor *nf = ggml_norm(ctx, hx, 1e-6f);
        nf = ggml_add(ctx, ggml_add(ctx, nf, ggml_mul(ctx, nf, fscale)), fshift);
        ggml_tensor *f = linear(ctx, nf, wf.mm("estimator.final_layer.linear.weight"), wf.get("estimator.final_layer.linear.bias"));
        for (int blk = 0; blk < D.depth; ++blk) {
            for (ggml_tensor *t : {blk_att[blk], blk_cnn[blk]}) {
                ggml_set_output(t);
                ggml_build_forward_expand(g.gf, t);
            }
        }
        ggml_set_output(f);
        ggml_build_forward_expand(g.gf, f);
        g.allocate(be, "prompt DiT");
        set_zero(cnn0);

        // x_0 = τ·ε: a fresh MT19937(42), one normal distribution, channel fastest (§3.5).
        std::vector<float> xs(static_cast<size_t>(kMelBins) * Tm);
        {
            std::mt19937 rng(42);
            std::normal_distribution<float> dist(0.0f, 1.0f);
            for (auto &v : xs) v = opt.temperature * dist(rng);
        }
        const std::vector<float> rest_uncond(rest_cond.size(), 0.0f);
        const std::vector<float> t_span = blocks::flow_time_span(N);
        std::vector<float> fb[2];
        int done = 1;
        for (int s = 0; s < N; ++s) {
            for (int b = 0; b < 2; ++b) {
                ggml_backend_tensor_set(tt, &t_span[s], 0, sizeof(float));
                ggml_backend_tensor_set(x, xs.data(), 0, xs.size() * sizeof(float));
                const std::vector<float> &r = b == 0 ? rest_cond : rest_uncond;
                ggml_backend_tensor_set(rest, r.data(), 0, r.size() * sizeof(float));
                compute(be, g, "dit");
                fb[b] = get_f32(f);
                for (int blk = 0; blk < D.depth; ++blk) {
                    const size_t slot = static_cast<size_t>(s) * D.depth + blk;
                    ggml_backend_tensor_get(blk_att[blk], out.est_att.data() + (b * n_slots + slot) * slot_att, 0, slot_att * sizeof(float));
                    ggml_backend_tensor_get(blk_cnn[blk], out.est_cnn.data() + (b * n_slots + slot) * slot_cnn, 0, slot_cnn * sizeof(float));
                }
                if (opt.progress) opt.progress("step " + std::to_string(s + 1) + "/" + std::to_string(N) + (b == 0 ? " cond" : " uncond"), ++done, total);
            }
            blocks::euler_cfg_step(xs.data(), fb[0].data(), fb[1].data(), xs.size(), t_span[s + 1] - t_span[s], blocks::kCfgRate);
        }
    }
    return out;
}

// ---------------------------------------------------------------- file

void write_prompt_cache(const PromptCache &c, const std::string &path) {
    struct Entry {
        const char *name;
        const std::vector<float> *data;
        const std::vector<int64_t> *ne;
    };
    const Entry entries[] = {{"prompt_cache.spk_cb", &c.spk, &c.ne_spk},
                             {"prompt_cache.conformer_cnn_cache", &c.conf_cnn, &c.ne_conf_cnn},
                             {"prompt_cache.conformer_att_cache", &c.conf_att, &c.ne_conf_att},
                             {"prompt_cache.estimator_cnn_cache", &c.est_cnn, &c.ne_est_cnn},
                             {"prompt_cache.estimator_att_cache", &c.est_att, &c.ne_est_att}};
    ggml_init_params ip{ggml_tensor_overhead() * 8, nullptr, true};
    ggml_context *meta = ggml_init(ip);
    gguf_context *g = gguf_init_empty();
    struct Free {
        ggml_context *m;
        gguf_context *g;
        ~Free() {
            gguf_free(g);
            ggml_free(m);
        }
    } guard{meta, g};
    const std::string k = "mtmd.prompt_cache.";
    gguf_set_val_str(g, "general.architecture", "token2wav");
    gguf_set_val_i32(g, (k + "version").c_str(), 2);
    gguf_set_val_i32(g, (k + "n_timesteps").c_str(), c.n_timesteps);
    gguf_set_val_f32(g, (k + "temperature").c_str(), c.temperature);
    gguf_set_val_i32(g, (k + "pre_lookahead").c_str(), 3);
    gguf_set_val_i32(g, (k + "chunk_main").c_str(), 25);
    gguf_set_val_i32(g, (k + "chunk_total").c_str(), 28);
    gguf_set_val_i32(g, (k + "up_rate").c_str(), 2);
    for (const Entry &e : entries) {
        int64_t n = 1;
        for (int64_t v : *e.ne) n *= v;
        if (static_cast<size_t>(n) != e.data->size()) {
            throw_runtime(std::string("t2w-prompt: ") + e.name + " holds " + std::to_string(e.data->size()) + " values, its shape " +
                          ne_str(*e.ne) + " needs " + std::to_string(n));
        }
        ggml_tensor *t = ggml_new_tensor(meta, GGML_TYPE_F32, static_cast<int>(e.ne->size()), e.ne->data());
        ggml_set_name(t, e.name);
        gguf_add_tensor(g, t);
    }
    std::vector<uint8_t> head(gguf_get_meta_size(g));
    gguf_get_meta_data(g, head.data());

    const std::string part = path + ".part";
    std::FILE *f = std::fopen(part.c_str(), "wb");
    if (!f) throw_setup("cannot write " + part);
    bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
    const size_t align = gguf_get_alignment(g);
    const std::vector<uint8_t> zeros(align, 0);
    for (const Entry &e : entries) {
        const size_t bytes = e.data->size() * sizeof(float);
        ok = ok && std::fwrite(e.data->data(), 1, bytes, f) == bytes;
        const size_t pad = (align - bytes % align) % align;
        ok = ok && std::fwrite(zeros.data(), 1, pad, f) == pad;
    }
    if (std::fclose(f) != 0 || !ok) {
        std::remove(part.c_str());
        throw_setup("write failed for " + part);
    }
    std::error_code ec;
    fs::rename(part, path, ec);
    if (ec) throw_setup("cannot rename " + part + " to " + path + ": " + ec.message());
}

}  // namespace rtf::t2w
