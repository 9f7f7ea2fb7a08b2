#include "models/lm/tts-weights.h"

#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace rtf::lm {

namespace {
void row_to_f32(const gguf::MappedTensor &t, int64_t row, float *out) {
    const int64_t n = t.ne[0];
    if (t.type == GGML_TYPE_F32) {
        std::memcpy(out, static_cast<const float *>(t.data) + row * n, static_cast<size_t>(n) * sizeof(float));
    } else {
        ggml_fp16_to_fp32_row(static_cast<const ggml_fp16_t *>(t.data) + row * n, out, n);
    }
}

std::string architecture(const gguf::MappedGguf &f) {
    return f.header().find_string("general.architecture").value_or("");
}
}  // namespace

std::string TtsWeights::default_projector_path(const std::string &tts_path) {
    return (std::filesystem::path(tts_path).parent_path() / "MiniCPM-o-4_5-projector-F16.gguf").string();
}

const float *TtsWeights::as_f32(const gguf::MappedTensor &t) {
    if (t.type == GGML_TYPE_F32) return static_cast<const float *>(t.data);
    const int64_t n = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
    owned_.emplace_back(static_cast<size_t>(n));
    ggml_fp16_to_fp32_row(static_cast<const ggml_fp16_t *>(t.data), owned_.back().data(), n);
    return owned_.back().data();
}

TtsWeights::TtsWeights(const std::string &tts_path, const std::string &projector_path) {
    tts_ = std::make_unique<gguf::MappedGguf>(tts_path);
    const gguf::MappedGguf &f = *tts_;
    if (architecture(f) != "llama")
        throw_setup(tts_path + ": general.architecture is '" + architecture(f) + "', expected 'llama' (MiniCPM-o TTS)");
    const auto F32 = GGML_TYPE_F32, F16 = GGML_TYPE_F16;
    dims_.n_layer = static_cast<int>(f.require_int("llama.block_count"));
    dims_.n_embd = static_cast<int>(f.require_int("llama.embedding_length"));
    emb_code_ = f.require("emb_code.0.weight", {F32, F16});
    if (emb_code_.ne[0] != dims_.n_embd || emb_code_.ne[2] != 1)
        throw_setup(tts_path + ": tensor 'emb_code.0.weight' has shape " + emb_code_.shape() + ", expected [" +
                    std::to_string(dims_.n_embd) + ", n_codes] (llama.embedding_length " + std::to_string(dims_.n_embd) + ")");
    dims_.n_codes = static_cast<int>(emb_code_.ne[1]);
    if (dims_.n_codes < 2) throw_setup(tts_path + ": tensor 'emb_code.0.weight' has fewer than 2 rows");
    emb_text_ = f.require("emb_text.weight", {F32, F16});
    if (emb_text_.ne[0] != dims_.n_embd || emb_text_.ne[2] != 1)
        throw_setup(tts_path + ": tensor 'emb_text.weight' has shape " + emb_text_.shape() + ", expected [" +
                    std::to_string(dims_.n_embd) + ", n_text]");
    dims_.n_text = static_cast<int>(emb_text_.ne[1]);
    head_ = as_f32(f.require("head_code.0.weight", {F32, F16}, {dims_.n_codes, dims_.n_embd}));
    f.require("output_norm.weight", {F32}, {dims_.n_embd});
    // The transformer's own tensors (libllama checks their shapes when it loads the derived file).
    for (int i = 0; i < dims_.n_layer; ++i) {
        for (const char *n : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"})
            f.require("blk." + std::to_string(i) + "." + n + ".weight", {});
    }

    const std::string pp = projector_path.empty() ? default_projector_path(tts_path) : projector_path;
    std::string prefix;
    const gguf::MappedGguf *pf = nullptr;
    if (std::filesystem::is_regular_file(pp)) {
        proj_ = std::make_unique<gguf::MappedGguf>(pp);
        if (architecture(*proj_) != "projector")
            throw_setup(pp + ": general.architecture is '" + architecture(*proj_) + "', expected 'projector'");
        pf = proj_.get();
        projector_source_ = pp;
    } else if (!projector_path.empty()) {
        throw_setup("projector file not found: " + pp);
    } else {
        // Spec §1.4 / §7 Q6: same values as the projector file. Indexed as stored
        // ([out][in] rows), unlike the reference's host fallback which mis-indexes linear1.
        pf = tts_.get();
        prefix = "projector_semantic.";
        projector_source_ = tts_path + " (projector_semantic.*)";
    }
    auto w1 = pf->require(prefix + "linear1.weight", {F32, F16});
    dims_.n_llm = static_cast<int>(w1.ne[0]);
    dims_.n_proj = static_cast<int>(w1.ne[1]);
    w1_ = as_f32(pf->require(prefix + "linear1.weight", {F32, F16}, {dims_.n_llm, dims_.n_proj}));
    b1_ = as_f32(pf->require(prefix + "linear1.bias", {F32, F16}, {dims_.n_proj}));
    w2_ = as_f32(pf->require(prefix + "linear2.weight", {F32, F16}, {dims_.n_proj, dims_.n_embd}));
    b2_ = as_f32(pf->require(prefix + "linear2.bias", {F32, F16}, {dims_.n_embd}));
}

void TtsWeights::text_row(int32_t id, float *out) const {
    if (id < 0 || id >= dims_.n_text)
        throw_usage("text token id " + std::to_string(id) + " is outside emb_text (0.." + std::to_string(dims_.n_text - 1) + ")");
    row_to_f32(emb_text_, id, out);
}

void TtsWeights::code_row(int32_t code, float *out) const {
    if (code < 0 || code >= dims_.n_codes)
        throw_usage("audio code " + std::to_string(code) + " is outside emb_code (0.." + std::to_string(dims_.n_codes - 1) + ")");
    row_to_f32(emb_code_, code, out);
}

}  // namespace rtf::lm
