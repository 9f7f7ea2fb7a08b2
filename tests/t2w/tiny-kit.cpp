#include "tiny-kit.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <stdexcept>
#include <vector>

#include <ggml.h>
#include <gguf.h>

namespace rtf::t2w::test {

namespace {
struct Writer {
    gguf_context *g = gguf_init_empty();
    ggml_context *ctx;
    std::mt19937 rng;
    explicit Writer(unsigned seed) : rng(seed) {
        ggml_init_params p{256u * 1024 * 1024, nullptr, false};
        ctx = ggml_init(p);
    }
    ~Writer() {
        gguf_free(g);
        ggml_free(ctx);
    }
    void t(const std::string &name, std::vector<int64_t> ne, float std, float mean = 0.0f) {
        ggml_tensor *x = ggml_new_tensor(ctx, GGML_TYPE_F32, static_cast<int>(ne.size()), ne.data());
        ggml_set_name(x, name.c_str());
        std::normal_distribution<float> nd(0.0f, 1.0f);
        float *d = static_cast<float *>(x->data);
        for (int64_t i = 0; i < ggml_nelements(x); ++i) d[i] = mean + (std > 0 ? std * nd(rng) : 0.0f);
        gguf_add_tensor(g, x);
    }
    void lin(const std::string &p, int in, int out) {
        t(p + ".weight", {in, out}, 1.0f / std::sqrt(static_cast<float>(in)));
        t(p + ".bias", {out}, 0.02f);
    }
    void ln(const std::string &p, int c) {
        t(p + ".weight", {c}, 0.05f, 1.0f);
        t(p + ".bias", {c}, 0.02f);
    }
    void conv(const std::string &p, int k, int cin, int cout) {
        t(p + ".weight", {k, cin, cout}, 1.0f / std::sqrt(static_cast<float>(cin * k)));
        t(p + ".bias", {cout}, 0.02f);
    }
    void write(const std::string &path) {
        if (!gguf_write_to_file(g, path.c_str(), false)) throw std::runtime_error("cannot write " + path);
    }
};
}  // namespace

void write_tiny_kit(const std::string &dir, const TinyKitDims &k, unsigned seed) {
    std::filesystem::create_directories(dir);
    const int d = k.d, hd = k.d / k.heads;
    {
        Writer w(seed);
        w.lin("embed.out.0", d, d);
        w.ln("embed.out.1", d);
        w.conv("pre_lookahead_layer.conv1", 4, d, d);
        w.conv("pre_lookahead_layer.conv2", 3, d, d);
        auto layer = [&](const std::string &p) {
            w.ln(p + ".norm_mha", d);
            w.ln(p + ".norm_ff", d);
            for (const char *n : {"linear_q", "linear_k", "linear_v", "linear_out"}) w.lin(p + ".self_attn." + n, d, d);
            w.t(p + ".self_attn.linear_pos.weight", {d, d}, 1.0f / std::sqrt(static_cast<float>(d)));
            w.t(p + ".self_attn.pos_bias_u", {hd, k.heads}, 0.1f);
            w.t(p + ".self_attn.pos_bias_v", {hd, k.heads}, 0.1f);
            w.lin(p + ".feed_forward.w_1", d, k.ffn);
            w.lin(p + ".feed_forward.w_2", k.ffn, d);
        };
        for (int i = 0; i < k.tok_layers; ++i) layer("encoders." + std::to_string(i));
        w.conv("up_layer.conv", 5, d, d);
        w.lin("up_embed.out.0", d, d);
        w.ln("up_embed.out.1", d);
        for (int i = 0; i < k.mel_layers; ++i) layer("up_encoders." + std::to_string(i));
        w.ln("after_norm", d);
        w.write(dir + "/encoder.gguf");
    }
    {
        Writer w(seed + 1);
        w.t("input_embedding.weight", {d, 6561}, 1.0f);
        w.lin("spk_embed_affine_layer", 192, 80);
        w.lin("encoder_proj", d, 80);
        w.write(dir + "/flow_extra.gguf");
    }
    const int h = k.dit_h, dh = h / k.dit_heads;
    {
        Writer w(seed + 2);
        const std::string e = "estimator.";
        w.lin(e + "t_embedder.mlp.0", 256, h);
        w.lin(e + "t_embedder.mlp.2", h, h);
        w.lin(e + "in_proj", 320, h);
        for (int b = 0; b < k.depth; ++b) {
            const std::string p = e + "blocks." + std::to_string(b) + ".";
            w.t(p + "adaLN_modulation.1.weight", {h, 9 * h}, 0.05f);
            w.t(p + "adaLN_modulation.1.bias", {9 * h}, 0.05f);
            for (const char *n : {"to_q", "to_k", "to_v"}) w.lin(p + "attn." + n, h, h);
            w.ln(p + "attn.q_norm", dh);
            w.ln(p + "attn.k_norm", dh);
            w.lin(p + "attn.proj", h, h);
            w.conv(p + "conv.block.1", 3, h, h);
            w.ln(p + "conv.block.3", h);
            w.conv(p + "conv.block.6", 3, h, h);
            w.lin(p + "mlp.fc1", h, k.dit_mlp);
            w.lin(p + "mlp.fc2", k.dit_mlp, h);
        }
        w.t(e + "final_layer.adaLN_modulation.1.weight", {h, 2 * h}, 0.05f);
        w.t(e + "final_layer.adaLN_modulation.1.bias", {2 * h}, 0.05f);
        w.lin(e + "final_layer.linear", h, 80);
        w.write(dir + "/flow_matching.gguf");
    }
    {
        Writer w(seed + 3);
        const int C[3] = {k.c0 / 2, k.c0 / 4, k.c0 / 8};
        for (int j = 0; j < 5; ++j) w.conv("f0_predictor.condnet." + std::to_string(2 * j), 3, j == 0 ? 80 : k.f0w, k.f0w);
        w.lin("f0_predictor.classifier", k.f0w, 1);
        // a large bias makes part of the f0 track voiced (> 10), exercising the harmonic source
        w.t("m_source.l_linear.weight", {9, 1}, 0.3f);
        w.t("m_source.l_linear.bias", {1}, 0.05f);
        w.conv("conv_pre", 7, 80, k.c0);
        const int ks[3] = {16, 11, 7};
        int cin = k.c0;
        for (int s = 0; s < 3; ++s) {
            w.t("ups." + std::to_string(s) + ".weight", {ks[s], C[s], cin}, 1.0f / std::sqrt(static_cast<float>(cin * ks[s])));
            w.t("ups." + std::to_string(s) + ".bias", {C[s]}, 0.02f);
            cin = C[s];
        }
        const int dk[3] = {30, 6, 1};
        for (int s = 0; s < 3; ++s) w.conv("source_downs." + std::to_string(s), dk[s], 18, C[s]);
        auto rb = [&](const std::string &p, int kk, int c) {
            for (int m = 0; m < 3; ++m) {
                w.conv(p + ".convs1." + std::to_string(m), kk, c, c);
                w.conv(p + ".convs2." + std::to_string(m), kk, c, c);
                w.t(p + ".activations1." + std::to_string(m) + ".alpha", {c}, 0.1f, 1.0f);
                w.t(p + ".activations2." + std::to_string(m) + ".alpha", {c}, 0.1f, 1.0f);
            }
        };
        const int rk[3] = {3, 7, 11}, srk[3] = {7, 7, 11};
        for (int s = 0; s < 3; ++s) {
            for (int j = 0; j < 3; ++j) rb("resblocks." + std::to_string(3 * s + j), rk[j], C[s]);
            rb("source_resblocks." + std::to_string(s), srk[s], C[s]);
        }
        w.conv("conv_post", 7, C[2], 18);
        w.write(dir + "/hifigan2.gguf");
    }
    {
        Writer w(seed + 4);
        gguf_set_val_i32(w.g, "mtmd.prompt_cache.version", 2);
        gguf_set_val_i32(w.g, "mtmd.prompt_cache.n_timesteps", k.steps);
        gguf_set_val_f32(w.g, "mtmd.prompt_cache.temperature", 1.0f);
        w.t("prompt_cache.spk_cb", {192}, 1.0f);
        w.t("prompt_cache.conformer_cnn_cache", {d, 6, 1}, 0.1f);
        w.t("prompt_cache.conformer_att_cache", {2 * hd, k.L, k.heads, k.tok_layers + k.mel_layers}, 0.1f);
        w.t("prompt_cache.estimator_cnn_cache", {2 * h, 2, k.depth * k.steps, 2}, 0.1f);
        w.t("prompt_cache.estimator_att_cache", {2 * dh, k.L, k.dit_heads * k.depth * k.steps, 2}, 0.1f);
        w.write(dir + "/prompt_cache.gguf");
    }
}

}  // namespace rtf::t2w::test
