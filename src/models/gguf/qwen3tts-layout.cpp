#include "models/gguf/qwen3tts-layout.h"

#include <cmath>

#include "core/error.h"
#include "models/gguf/gguf-file.h"
#include "models/gguf/layout-builder.h"

namespace rtf::gguf::qwen3tts {

namespace {

using namespace build;
using B = Builder;

Init norm_init() {
    Init i;
    i.mean = 1.0f;
    i.std = 0.1f;
    return i;
}


constexpr int kDacStrides[4] = {8, 5, 4, 3};

}  // namespace

Dims dims_for_scale(minicpmo45::Scale s) {
    Dims d;
    if (s != minicpmo45::Scale::tiny) return d;
    d.talker = TalkerDims{2, 64, 2, 1, 32, 128, 1024, kTextVocab};
    d.predictor = PredictorDims{1, 64, 2, 1, 32, 128};
    d.c2w = Code2WavDims{16, 32, 64, 64, 4, 64, 96};
    d.spk = SpeakerDims{32, 8, 8, 128};
    return d;
}

FileLayout backbone_layout(const Dims &d, WeightType type) {
    const TalkerDims &m = d.talker;
    B b;
    b.L.role = Role::backbone;
    b.L.file_name = kBackboneFile;
    b.kv("general.architecture", std::string("qwen3tts"), true);
    b.kv("general.name", std::string("Qwen3-TTS twin"), false, false);
    b.kv("general.file_type", llama_file_type(type), false, false);
    const std::string a = "qwen3tts.";
    b.kv(a + "context_length", uint32_t(m.n_ctx), true);
    b.kv(a + "embedding_length", uint32_t(m.n_embd), true);
    b.kv(a + "block_count", uint32_t(m.n_layer), true);
    b.kv(a + "feed_forward_length", uint32_t(m.n_ff), true);
    b.kv(a + "attention.head_count", uint32_t(m.n_head), true);
    b.kv(a + "attention.head_count_kv", uint32_t(m.n_head_kv), true);
    b.kv(a + "attention.key_length", uint32_t(m.head_dim), true);
    b.kv(a + "attention.value_length", uint32_t(m.head_dim), true);
    b.kv(a + "attention.layer_norm_rms_epsilon", 1e-6f);
    b.kv(a + "rope.freq_base", 1000000.0f, false, false);
    // M-RoPE sections summing to head_dim / 2 (the real 128-wide heads: 24, 20, 20, 0).
    const int32_t half = static_cast<int32_t>(m.head_dim / 2), s1 = half * 3 / 8, s2 = (half - s1) / 2;
    b.kv(a + "rope.dimension_sections", std::vector<int32_t>{s1, s2, half - s1 - s2, 0}, false);

    // The vocabulary: Qwen2's text block (copied by the twin), then the codec block.
    b.kv("tokenizer.ggml.model", std::monostate{});
    b.kv("tokenizer.ggml.tokens", std::monostate{});
    b.kv("tokenizer.ggml.merges", std::monostate{});
    b.L.tokenizer_tokens = m.n_vocab();
    auto &named = b.L.named_tokens;
    named = {{kTtsPad, "<tts_pad>"}, {kTtsBos, "<tts_text_bos>"}, {kTtsEos, "<tts_text_eod>"}};
    const std::pair<int64_t, const char *> special[] = {
        {kCodecLanguageEnglish, "<|codec_language_english|>"}, {kCodecPad, "<|codec_pad|>"},
        {kCodecBos, "<|codec_bos|>"},   {kCodecEos, "<|codec_eos_token|>"}, {kCodecThink, "<|codec_think|>"},
        {kCodecThinkBos, "<|codec_think_bos|>"}, {kCodecThinkEos, "<|codec_think_eos|>"}};
    for (int64_t i = 0; i < kCodecRows; ++i) {
        std::string name = "<|codec_" + std::to_string(i) + "|>";
        for (const auto &[id, text] : special)
            if (id == i) name = text;
        named.emplace_back(m.n_text + i, name);
    }
    b.L.tokenizer_eos = m.n_text + kCodecEos;
    // Only codec 0..2047 and EOS may be sampled (the converter's rule): the rest of the block suppressed.
    std::vector<int32_t> suppress;
    for (int64_t i = kCodebook; i < kCodecRows; ++i)
        if (i != kCodecEos) suppress.push_back(static_cast<int32_t>(m.n_text + i));
    b.kv("tokenizer.ggml.suppress_tokens", suppress, false, false);
    b.kv("tokenizer.ggml.add_eos_token", false, false, false);

    const ggml_type wt = matrix_type(type, m.n_embd);
    b.t("token_embd.weight", ne2(m.n_embd, m.n_vocab()), wt, init_normal(1.0f), true);
    b.t("output_norm.weight", ne1(m.n_embd), GGML_TYPE_F32, norm_init());
    b.mat("output.weight", m.n_embd, kCodecRows, wt, true);
    for (int64_t i = 0; i < m.n_layer; ++i) {
        const std::string l = "blk." + std::to_string(i) + ".";
        b.t(l + "attn_norm.weight", ne1(m.n_embd), GGML_TYPE_F32, norm_init());
        b.mat(l + "attn_q.weight", m.n_embd, m.n_head * m.head_dim, wt, true);
        b.mat(l + "attn_k.weight", m.n_embd, m.n_head_kv * m.head_dim, wt, true);
        b.mat(l + "attn_v.weight", m.n_embd, m.n_head_kv * m.head_dim, wt, true);
        b.mat(l + "attn_output.weight", m.n_head * m.head_dim, m.n_embd, matrix_type(type, m.n_head * m.head_dim), true);
        b.t(l + "attn_q_norm.weight", ne1(m.head_dim), GGML_TYPE_F32, norm_init());
        b.t(l + "attn_k_norm.weight", ne1(m.head_dim), GGML_TYPE_F32, norm_init());
        b.t(l + "ffn_norm.weight", ne1(m.n_embd), GGML_TYPE_F32, norm_init());
        b.mat(l + "ffn_gate.weight", m.n_embd, m.n_ff, wt, true);
        b.mat(l + "ffn_up.weight", m.n_embd, m.n_ff, wt, true);
        b.mat(l + "ffn_down.weight", m.n_ff, m.n_embd, matrix_type(type, m.n_ff), true);
    }
    return b.L;
}

FileLayout mmproj_layout(const Dims &d) {
    const int64_t E = d.talker.n_embd;
    const PredictorDims &p = d.predictor;
    const Code2WavDims &w = d.c2w;
    const SpeakerDims &s = d.spk;
    B b;
    b.L.role = Role::mmproj;
    b.L.file_name = kMmprojFile;
    b.kv("general.architecture", std::string("clip"), true);
    b.kv("general.type", std::string("mmproj"), false, false);
    // Speaker encoder: its transformer keys are placeholders clip.cpp requires (ECAPA has none).
    b.kv("clip.has_audio_encoder", true);
    b.kv("clip.audio.projector_type", std::string("qwen3tts_spkenc"), true);
    b.kv("clip.audio.embedding_length", uint32_t(3 * s.c), true);
    b.kv("clip.audio.feed_forward_length", uint32_t(3 * s.c), true);
    b.kv("clip.audio.block_count", uint32_t(3), true);
    b.kv("clip.audio.attention.head_count", uint32_t(1), true);
    b.kv("clip.audio.projection_dim", uint32_t(E), true);
    b.kv("clip.audio.num_mel_bins", uint32_t(s.n_mel), true);
    b.kv("clip.audio.attention.layer_norm_epsilon", 1e-5f);
    b.kv("clip.has_gen_audio_encoder", true);
    b.kv("clip.gen.audio.projector_type", std::string("qwen3tts_gen"), true);
    b.kv("clip.gen.audio.embedding_length", uint32_t(p.n_embd), true);
    b.kv("clip.gen.audio.feed_forward_length", uint32_t(p.n_ff), true);
    b.kv("clip.gen.audio.block_count", uint32_t(p.n_layer), true);
    b.kv("clip.gen.audio.attention.head_count", uint32_t(p.n_head), true);
    b.kv("clip.gen.audio.attention.head_count_kv", uint32_t(p.n_head_kv), true);
    b.kv("clip.gen.audio.projection_dim", uint32_t(E), true);
    b.kv("clip.gen.audio.attention.layer_norm_epsilon", 1e-6f);

    // ECAPA-TDNN: stem, 3 SE-Res2Net blocks (ids 1..3), feature aggregation, attentive pooling, fc.
    const int64_t C = s.c;
    b.conv("a.conv1d.0", 5, s.n_mel, C, 5.0 * s.n_mel, GGML_TYPE_F16, C);
    for (int bid = 1; bid <= 3; ++bid) {
        const std::string q = "a.blk." + std::to_string(bid) + ".";
        b.conv(q + "conv_pw1", 1, C, C, C, GGML_TYPE_F16, C);
        for (int x = 0; x < 7; ++x) b.conv(q + "res2." + std::to_string(x), 3, C / 8, C / 8, 3.0 * C / 8, GGML_TYPE_F16, C / 8);
        b.conv(q + "conv_pw2", 1, C, C, C, GGML_TYPE_F16, C);
        b.conv(q + "se_conv1", 1, C, s.se, C, GGML_TYPE_F16, s.se);
        b.conv(q + "se_conv2", 1, s.se, C, s.se, GGML_TYPE_F16, C);
    }
    b.conv("a.conv_out", 1, 3 * C, 3 * C, 3.0 * C, GGML_TYPE_F16, 3 * C);
    b.conv("a.asp_tdnn", 1, 9 * C, s.asp, 9.0 * C, GGML_TYPE_F16, s.asp);
    b.conv("a.asp_attn", 1, s.asp, 3 * C, s.asp, GGML_TYPE_F16, 3 * C);
    b.conv("mm.a.fc", 1, 6 * C, E, 6.0 * C, GGML_TYPE_F16, E);

    // Code predictor: 15 codes after the talker's code 0.
    if (p.n_embd != E) b.lin("a.gen.code.proj_in", E, p.n_embd);
    b.t("a.gen.code.embd.weight", ne3(E, kCodebook, kAcoustic), GGML_TYPE_F16, init_normal(1.0f));
    b.t("a.gen.code.head.weight", ne3(p.n_embd, kCodebook, kAcoustic), GGML_TYPE_F16,
        init_normal(inv_sqrt(static_cast<double>(p.n_embd))));
    b.t("a.gen.code.out_embd.weight", ne2(E, kCodecRows), GGML_TYPE_F16, init_normal(1.0f));
    b.t("a.gen.code.output_norm.weight", ne1(p.n_embd), GGML_TYPE_F32, norm_init());
    for (int64_t i = 0; i < p.n_layer; ++i) {
        const std::string l = "a.gen.code.blk." + std::to_string(i) + ".";
        b.t(l + "ln1.weight", ne1(p.n_embd), GGML_TYPE_F32, norm_init());
        b.t(l + "ln2.weight", ne1(p.n_embd), GGML_TYPE_F32, norm_init());
        b.mat(l + "attn_q.weight", p.n_embd, p.n_head * p.head_dim);
        b.mat(l + "attn_k.weight", p.n_embd, p.n_head_kv * p.head_dim);
        b.mat(l + "attn_v.weight", p.n_embd, p.n_head_kv * p.head_dim);
        b.mat(l + "attn_out.weight", p.n_head * p.head_dim, p.n_embd);
        b.t(l + "attn_q_norm.weight", ne1(p.head_dim), GGML_TYPE_F32, norm_init());
        b.t(l + "attn_k_norm.weight", ne1(p.head_dim), GGML_TYPE_F32, norm_init());
        b.mat(l + "ffn_gate.weight", p.n_embd, p.n_ff);
        b.mat(l + "ffn_up.weight", p.n_embd, p.n_ff);
        b.mat(l + "ffn_down.weight", p.n_ff, p.n_embd, GGML_TYPE_F32);  // the converter keeps it F32 (range)
    }

    // code2wav: RVQ decode (1 semantic + 15 acoustic codebooks), pre-conv, 8 SWA layers, 2 x (convT + ConvNeXt), DAC.
    b.mat("a.gen.wav.quant.first.in_proj.weight", w.q, w.cd);
    b.mat("a.gen.wav.quant.first.out_proj.weight", w.cd, w.q);
    b.t("a.gen.wav.quant.first.codebook.weight", ne2(w.cd, kCodebook), GGML_TYPE_F32, init_normal(1.0f));
    b.mat("a.gen.wav.quant.rest.in_proj.weight", w.q, w.cd);
    b.mat("a.gen.wav.quant.rest.out_proj.weight", w.cd, w.q);
    b.t("a.gen.wav.quant.rest.codebook.weight", ne3(w.cd, kCodebook, kAcoustic), GGML_TYPE_F32, init_normal(1.0f));
    b.conv("a.gen.wav.pre_conv", 3, w.q, w.latent, 3.0 * w.q, GGML_TYPE_F16, w.latent);
    b.lin("a.gen.wav.tfm.in_proj", w.latent, w.hidden);
    b.lin("a.gen.wav.tfm.out_proj", w.hidden, w.latent);
    b.t("a.gen.wav.tfm.output_norm.weight", ne1(w.hidden), GGML_TYPE_F32, norm_init());
    const int64_t qd = 16 * w.head_dim;  // 16 heads, fixed by clip.cpp
    for (int i = 0; i < 8; ++i) {
        const std::string l = "a.gen.wav.tfm.blk." + std::to_string(i) + ".";
        for (const char *n : {"attn_q", "attn_k", "attn_v"}) b.mat(l + n + ".weight", w.hidden, qd);
        b.mat(l + "attn_out.weight", qd, w.hidden);
        b.t(l + "ln1.weight", ne1(w.hidden), GGML_TYPE_F32, norm_init());
        b.t(l + "ln2.weight", ne1(w.hidden), GGML_TYPE_F32, norm_init());
        b.vec(l + "ls1.weight", w.hidden, 0.1f);
        b.vec(l + "ls2.weight", w.hidden, 0.1f);
        b.mat(l + "ffn_gate.weight", w.hidden, w.n_ff);
        b.mat(l + "ffn_up.weight", w.hidden, w.n_ff);
        b.mat(l + "ffn_down.weight", w.n_ff, w.hidden);
    }
    const int64_t L = w.latent;
    for (int i = 0; i < 2; ++i) {
        const std::string u = "a.gen.wav.up.blk." + std::to_string(i) + ".";
        b.conv(u + "conv", 2, L, L, 2.0 * L, GGML_TYPE_F32, L);  // ConvTranspose1d, k = stride = 2
        b.conv(u + "dwconv", 7, 1, L, 7.0, GGML_TYPE_F16, L);
        b.vec(u + "norm.weight", L, 1.0f);
        b.vec(u + "norm.bias", L, 0.0f);
        b.lin(u + "pw1", L, 4 * L);
        b.lin(u + "pw2", 4 * L, L);
        b.vec(u + "gamma", L, 0.1f);
    }
    b.conv("a.gen.wav.dac.entry", 7, L, w.dac, 7.0 * L, GGML_TYPE_F16, w.dac);
    // SnakeBeta parameters stored folded: exp(alpha) around 1, 1 / (exp(beta) + eps) around 0.5.
    auto snake = [&](const std::string &p, int64_t c) {
        b.vecn(p + ".alpha", c, 1.0f, 0.1f);
        b.vecn(p + ".beta", c, 0.5f, 0.05f);
    };
    for (int i = 0; i < 4; ++i) {
        const int64_t cin = w.dac >> i, cout = w.dac >> (i + 1), st = kDacStrides[i];
        const std::string q = "a.gen.wav.dac.blk." + std::to_string(i) + ".";
        snake(q + "snake", cin);
        b.conv(q + "conv", 2 * st, cout, cin, 2.0 * cin, GGML_TYPE_F32, cout);  // ConvTranspose1d [K, OC, IC]
        for (int r = 0; r < 3; ++r) {
            const std::string rr = q + "res." + std::to_string(r) + ".";
            snake(rr + "act1", cout);
            b.conv(rr + "conv1", 7, cout, cout, 7.0 * cout, GGML_TYPE_F16, cout);
            snake(rr + "act2", cout);
            b.conv(rr + "conv2", 1, cout, cout, static_cast<double>(cout), GGML_TYPE_F16, cout);
        }
    }
    const int64_t last = w.dac >> 4;
    snake("a.gen.wav.dac.post_snake", last);
    // A small last gain: the twin's noise stays inside code2wav's [-1, 1] clamp.
    b.conv("a.gen.wav.dac.post_conv", 7, last, 1, 7.0 * last, GGML_TYPE_F16, 1, 0.02f);
    return b.L;
}

FileLayout layout_for(Role r, const Dims &d, WeightType t) {
    if (r == Role::backbone) return backbone_layout(d, t);
    if (r == Role::mmproj) return mmproj_layout(d);
    throw_usage(std::string("qwen3-tts has no '") + role_name(r) + "' file (its roles: backbone, mmproj)");
}

Dims infer_dims(const GgufFile &f, Role r) {
    Dims d;
    auto key = [&](const std::string &k, int64_t fb) { return key_or(f, k, fb); };
    auto dim = [&](const std::string &t, int i, int64_t fb) { return dim_or(f, t, i, fb); };
    if (r == Role::backbone) {
        auto &m = d.talker;
        const std::string a = "qwen3tts.";
        m.n_layer = key(a + "block_count", m.n_layer);
        m.n_embd = key(a + "embedding_length", m.n_embd);
        m.n_head = key(a + "attention.head_count", m.n_head);
        m.n_head_kv = key(a + "attention.head_count_kv", m.n_head_kv);
        m.head_dim = key(a + "attention.key_length", m.head_dim);
        m.n_ff = key(a + "feed_forward_length", m.n_ff);
        m.n_ctx = key(a + "context_length", m.n_ctx);
        m.n_text = dim("token_embd.weight", 1, m.n_vocab()) - kCodecRows;
        return d;
    }
    d.talker.n_embd = dim("a.gen.code.out_embd.weight", 0, d.talker.n_embd);
    auto &p = d.predictor;
    p.n_embd = key("clip.gen.audio.embedding_length", p.n_embd);
    p.n_ff = key("clip.gen.audio.feed_forward_length", p.n_ff);
    p.n_layer = key("clip.gen.audio.block_count", p.n_layer);
    p.n_head = key("clip.gen.audio.attention.head_count", p.n_head);
    p.n_head_kv = key("clip.gen.audio.attention.head_count_kv", p.n_head_kv);
    p.head_dim = dim("a.gen.code.blk.0.attn_q_norm.weight", 0, p.head_dim);
    auto &w = d.c2w;
    w.cd = dim("a.gen.wav.quant.first.codebook.weight", 0, w.cd);
    w.q = dim("a.gen.wav.quant.first.out_proj.weight", 1, w.q);
    w.latent = dim("a.gen.wav.pre_conv.weight", 2, w.latent);
    w.hidden = dim("a.gen.wav.tfm.in_proj.weight", 1, w.hidden);
    w.head_dim = dim("a.gen.wav.tfm.blk.0.attn_q.weight", 1, 16 * w.head_dim) / 16;
    w.n_ff = dim("a.gen.wav.tfm.blk.0.ffn_up.weight", 1, w.n_ff);
    w.dac = dim("a.gen.wav.dac.entry.weight", 2, w.dac);
    auto &s = d.spk;
    s.c = dim("a.conv1d.0.weight", 2, s.c);
    s.n_mel = dim("a.conv1d.0.weight", 1, s.n_mel);
    s.se = dim("a.blk.1.se_conv1.weight", 2, s.se);
    s.asp = dim("a.asp_tdnn.weight", 2, s.asp);
    return d;
}

}  // namespace rtf::gguf::qwen3tts
