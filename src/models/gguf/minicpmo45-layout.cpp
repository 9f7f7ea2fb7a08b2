#include "models/gguf/minicpmo45-layout.h"

#include <cmath>

#include "core/error.h"
#include "core/mel-filters.h"

namespace rtf::gguf::minicpmo45 {

namespace {

using NE = std::array<int64_t, 4>;

NE ne1(int64_t a) { return {a, 1, 1, 1}; }
NE ne2(int64_t a, int64_t b) { return {a, b, 1, 1}; }
NE ne3(int64_t a, int64_t b, int64_t c) { return {a, b, c, 1}; }
NE ne4(int64_t a, int64_t b, int64_t c, int64_t d) { return {a, b, c, d}; }

float inv_sqrt(int64_t n) { return 1.0f / std::sqrt(static_cast<float>(n)); }

// Builder for one file: keeps the append order (the order a twin writes).
struct B {
    FileLayout L;
    void t(const std::string &name, NE ne, ggml_type type, Init init, bool any_weight_type = false) {
        TensorSpec s;
        s.name = name;
        s.ne = ne;
        s.type = type;
        s.any_weight_type = any_weight_type;
        s.init = init;
        L.tensors.push_back(std::move(s));
    }
    void f32(const std::string &name, NE ne, Init init) { t(name, ne, GGML_TYPE_F32, init); }
    // Linear layer, PyTorch [out,in] -> ne [in,out]; bias zero (t2w twins,
    // docs/minicpmo45.md §8.2).
    void lin(const std::string &p, int64_t cin, int64_t cout, float std = 0.0f, bool bias = true) {
        f32(p + ".weight", ne2(cin, cout), init_normal(std > 0 ? std : inv_sqrt(cin)));
        if (bias) f32(p + ".bias", ne1(cout), init_const(0.0f));
    }
    void ln(const std::string &p, int64_t c) {
        f32(p + ".weight", ne1(c), init_const(1.0f));
        f32(p + ".bias", ne1(c), init_const(0.0f));
    }
    // Conv1d, PyTorch [Cout,Cin,K] -> ne [K,Cin,Cout].
    void conv(const std::string &p, int64_t k, int64_t cin, int64_t cout) {
        f32(p + ".weight", ne3(k, cin, cout), init_normal(inv_sqrt(cin * k)));
        f32(p + ".bias", ne1(cout), init_const(0.0f));
    }
    void kv(const std::string &key, KvValue v, bool check_value = false, bool required = true) {
        L.kvs.push_back(KvSpec{key, std::move(v), check_value, required});
    }
};

Init norm_init() {  // RMSNorm weights 1 + N(0, 0.1²): a norm-weight bug stays visible
    Init i;
    i.mean = 1.0f;
    i.std = 0.1f;
    return i;
}

bool use_more_bits(int64_t i, int64_t n) {  // llama.cpp's Q4_K_M rule for attn_v / ffn_down
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

// llama-quantize's fallback when a row is not a whole number of blocks.
ggml_type fit_type(ggml_type t, int64_t ne0) {
    if (ne0 % ggml_blck_size(t) == 0) return t;
    ggml_type f = t;
    switch (t) {
        case GGML_TYPE_Q4_K: f = GGML_TYPE_Q5_0; break;
        case GGML_TYPE_Q5_K: f = GGML_TYPE_Q5_1; break;
        case GGML_TYPE_Q6_K: f = GGML_TYPE_Q8_0; break;
        default: break;
    }
    return ne0 % ggml_blck_size(f) == 0 ? f : GGML_TYPE_F16;
}

enum class Cat { embd, output, attn_v, ffn_down, other };

ggml_type matrix_type(WeightType t, Cat c, int64_t layer, int64_t n_layer, int64_t ne0) {
    switch (t) {
        case WeightType::f16: return GGML_TYPE_F16;
        case WeightType::q8_0: return fit_type(GGML_TYPE_Q8_0, ne0);
        case WeightType::q4_k_m: {
            ggml_type q = GGML_TYPE_Q4_K;
            if (c == Cat::output) q = GGML_TYPE_Q6_K;
            if ((c == Cat::attn_v || c == Cat::ffn_down) && use_more_bits(layer, n_layer)) q = GGML_TYPE_Q6_K;
            return fit_type(q, ne0);
        }
    }
    return GGML_TYPE_F16;
}

void add_general(B &b, const std::string &arch, const std::string &name, WeightType t) {
    b.kv("general.architecture", arch, true);
    b.kv("general.name", name, false, false);
    b.kv("general.file_type", llama_file_type(t), false, false);
    if (t != WeightType::f16) b.kv("general.quantization_version", uint32_t{GGML_QNT_VERSION}, false, false);
}

void add_tokenizer_keys(B &b) {
    // Copied from the vocabulary GGUF by the twin; required in a real file for libllama.
    for (const char *k : {"tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                          "tokenizer.ggml.merges"})
        b.kv(k, std::monostate{});
}

void conformer(B &b, const std::string &p, const EncoderDims &d) {
    const int64_t hd = d.d / d.n_head;
    b.ln(p + ".norm_mha", d.d);
    b.ln(p + ".norm_ff", d.d);
    for (const char *n : {"linear_q", "linear_k", "linear_v", "linear_out"}) b.lin(p + ".self_attn." + n, d.d, d.d);
    b.f32(p + ".self_attn.linear_pos.weight", ne2(d.d, d.d), init_normal(inv_sqrt(d.d)));
    b.f32(p + ".self_attn.pos_bias_u", ne2(hd, d.n_head), init_normal(0.02f));
    b.f32(p + ".self_attn.pos_bias_v", ne2(hd, d.n_head), init_normal(0.02f));
    b.lin(p + ".feed_forward.w_1", d.d, d.n_ff);
    b.lin(p + ".feed_forward.w_2", d.n_ff, d.d);
}

void resblock(B &b, const std::string &p, int64_t k, int64_t c) {
    for (int m = 0; m < 3; ++m) {
        const std::string ms = std::to_string(m);
        b.conv(p + ".convs1." + ms, k, c, c);
        b.conv(p + ".convs2." + ms, k, c, c);
        b.f32(p + ".activations1." + ms + ".alpha", ne1(c), init_const(1.0f));
        b.f32(p + ".activations2." + ms + ".alpha", ne1(c), init_const(1.0f));
    }
}

}  // namespace

const char *scale_name(Scale s) noexcept {
    switch (s) {
        case Scale::tiny: return "tiny";
        case Scale::cpu: return "cpu";
        case Scale::full: return "full";
    }
    return "?";
}

Scale parse_scale(const std::string &text, const std::string &what) {
    if (text == "tiny") return Scale::tiny;
    if (text == "cpu") return Scale::cpu;
    if (text == "full") return Scale::full;
    throw_usage(what + ": unknown scale '" + text + "' (allowed: tiny, cpu, full)");
}

Dims dims_for_scale(Scale s) {
    Dims d;
    if (s == Scale::full) return d;
    // Qwen3-0.6B: 28 layers, 1024 hidden, 16 x 128 query heads, 8 KV heads, FFN 3072.
    d.llm.n_layer = 28;
    d.llm.n_embd = 1024;
    d.llm.n_head = 16;
    d.llm.n_head_kv = 8;
    d.llm.head_dim = 128;
    d.llm.n_ff = 3072;
    d.tts.n_llm_embd = d.llm.n_embd;
    d.projector.n_in = d.llm.n_embd;
    d.apm.n_proj = d.apm.n_out = d.llm.n_embd;
    d.vpm.n_embd = d.llm.n_embd;
    if (s == Scale::cpu) return d;
    d.llm.n_layer = 2;
    d.llm.n_embd = 128;
    d.llm.n_head = 4;
    d.llm.n_head_kv = 2;
    d.llm.head_dim = 32;
    d.llm.n_ff = 256;
    d.tts.n_layer = 2;
    d.tts.n_embd = 64;
    d.tts.n_head = 2;
    d.tts.n_head_kv = 2;
    d.tts.n_ff = 128;
    d.tts.n_llm_embd = d.llm.n_embd;
    // With 2 layers the residual stream keeps more of the embeddings' dim-0 offset, so the EOS
    // logit (eos_beta * z_0) is larger than at 20 layers; 0.95 gives P(EOS) ~ 2 % per step at
    // temperature 1 (a turn of a few dozen codes, enough for several T2W windows).
    d.tts.eos_beta = 0.95f;
    d.projector.n_in = d.llm.n_embd;
    d.projector.n_out = d.tts.n_embd;
    d.encoder.n_blocks = 1;
    d.encoder.n_up_blocks = 1;
    d.flow_matching.n_blocks = 2;
    d.apm.n_layer = 2;
    d.apm.d = 64;
    d.apm.n_head = 2;
    d.apm.n_ff = 256;
    d.vpm.n_layer = 2;
    d.vpm.d = 64;
    d.vpm.n_head = 2;
    d.vpm.n_ff = 128;
    derive_dependent_dims(d);
    return d;  // HiFT and flow_extra keep full shape; prompt_cache follows the block counts
}

void derive_dependent_dims(Dims &d) {
    d.prompt_cache.n_conf_layers = d.encoder.n_blocks + d.encoder.n_up_blocks;
    d.prompt_cache.n_dit_blocks = d.flow_matching.n_blocks;
    // The audio projector ends in the LLM width (its rows are prefilled into the LLM); its
    // hidden width is the LLM width too in the real model (1024 -> 4096 -> 4096).
    d.apm.n_proj = d.apm.n_out = d.llm.n_embd;
    d.vpm.n_embd = d.llm.n_embd;  // the resampler's output rows are prefilled into the LLM
}

std::string file_name(Role r, WeightType t) {
    switch (r) {
        case Role::llm: return std::string("MiniCPM-o-4_5-") + weight_type_file_tag(t) + ".gguf";
        case Role::tts: return std::string("tts/MiniCPM-o-4_5-tts-") + weight_type_file_tag(t) + ".gguf";
        case Role::projector: return "tts/MiniCPM-o-4_5-projector-F16.gguf";  // fixed path in the runtime
        case Role::encoder: return "token2wav-gguf/encoder.gguf";
        case Role::flow_matching: return "token2wav-gguf/flow_matching.gguf";
        case Role::flow_extra: return "token2wav-gguf/flow_extra.gguf";
        case Role::hifigan2: return "token2wav-gguf/hifigan2.gguf";
        case Role::prompt_cache: return "token2wav-gguf/prompt_cache.gguf";
        case Role::apm: return "audio/MiniCPM-o-4_5-audio-F16.gguf";  // docs/minicpmo45.md §2.1
        case Role::vpm: return "vision/MiniCPM-o-4_5-vision-F16.gguf";  // docs/minicpmo45.md §2.1
        case Role::backbone:
        case Role::mmproj: break;  // not files of this family (pockettts-layout.h)
    }
    return "";
}

FileLayout llm_layout(const LlmDims &d, WeightType t) {
    B b;
    b.L.role = Role::llm;
    b.L.file_name = file_name(Role::llm, t);
    b.L.tokenizer_tokens = d.n_vocab;
    add_general(b, "qwen3", "MiniCPM-o-4_5 LLM twin (random weights)", t);
    const std::string a = "qwen3.";
    b.kv(a + "block_count", static_cast<uint32_t>(d.n_layer));
    b.kv(a + "context_length", static_cast<uint32_t>(d.n_ctx));
    b.kv(a + "embedding_length", static_cast<uint32_t>(d.n_embd));
    b.kv(a + "feed_forward_length", static_cast<uint32_t>(d.n_ff));
    b.kv(a + "attention.head_count", static_cast<uint32_t>(d.n_head));
    b.kv(a + "attention.head_count_kv", static_cast<uint32_t>(d.n_head_kv));
    b.kv(a + "attention.key_length", static_cast<uint32_t>(d.head_dim));
    b.kv(a + "attention.value_length", static_cast<uint32_t>(d.head_dim));
    b.kv(a + "rope.freq_base", d.rope_base);
    b.kv(a + "attention.layer_norm_rms_epsilon", d.rms_eps);
    add_tokenizer_keys(b);

    const int64_t nq = d.n_head * d.head_dim, nkv = d.n_head_kv * d.head_dim, n = d.n_layer;
    // Init: unit-variance-preserving projections, half-scale output projections (residual growth
    // stays moderate over 36 layers); output logits with std ~3 so sampling is peaked but not
    // one-token (top-1 probability a few percent over 151748 tokens).
    b.t("token_embd.weight", ne2(d.n_embd, d.n_vocab), matrix_type(t, Cat::embd, 0, n, d.n_embd),
        init_normal(0.5f), true);
    for (int64_t i = 0; i < n; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        b.f32(p + "attn_norm.weight", ne1(d.n_embd), norm_init());
        b.t(p + "attn_q.weight", ne2(d.n_embd, nq), matrix_type(t, Cat::other, i, n, d.n_embd),
            init_normal(inv_sqrt(d.n_embd)), true);
        b.t(p + "attn_k.weight", ne2(d.n_embd, nkv), matrix_type(t, Cat::other, i, n, d.n_embd),
            init_normal(inv_sqrt(d.n_embd)), true);
        b.t(p + "attn_v.weight", ne2(d.n_embd, nkv), matrix_type(t, Cat::attn_v, i, n, d.n_embd),
            init_normal(inv_sqrt(d.n_embd)), true);
        b.t(p + "attn_output.weight", ne2(nq, d.n_embd), matrix_type(t, Cat::other, i, n, nq),
            init_normal(0.5f * inv_sqrt(nq)), true);
        b.f32(p + "attn_q_norm.weight", ne1(d.head_dim), norm_init());
        b.f32(p + "attn_k_norm.weight", ne1(d.head_dim), norm_init());
        b.f32(p + "ffn_norm.weight", ne1(d.n_embd), norm_init());
        b.t(p + "ffn_gate.weight", ne2(d.n_embd, d.n_ff), matrix_type(t, Cat::other, i, n, d.n_embd),
            init_normal(inv_sqrt(d.n_embd)), true);
        b.t(p + "ffn_up.weight", ne2(d.n_embd, d.n_ff), matrix_type(t, Cat::other, i, n, d.n_embd),
            init_normal(inv_sqrt(d.n_embd)), true);
        b.t(p + "ffn_down.weight", ne2(d.n_ff, d.n_embd), matrix_type(t, Cat::ffn_down, i, n, d.n_ff),
            init_normal(0.5f * inv_sqrt(d.n_ff)), true);
    }
    b.f32("output_norm.weight", ne1(d.n_embd), norm_init());
    b.t("output.weight", ne2(d.n_embd, d.n_vocab), matrix_type(t, Cat::output, 0, n, d.n_embd),
        init_normal(3.0f * inv_sqrt(d.n_embd)), true);
    return b.L;
}

FileLayout tts_layout(const TtsDims &d, WeightType t) {
    B b;
    b.L.role = Role::tts;
    b.L.file_name = file_name(Role::tts, t);
    b.L.tokenizer_tokens = kTtsVocab;
    add_general(b, "llama", "MiniCPM-o-4_5 TTS twin (random weights)", t);
    const std::string a = "llama.";
    const int64_t hd = d.n_embd / d.n_head;
    b.kv(a + "block_count", static_cast<uint32_t>(d.n_layer));
    b.kv(a + "context_length", static_cast<uint32_t>(d.n_ctx));
    b.kv(a + "embedding_length", static_cast<uint32_t>(d.n_embd));
    b.kv(a + "feed_forward_length", static_cast<uint32_t>(d.n_ff));
    b.kv(a + "attention.head_count", static_cast<uint32_t>(d.n_head));
    b.kv(a + "attention.head_count_kv", static_cast<uint32_t>(d.n_head_kv));
    b.kv(a + "rope.dimension_count", static_cast<uint32_t>(hd));
    b.kv(a + "rope.freq_base", d.rope_base);
    b.kv(a + "attention.layer_norm_rms_epsilon", d.rms_eps);
    b.kv(a + "vocab_size", static_cast<uint32_t>(kTtsVocab));
    add_tokenizer_keys(b);

    // Values follow shared/tools/tts_twin.py (the golden data's twin), with the per-tensor std
    // rescaled by fan-in so other widths behave like 768: q/k 0.05, v/o/down 0.01, gate/up 0.02
    // at 768 (3072 for down); embeddings N(0, 0.3²) with +3 on hidden dim 0; head_code N(0, 0.05²)
    // with the EOS column = eos_beta at hidden dim 0 and 0 elsewhere.
    const float s768 = std::sqrt(768.0f / static_cast<float>(d.n_embd));
    const float s3072 = std::sqrt(3072.0f / static_cast<float>(d.n_ff));
    const int64_t n = d.n_layer, nq = d.n_head * hd, nkv = d.n_head_kv * hd;
    Init tok = init_normal(0.02f);
    tok.rows_nonzero = kTtsTokEmbdRows;
    b.t("token_embd.weight", ne2(d.n_embd, kTtsVocab), matrix_type(t, Cat::embd, 0, n, d.n_embd), tok, true);
    for (int64_t i = 0; i < n; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        b.f32(p + "attn_norm.weight", ne1(d.n_embd), norm_init());
        b.t(p + "attn_q.weight", ne2(d.n_embd, nq), matrix_type(t, Cat::other, i, n, d.n_embd),
            init_normal(0.05f * s768), true);
        b.t(p + "attn_k.weight", ne2(d.n_embd, nkv), matrix_type(t, Cat::other, i, n, d.n_embd),
            init_normal(0.05f * s768), true);
        b.t(p + "attn_v.weight", ne2(d.n_embd, nkv), matrix_type(t, Cat::attn_v, i, n, d.n_embd),
            init_normal(0.01f * s768), true);
        b.t(p + "attn_output.weight", ne2(nq, d.n_embd), matrix_type(t, Cat::other, i, n, nq),
            init_normal(0.01f * s768), true);
        b.f32(p + "ffn_norm.weight", ne1(d.n_embd), norm_init());
        b.t(p + "ffn_gate.weight", ne2(d.n_embd, d.n_ff), matrix_type(t, Cat::other, i, n, d.n_embd),
            init_normal(0.02f * s768), true);
        b.t(p + "ffn_up.weight", ne2(d.n_embd, d.n_ff), matrix_type(t, Cat::other, i, n, d.n_embd),
            init_normal(0.02f * s768), true);
        b.t(p + "ffn_down.weight", ne2(d.n_ff, d.n_embd), matrix_type(t, Cat::ffn_down, i, n, d.n_ff),
            init_normal(0.01f * s3072), true);
    }
    b.f32("output_norm.weight", ne1(d.n_embd), norm_init());
    Init emb = init_normal(0.3f);
    emb.dim0_offset = 3.0f;
    b.f32("emb_code.0.weight", ne2(d.n_embd, kTtsAudio), emb);
    b.f32("emb_text.weight", ne2(d.n_embd, kTtsText), emb);
    Init bias = init_normal(0.01f);
    for (const char *p : {"projector_semantic", "projector_spk"}) {
        const ggml_type wt = std::string(p) == "projector_spk" ? GGML_TYPE_F16 : GGML_TYPE_F32;
        b.t(std::string(p) + ".linear1.weight", ne2(d.n_llm_embd, d.n_embd), wt, init_normal(inv_sqrt(d.n_llm_embd)));
        b.f32(std::string(p) + ".linear1.bias", ne1(d.n_embd), bias);
        b.t(std::string(p) + ".linear2.weight", ne2(d.n_embd, d.n_embd), wt, init_normal(inv_sqrt(d.n_embd)));
        b.f32(std::string(p) + ".linear2.bias", ne1(d.n_embd), bias);
    }
    Init head = init_normal(0.05f * s768);
    head.last_col_special = true;
    head.last_col_value = d.eos_beta;
    b.f32("head_code.0.weight", ne2(kTtsAudio, d.n_embd), head);
    return b.L;
}

FileLayout projector_layout(const ProjectorDims &d) {
    B b;
    b.L.role = Role::projector;
    b.L.file_name = file_name(Role::projector, WeightType::f16);
    b.kv("general.architecture", std::string("projector"), true);
    Init bias = init_normal(0.01f);
    b.f32("linear1.weight", ne2(d.n_in, d.n_out), init_normal(inv_sqrt(d.n_in)));
    b.f32("linear1.bias", ne1(d.n_out), bias);
    b.f32("linear2.weight", ne2(d.n_out, d.n_out), init_normal(inv_sqrt(d.n_out)));
    b.f32("linear2.bias", ne1(d.n_out), bias);
    for (auto &t : b.L.tensors) t.seed_name = "projector_semantic." + t.name;
    return b.L;
}

namespace {
void t2w_general(B &b, Role r) {
    b.L.role = r;
    b.L.file_name = file_name(r, WeightType::f16);
    // The converter is not public (docs/minicpmo45.md §9.5): the runtime reads no key. Twins carry
    // the architecture name gguf-py's writer puts in (shared/tools/t2w_twin.py).
    b.kv("general.architecture", std::string("token2wav"), false, false);
}
}  // namespace

FileLayout encoder_layout(const EncoderDims &d) {
    B b;
    t2w_general(b, Role::encoder);
    b.lin("embed.out.0", d.d, d.d);
    b.ln("embed.out.1", d.d);
    b.conv("pre_lookahead_layer.conv1", d.k_pre1, d.d, d.d);
    b.conv("pre_lookahead_layer.conv2", d.k_pre2, d.d, d.d);
    for (int64_t i = 0; i < d.n_blocks; ++i) conformer(b, "encoders." + std::to_string(i), d);
    b.conv("up_layer.conv", d.k_up, d.d, d.d);
    b.lin("up_embed.out.0", d.d, d.d);
    b.ln("up_embed.out.1", d.d);
    for (int64_t i = 0; i < d.n_up_blocks; ++i) conformer(b, "up_encoders." + std::to_string(i), d);
    b.ln("after_norm", d.d);
    return b.L;
}

FileLayout flow_extra_layout(const FlowExtraDims &d) {
    B b;
    t2w_general(b, Role::flow_extra);
    b.f32("input_embedding.weight", ne2(d.d_embd, kCodes), init_normal(1.0f));
    b.lin("spk_embed_affine_layer", kSpk, kMel);
    b.lin("encoder_proj", d.d_enc, kMel);
    return b.L;
}

FileLayout flow_matching_layout(const FlowMatchingDims &d) {
    B b;
    t2w_general(b, Role::flow_matching);
    const std::string e = "estimator.";
    const int64_t hd = d.d / d.n_head;
    b.lin(e + "t_embedder.mlp.0", d.t_freq, d.d);
    b.lin(e + "t_embedder.mlp.2", d.d, d.d);
    b.lin(e + "in_proj", d.n_in, d.d);
    for (int64_t i = 0; i < d.n_blocks; ++i) {
        const std::string p = e + "blocks." + std::to_string(i) + ".";
        b.lin(p + "adaLN_modulation.1", d.d, 9 * d.d, 0.002f);
        for (const char *n : {"to_q", "to_k", "to_v"}) b.lin(p + "attn." + n, d.d, d.d);
        b.ln(p + "attn.q_norm", hd);
        b.ln(p + "attn.k_norm", hd);
        b.lin(p + "attn.proj", d.d, d.d);
        b.conv(p + "conv.block.1", 3, d.d, d.d);
        b.ln(p + "conv.block.3", d.d);
        b.conv(p + "conv.block.6", 3, d.d, d.d);
        b.lin(p + "mlp.fc1", d.d, d.n_mlp);
        b.lin(p + "mlp.fc2", d.n_mlp, d.d);
    }
    b.lin(e + "final_layer.adaLN_modulation.1", d.d, 2 * d.d, 0.002f);
    b.lin(e + "final_layer.linear", d.d, kMel);
    return b.L;
}

FileLayout hifigan2_layout(const HiftDims &d) {
    B b;
    t2w_general(b, Role::hifigan2);
    const int64_t idx[5] = {0, 2, 4, 6, 8};
    for (int j = 0; j < 5; ++j)
        b.conv("f0_predictor.condnet." + std::to_string(idx[j]), 3, j == 0 ? kMel : d.c_f0, d.c_f0);
    b.lin("f0_predictor.classifier", d.c_f0, 1);
    b.lin("m_source.l_linear", 9, 1);
    b.conv("conv_pre", 7, kMel, d.c_pre);
    const int64_t C[3] = {d.c_pre / 2, d.c_pre / 4, d.c_pre / 8};
    const int64_t kup[3] = {16, 11, 7};
    const int64_t cin_up[3] = {d.c_pre, C[0], C[1]};
    for (int i = 0; i < 3; ++i) {
        const std::string p = "ups." + std::to_string(i);
        // ConvTranspose: PyTorch [Cin,Cout,K] -> ne [K,Cout,Cin]
        b.f32(p + ".weight", ne3(kup[i], C[i], cin_up[i]), init_normal(inv_sqrt(cin_up[i] * kup[i])));
        b.f32(p + ".bias", ne1(C[i]), init_const(0.0f));
    }
    const int64_t kdown[3] = {30, 6, 1};
    for (int i = 0; i < 3; ++i) b.conv("source_downs." + std::to_string(i), kdown[i], 18, C[i]);
    const int64_t kres[3] = {3, 7, 11}, ksrc[3] = {7, 7, 11};
    for (int s = 0; s < 3; ++s)
        for (int j = 0; j < 3; ++j) resblock(b, "resblocks." + std::to_string(3 * s + j), kres[j], C[s]);
    for (int s = 0; s < 3; ++s) resblock(b, "source_resblocks." + std::to_string(s), ksrc[s], C[s]);
    b.conv("conv_post", 7, C[2], 18);
    return b.L;
}

FileLayout prompt_cache_layout(const PromptCacheDims &d) {
    B b;
    t2w_general(b, Role::prompt_cache);
    const std::string k = "mtmd.prompt_cache.";
    b.kv(k + "version", int32_t{2}, false, false);
    b.kv(k + "n_timesteps", static_cast<int32_t>(d.n_steps));
    b.kv(k + "temperature", 1.0f);
    b.kv(k + "pre_lookahead", int32_t{3}, false, false);
    b.kv(k + "chunk_main", int32_t{25}, false, false);
    b.kv(k + "chunk_total", int32_t{28}, false, false);
    b.kv(k + "up_rate", int32_t{2}, false, false);
    const int64_t slots = d.n_dit_blocks * d.n_steps;
    b.f32("prompt_cache.spk_cb", ne1(kSpk), init_normal(1.0f));
    b.f32("prompt_cache.conformer_cnn_cache", ne3(d.d, 6, 1), init_normal(0.1f));
    b.f32("prompt_cache.conformer_att_cache", ne4(2 * d.head_dim, d.L, d.n_head, d.n_conf_layers), init_normal(0.1f));
    b.f32("prompt_cache.estimator_cnn_cache", ne4(2 * d.d, 2, slots, 2), init_normal(0.1f));
    b.f32("prompt_cache.estimator_att_cache", ne4(2 * d.head_dim, d.L, d.n_head * slots, 2), init_normal(0.1f));
    return b.L;
}

FileLayout apm_layout(const ApmDims &d) {
    B b;
    b.L.role = Role::apm;
    b.L.file_name = file_name(Role::apm, WeightType::f16);
    // Keys as convert_apm.py writes them (docs/minicpmo45.md §2.10). The runtime reads d_model,
    // encoder_attention_heads, encoder_layers, n_mel, n_fft and filters; everything else
    // (the arch name included: the loader ignores it) is written but not required.
    b.kv("general.architecture", std::string("whisper"), false, false);
    b.kv("general.file_type", uint32_t{1}, false, false);
    b.kv("general.description", std::string("audio encoder for MiniCPM-omni"), false, false);
    b.kv("encoder_attention_heads", static_cast<uint32_t>(d.n_head));
    b.kv("encoder_ffn_dim", static_cast<uint32_t>(d.n_ff), false, false);
    b.kv("encoder_layers", static_cast<uint32_t>(d.n_layer));
    b.kv("num_hidden_layers", static_cast<uint32_t>(d.n_layer), false, false);
    b.kv("d_model", static_cast<uint32_t>(d.d));
    b.kv("audio_pool_step", static_cast<uint32_t>(kApmPool), false, false);
    b.kv("use_f16", uint32_t{1}, false, false);
    b.kv("n_mel", static_cast<uint32_t>(d.n_mel), false, false);
    // The mel code needs exactly 1 + 400/2 filter columns; a missing key means 400 there.
    b.kv("n_fft", static_cast<uint32_t>(kApmFftBins), true);
    b.kv("filters", mel_filters_slaney(16000, 2 * (static_cast<int>(kApmFftBins) - 1), static_cast<int>(d.n_mel)), true);

    // Tensors in the checkpoint's order. F16 except 1-D tensors, the conv biases ([1, d]:
    // the converter reshapes them to [d, 1]) and the positional table (F32). Init: LayerNorm
    // 1 / 0, biases small, matrices unit-variance-preserving, the residual branches' output
    // projections at half scale (24 layers keep a moderate residual growth).
    const auto h = GGML_TYPE_F16;
    Init bias = init_normal(0.01f);
    auto ln = [&](const std::string &p) {
        b.f32(p + ".weight", ne1(d.d), init_const(1.0f));
        b.f32(p + ".bias", ne1(d.d), init_const(0.0f));
    };
    b.t("encoder.conv1.weight", ne3(3, d.n_mel, d.d), h, init_normal(inv_sqrt(3 * d.n_mel)));
    b.f32("encoder.conv1.bias", ne2(1, d.d), bias);
    b.t("encoder.conv2.weight", ne3(3, d.d, d.d), h, init_normal(inv_sqrt(3 * d.d)));
    b.f32("encoder.conv2.bias", ne2(1, d.d), bias);
    b.f32("encoder.positional_embedding", ne2(d.d, d.n_ctx), init_normal(0.1f));
    for (int64_t i = 0; i < d.n_layer; ++i) {
        const std::string p = "encoder.blocks." + std::to_string(i) + ".";
        b.t(p + "attn.key.weight", ne2(d.d, d.d), h, init_normal(inv_sqrt(d.d)));  // no key bias
        b.t(p + "attn.value.weight", ne2(d.d, d.d), h, init_normal(inv_sqrt(d.d)));
        b.f32(p + "attn.value.bias", ne1(d.d), bias);
        b.t(p + "attn.query.weight", ne2(d.d, d.d), h, init_normal(inv_sqrt(d.d)));
        b.f32(p + "attn.query.bias", ne1(d.d), bias);
        b.t(p + "attn.out.weight", ne2(d.d, d.d), h, init_normal(0.5f * inv_sqrt(d.d)));
        b.f32(p + "attn.out.bias", ne1(d.d), bias);
        ln(p + "attn_ln");
        b.t(p + "mlp.0.weight", ne2(d.d, d.n_ff), h, init_normal(inv_sqrt(d.d)));
        b.f32(p + "mlp.0.bias", ne1(d.n_ff), bias);
        b.t(p + "mlp.2.weight", ne2(d.n_ff, d.d), h, init_normal(0.5f * inv_sqrt(d.n_ff)));
        b.f32(p + "mlp.2.bias", ne1(d.d), bias);
        ln(p + "mlp_ln");
    }
    ln("encoder.ln_post");
    b.t("audio_projector.linear1.weight", ne2(d.d, d.n_proj), h, init_normal(inv_sqrt(d.d)));
    b.f32("audio_projector.linear1.bias", ne1(d.n_proj), bias);
    b.t("audio_projector.linear2.weight", ne2(d.n_proj, d.n_out), h, init_normal(inv_sqrt(d.n_proj)));
    b.f32("audio_projector.linear2.bias", ne1(d.n_out), bias);
    return b.L;
}

FileLayout vpm_layout(const VpmDims &d) {
    B b;
    b.L.role = Role::vpm;
    b.L.file_name = file_name(Role::vpm, WeightType::f16);
    // Keys as convert_vpm.py writes them (docs/minicpmo45.md §2.11). The loader requires the
    // clip.vision widths, eps, image and patch size, and asserts image_mean / image_std.
    const std::string v = "clip.vision.";
    b.kv("general.architecture", std::string("clip"), false, false);
    b.kv("clip.has_text_encoder", false, false, false);
    b.kv("clip.has_vision_encoder", true, false, false);
    b.kv("clip.has_minicpmv_projector", true, false, false);
    b.kv("general.file_type", uint32_t{1}, false, false);
    b.kv("general.description", std::string("image encoder for MiniCPM-V"), false, false);
    b.kv("clip.projector_type", std::string("resampler"), true, false);
    b.kv("clip.minicpmv_version", d.version, false, false);
    b.kv(v + "image_size", static_cast<uint32_t>(d.image_size));
    b.kv(v + "patch_size", static_cast<uint32_t>(d.patch));
    b.kv(v + "embedding_length", static_cast<uint32_t>(d.d));
    b.kv(v + "feed_forward_length", static_cast<uint32_t>(d.n_ff));
    b.kv(v + "projection_dim", uint32_t{0});
    b.kv(v + "attention.head_count", static_cast<uint32_t>(d.n_head));
    b.kv(v + "attention.layer_norm_epsilon", 1e-6f);
    b.kv(v + "block_count", static_cast<uint32_t>(d.n_layer));
    b.kv("clip.minicpmv_query_num", static_cast<uint32_t>(d.n_query), false, false);
    b.kv(v + "image_mean", std::vector<float>{0.5f, 0.5f, 0.5f}, true);
    b.kv(v + "image_std", std::vector<float>{0.5f, 0.5f, 0.5f}, true);
    b.kv("clip.use_gelu", true, false, false);

    // The converter adds the resampler first, then the ViT in state-dict order.
    const auto h = GGML_TYPE_F16;
    const int64_t E = d.n_embd, D = d.d, F = d.n_ff, npos = kVpmGrid * kVpmGrid;
    Init bias = init_normal(0.01f);
    auto ln = [&](const std::string &p, int64_t c) {
        b.f32(p + ".weight", ne1(c), init_const(1.0f));
        b.f32(p + ".bias", ne1(c), init_const(0.0f));
    };
    b.f32("resampler.query", ne2(E, d.n_query), init_normal(0.02f));
    b.t("resampler.kv.weight", ne2(D, E), h, init_normal(inv_sqrt(D)));
    for (const char *n : {"q", "k", "v"}) {
        b.t(std::string("resampler.attn.") + n + ".weight", ne2(E, E), h, init_normal(inv_sqrt(E)));
        b.f32(std::string("resampler.attn.") + n + ".bias", ne1(E), bias);
    }
    b.t("resampler.attn.out.weight", ne2(E, E), h, init_normal(inv_sqrt(E)));
    b.f32("resampler.attn.out.bias", ne1(E), bias);
    ln("resampler.ln_q", E);
    ln("resampler.ln_kv", E);
    ln("resampler.ln_post", E);
    // Loaded by the runtime though its graph builds its own sin-cos table (docs/minicpmo45.md §6).
    b.f32("resampler.pos_embed_k", ne2(E, npos), init_normal(0.5f));
    b.t("resampler.proj.weight", ne2(E, E), h, init_normal(inv_sqrt(E)));

    b.t("v.patch_embd.weight", ne4(d.patch, d.patch, 3, D), h, init_normal(inv_sqrt(3 * d.patch * d.patch)));
    b.f32("v.patch_embd.bias", ne1(D), bias);
    b.t("v.position_embd.weight", ne2(D, npos), h, init_normal(0.02f));
    for (int64_t i = 0; i < d.n_layer; ++i) {
        const std::string p = "v.blk." + std::to_string(i) + ".";
        for (const char *n : {"attn_k", "attn_v", "attn_q", "attn_out"}) {
            b.t(p + n + ".weight", ne2(D, D), h, init_normal(std::string(n) == "attn_out" ? 0.5f * inv_sqrt(D) : inv_sqrt(D)));
            b.f32(p + n + ".bias", ne1(D), bias);
        }
        ln(p + "ln1", D);
        b.t(p + "ffn_down.weight", ne2(D, F), h, init_normal(inv_sqrt(D)));  // HF fc1 (D -> F)
        b.f32(p + "ffn_down.bias", ne1(F), bias);
        b.t(p + "ffn_up.weight", ne2(F, D), h, init_normal(0.5f * inv_sqrt(F)));  // HF fc2 (F -> D)
        b.f32(p + "ffn_up.bias", ne1(D), bias);
        ln(p + "ln2", D);
    }
    ln("v.post_ln", D);
    return b.L;
}

FileLayout layout_for(Role r, const Dims &d, WeightType t) {
    switch (r) {
        case Role::llm: return llm_layout(d.llm, t);
        case Role::tts: return tts_layout(d.tts, t);
        case Role::projector: return projector_layout(d.projector);
        case Role::encoder: return encoder_layout(d.encoder);
        case Role::flow_matching: return flow_matching_layout(d.flow_matching);
        case Role::flow_extra: return flow_extra_layout(d.flow_extra);
        case Role::hifigan2: return hifigan2_layout(d.hift);
        case Role::prompt_cache: return prompt_cache_layout(d.prompt_cache);
        case Role::apm: return apm_layout(d.apm);
        case Role::vpm: return vpm_layout(d.vpm);
        case Role::backbone:
        case Role::mmproj: break;
    }
    throw_usage(std::string("minicpmo45 has no '") + role_name(r) + "' file");
}

}  // namespace rtf::gguf::minicpmo45
