#include "models/gguf/pockettts-layout.h"

#include <cmath>
#include <set>

#include "core/error.h"
#include "models/gguf/gguf-file.h"
#include "models/gguf/layout-builder.h"

namespace rtf::gguf::pockettts {

namespace {

using namespace build;
using B = Builder;

constexpr int kRatios[3] = {4, 5, 6};  // clip.cpp's seanet_ratios (encoder order)

// The mimi transformer layer (encoder `a`, decoder `a.gen.wav.tfm`): LayerNorm, q/k/v/out, layer
// scales, GELU FFN without biases.
void mimi_layers(B &b, const std::string &p, const MimiDims &m) {
    for (int64_t i = 0; i < m.n_layer; ++i) {
        const std::string l = p + ".blk." + std::to_string(i) + ".";
        b.ln(l + "ln1", m.d);
        for (const char *n : {"attn_q", "attn_k", "attn_v", "attn_out"}) b.mat(l + n + ".weight", m.d, m.d);
        b.vec(l + "ls1.weight", m.d, 0.1f);
        b.ln(l + "ln2", m.d);
        b.mat(l + "ffn_up.weight", m.d, m.n_ff);
        b.mat(l + "ffn_down.weight", m.n_ff, m.d);
        b.vec(l + "ls2.weight", m.d, 0.1f);
    }
}

void clip_keys(B &b, const std::string &prefix, const std::string &proj, const Dims &d) {
    const MimiDims &m = d.mimi;
    b.kv("clip." + prefix + ".projector_type", proj, true);
    b.kv("clip." + prefix + ".embedding_length", uint32_t(m.d), true);
    b.kv("clip." + prefix + ".feed_forward_length", uint32_t(m.n_ff), true);
    b.kv("clip." + prefix + ".block_count", uint32_t(m.n_layer), true);
    b.kv("clip." + prefix + ".attention.head_count", uint32_t(m.n_head), true);
    b.kv("clip." + prefix + ".projection_dim", uint32_t(d.backbone.n_embd), true);
    b.kv("clip." + prefix + ".attention.layer_norm_epsilon", 1e-5f);
}

const char *const kWords[] = {
    "the", "a", "and", "of", "to", "in", "is", "you", "that", "it", "he", "was", "for", "on", "are", "as", "with",
    "his", "they", "i", "at", "be", "this", "have", "from", "or", "one", "had", "by", "word", "but", "not", "what",
    "all", "were", "we", "when", "your", "can", "said", "there", "use", "an", "each", "which", "she", "do", "how",
    "their", "if", "will", "up", "other", "about", "out", "many", "then", "them", "these", "so", "some", "her",
    "would", "make", "like", "him", "into", "time", "has", "look", "two", "more", "write", "go", "see", "number",
    "no", "way", "could", "people", "my", "than", "first", "water", "been", "call", "who", "its", "now", "find",
    "long", "down", "day", "did", "get", "come", "made", "may", "part", "hello", "world", "speech", "real", "voice",
    "fast", "today", "weather", "sunny", "model", "stream", "audio", "quick", "brown", "fox", "jumps", "over", "lazy",
    "dog"};


}  // namespace

Dims dims_for_scale(minicpmo45::Scale s) {
    Dims d;
    if (s != minicpmo45::Scale::tiny) return d;  // full and cpu: the english model's shapes
    d.backbone = BackboneDims{2, 64, 2, 128, 124, 1024};
    d.mimi = MimiDims{32, 2, 64, 2, 4};
    d.flow = FlowDims{32, 2};
    return d;
}

std::vector<std::string> twin_pieces(int64_t n_text) {
    const std::string sp = "\xE2\x96\x81";  // U+2581, sentencepiece's space
    std::vector<std::string> p{"<unk>", sp};
    for (char c = 'a'; c <= 'z'; ++c) p.push_back(std::string(1, c));
    for (char c = 'A'; c <= 'Z'; ++c) p.push_back(std::string(1, c));
    for (char c = '0'; c <= '9'; ++c) p.push_back(std::string(1, c));
    for (const char *c : {".", ",", "!", "?", "'", "-", ":", ";"}) p.push_back(c);
    for (const char *w : kWords) p.push_back(sp + w);
    // Then letter pairs, word-initial and inside words, until the table is full (each piece
    // once: libllama aborts on a vocabulary with a repeated piece).
    std::set<std::string> seen(p.begin(), p.end());
    auto add = [&](const std::string &x) {
        if (static_cast<int64_t>(p.size()) < n_text && seen.insert(x).second) p.push_back(x);
    };
    for (char a = 'a'; a <= 'z'; ++a)
        for (char c = 'a'; c <= 'z'; ++c) {
            add(sp + a + c);
            add(std::string{a, c});
        }
    for (int64_t i = 0; static_cast<int64_t>(p.size()) < n_text; ++i) p.push_back("[PIECE" + std::to_string(i) + "]");
    p.resize(static_cast<size_t>(n_text));
    return p;
}

FileLayout backbone_layout(const Dims &d, WeightType type) {
    const BackboneDims &m = d.backbone;
    B b;
    b.L.role = Role::backbone;
    b.L.file_name = kBackboneFile;
    b.kv("general.architecture", std::string("pockettts"), true);
    b.kv("general.name", std::string("Pocket TTS twin"), false, false);
    b.kv("general.file_type", llama_file_type(type), false, false);
    b.kv("pockettts.context_length", uint32_t(m.n_ctx), true);
    b.kv("pockettts.embedding_length", uint32_t(m.n_embd), true);
    b.kv("pockettts.block_count", uint32_t(m.n_layer), true);
    b.kv("pockettts.feed_forward_length", uint32_t(m.n_ff), true);
    b.kv("pockettts.attention.head_count", uint32_t(m.n_head), true);
    b.kv("pockettts.attention.head_count_kv", uint32_t(m.n_head), false, false);
    b.kv("pockettts.attention.layer_norm_epsilon", 1e-5f);
    b.kv("pockettts.rope.freq_base", 10000.0f, false, false);

    // The vocabulary (UGM): pieces, scores that favour the longest match, types.
    std::vector<std::string> tokens = twin_pieces(m.n_text);
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (size_t i = 0; i < tokens.size(); ++i) {
        scores.push_back(i == 0 ? 0.0f : -10.0f + 2.0f * static_cast<float>(std::min<size_t>(tokens[i].size(), 4)));
        types.push_back(i == 0 ? 2 : 1);  // UNKNOWN, NORMAL
    }
    for (const char *c : {"<|pad|>", "<|bos_before_voice|>", "<|audio_bos|>"}) {
        tokens.push_back(c);
        scores.push_back(0.0f);
        types.push_back(3);  // CONTROL
    }
    b.kv("tokenizer.ggml.model", std::string("t5"), true);
    b.kv("tokenizer.ggml.pre", std::string("default"), false, false);
    b.kv("tokenizer.ggml.tokens", tokens);
    b.kv("tokenizer.ggml.scores", scores, false, false);
    b.kv("tokenizer.ggml.token_type", types, false);
    b.kv("tokenizer.ggml.unknown_token_id", uint32_t(0), false, false);
    b.kv("tokenizer.ggml.padding_token_id", uint32_t(m.n_text), false, false);
    b.kv("tokenizer.ggml.eos_token_id", uint32_t(m.n_text), false, false);
    b.kv("tokenizer.ggml.add_bos_token", false, false, false);
    b.kv("tokenizer.ggml.add_eos_token", false, false, false);
    b.kv("tokenizer.ggml.add_space_prefix", true, false, false);
    b.kv("tokenizer.ggml.remove_extra_whitespaces", true, false, false);

    const ggml_type wt = matrix_type(type, m.n_embd);
    b.t("token_embd.weight", ne2(m.n_embd, m.n_vocab()), wt, init_normal(1.0f), true);
    b.ln("output_norm", m.n_embd);
    for (int64_t i = 0; i < m.n_layer; ++i) {
        const std::string l = "blk." + std::to_string(i) + ".";
        b.ln(l + "attn_norm", m.n_embd);
        for (const char *n : {"attn_q", "attn_k", "attn_v", "attn_output"}) b.mat(l + n + ".weight", m.n_embd, m.n_embd, wt, true);
        b.ln(l + "ffn_norm", m.n_embd);
        b.mat(l + "ffn_up.weight", m.n_embd, m.n_ff, wt, true);
        b.mat(l + "ffn_down.weight", m.n_ff, m.n_embd, matrix_type(type, m.n_ff), true);
    }
    return b.L;
}

FileLayout mmproj_layout(const Dims &d) {
    const MimiDims &m = d.mimi;
    const int64_t F = m.n_filters, D = m.d, E = d.backbone.n_embd, FD = d.flow.d;
    B b;
    b.L.role = Role::mmproj;
    b.L.file_name = kMmprojFile;
    b.kv("general.architecture", std::string("clip"), true);
    b.kv("general.type", std::string("mmproj"), false, false);
    b.kv("clip.has_audio_encoder", true);
    clip_keys(b, "audio", "pockettts_spkenc", d);
    b.kv("clip.audio.num_mel_bins", uint32_t(1), true);
    b.kv("clip.has_gen_audio_encoder", true);
    clip_keys(b, "gen.audio", "pockettts_gen", d);
    b.kv("clip.gen.audio.model_variant", d.variant, false, false);

    // Speaker encoder: SEANet (stage widths F, 2F, 4F; downsampling by 4, 5, 6), then D.
    b.conv("a.seanet.conv_in", 7, 1, F, 7, GGML_TYPE_F16, F);
    for (int s = 0; s < 3; ++s) {
        const int64_t C = F << s, r = kRatios[s];
        const std::string p = "a.seanet.blk." + std::to_string(s) + ".";
        b.conv(p + "res_conv1", 3, C, C / 2, 3 * C, GGML_TYPE_F16, C / 2);
        b.conv(p + "res_conv2", 1, C / 2, C, C / 2, GGML_TYPE_F16, C);
        b.conv(p + "scale_conv", 2 * r, C, 2 * C, 2 * r * C, GGML_TYPE_F16, 2 * C);
    }
    b.conv("a.seanet.conv_out", 3, 8 * F, D, 3 * 8 * F, GGML_TYPE_F16, D);
    mimi_layers(b, "a", m);
    b.conv("a.downsample.conv", 32, D, D, 32 * D, GGML_TYPE_F16, 0);
    b.mat("a.speaker_proj.weight", D, E);

    // Generator: the flow MLP (one LSD step), the EOS head, the latent's way back to the backbone.
    b.lin("a.gen.flow.input_proj", kLatent, FD);
    b.lin("a.gen.flow.cond_embd", E, FD);
    for (int i = 0; i < 2; ++i) {
        const std::string p = "a.gen.flow.time." + std::to_string(i) + ".";
        b.t(p + "freqs", ne1(128), GGML_TYPE_F32, init_normal(1.0f));
        b.lin(p + "up", 256, FD);
        b.lin(p + "down", FD, FD);
        b.vec(p + "norm", FD, 1.0f);
    }
    for (int64_t i = 0; i < d.flow.depth; ++i) {
        const std::string p = "a.gen.flow.blk." + std::to_string(i) + ".";
        b.ln(p + "norm", FD);
        b.lin(p + "up", FD, FD);
        b.lin(p + "down", FD, FD);
        b.lin(p + "ada", FD, 3 * FD);
    }
    b.lin("a.gen.flow.final.ada", FD, 2 * FD);
    b.lin("a.gen.flow.final.proj", FD, kLatent);
    // EOS head: a twin never ends on EOS (score ~ -10 < clip's -4 threshold), so an utterance's
    // length is llama.cpp's frame budget for its text: deterministic work.
    b.mat("a.gen.out_eos.weight", E, 1, GGML_TYPE_F16, false, 1e-3f * inv_sqrt(E));
    b.vec("a.gen.out_eos.bias", 1, -10.0f);
    b.mat("a.gen.input_linear.weight", kLatent, E);
    b.vec("a.gen.emb_mean", kLatent, 0.0f);
    b.vec("a.gen.emb_std", kLatent, 1.0f);

    // Mimi decoder: latent -> D, depthwise upsampling x16, transformer, SEANet (4F... F wide).
    b.mat("a.gen.wav.quant_out.weight", kLatent, D);
    b.conv("a.gen.wav.upsample", 32, 1, D, 32, GGML_TYPE_F16, 0);
    mimi_layers(b, "a.gen.wav.tfm", m);
    b.conv("a.gen.wav.seanet.conv_in", 7, D, 8 * F, 7 * D, GGML_TYPE_F16, 8 * F);
    for (int s = 0; s < 3; ++s) {
        const int64_t C = (8 * F) >> s, r = kRatios[2 - s];
        const std::string p = "a.gen.wav.seanet.blk." + std::to_string(s) + ".";
        b.conv(p + "scale_conv", 2 * r, C / 2, C, 2 * r * C / 2, GGML_TYPE_F16, C / 2);
        b.conv(p + "res_conv1", 3, C / 2, C / 4, 3 * C / 2, GGML_TYPE_F16, C / 4);
        b.conv(p + "res_conv2", 1, C / 4, C / 2, C / 4, GGML_TYPE_F16, C / 2);
    }
    // The last conv at a quarter of the usual gain: the twin's noise stays well inside clip.cpp's
    // [-1, 1] clamp (at full gain ~0.1 % of samples saturate and the quality gate's clip check fails).
    b.conv("a.gen.wav.seanet.conv_out", 3, F, 1, 3 * F, GGML_TYPE_F16, 1, 0.25f);
    return b.L;
}

FileLayout layout_for(Role r, const Dims &d, WeightType t) {
    if (r == Role::backbone) return backbone_layout(d, t);
    if (r == Role::mmproj) return mmproj_layout(d);
    throw_usage(std::string("pocket-tts has no '") + role_name(r) + "' file (its roles: backbone, mmproj)");
}

Dims infer_dims(const GgufFile &f, Role r) {
    Dims d;
    auto key = [&](const std::string &k, int64_t fb) { return key_or(f, k, fb); };
    auto dim = [&](const std::string &t, int i, int64_t fb) { return dim_or(f, t, i, fb); };
    if (r == Role::backbone) {
        auto &m = d.backbone;
        m.n_layer = key("pockettts.block_count", m.n_layer);
        m.n_embd = key("pockettts.embedding_length", m.n_embd);
        m.n_head = key("pockettts.attention.head_count", m.n_head);
        m.n_ff = key("pockettts.feed_forward_length", m.n_ff);
        m.n_ctx = key("pockettts.context_length", m.n_ctx);
        m.n_text = dim("token_embd.weight", 1, m.n_vocab()) - kNControl;
        return d;
    }
    auto &m = d.mimi;
    m.d = key("clip.audio.embedding_length", m.d);
    m.n_head = key("clip.audio.attention.head_count", m.n_head);
    m.n_ff = key("clip.audio.feed_forward_length", m.n_ff);
    m.n_layer = key("clip.audio.block_count", m.n_layer);
    m.n_filters = dim("a.seanet.conv_in.weight", 2, m.n_filters);
    d.backbone.n_embd = dim("a.speaker_proj.weight", 1, d.backbone.n_embd);
    d.flow.d = dim("a.gen.flow.input_proj.weight", 1, d.flow.d);
    int64_t depth = 0;
    while (f.find_tensor("a.gen.flow.blk." + std::to_string(depth) + ".norm.weight")) ++depth;
    d.flow.depth = depth;
    d.variant = f.find_string("clip.gen.audio.model_variant").value_or(d.variant);
    return d;
}

}  // namespace rtf::gguf::pockettts
