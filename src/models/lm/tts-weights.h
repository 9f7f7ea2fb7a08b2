#pragma once
// The host-side tensors of MiniCPM-o 4.5's TTS (docs/minicpmo45.md §2.3, §2.4): the tables and
// heads that are not part of its 20-layer Llama — emb_text, emb_code.0, head_code.0 and the
// semantic projector — read from the memory-mapped GGUF files. All dimensions come from
// tensor shapes, so tiny twins work. Read-only after construction: safe to share between
// threads.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/gguf/mapped-gguf.h"

namespace rtf::lm {

struct TtsDims {
    int n_embd = 0;   // TTS hidden (768)
    int n_codes = 0;  // audio classes incl. EOS (6562); EOS = n_codes - 1
    int n_text = 0;   // emb_text rows (152064)
    int n_llm = 0;    // LLM hidden the projector takes (4096)
    int n_proj = 0;   // projector hidden (768)
    int n_layer = 0;  // llama.block_count
};

class TtsWeights {
public:
    // `projector_path` "" = <dir of tts_path>/MiniCPM-o-4_5-projector-F16.gguf; when that
    // file does not exist the TTS file's own projector_semantic.* is used (same values in
    // the official bundle). Throws rtf::Error(Setup) naming the file and the tensor.
    TtsWeights(const std::string &tts_path, const std::string &projector_path);

    const TtsDims &dims() const { return dims_; }
    const gguf::MappedGguf &tts_file() const { return *tts_; }
    const std::string &projector_source() const { return projector_source_; }

    void text_row(int32_t id, float *out) const;  // emb_text[id]; throws Usage if out of range
    void code_row(int32_t code, float *out) const;  // emb_code[code]
    const float *head() const { return head_; }   // [n_embd][n_codes] row-major (transposed storage)

    // Projector p = W2 relu(W1 h + b1) + b2, W row-major [out][in].
    const float *w1() const { return w1_; }
    const float *b1() const { return b1_; }
    const float *w2() const { return w2_; }
    const float *b2() const { return b2_; }

    static std::string default_projector_path(const std::string &tts_path);

private:
    const float *as_f32(const gguf::MappedTensor &t);  // F32: into the mapping; F16: converted copy

    std::unique_ptr<gguf::MappedGguf> tts_;
    std::unique_ptr<gguf::MappedGguf> proj_;
    TtsDims dims_;
    gguf::MappedTensor emb_text_, emb_code_;
    const float *head_ = nullptr;
    const float *w1_ = nullptr, *b1_ = nullptr, *w2_ = nullptr, *b2_ = nullptr;
    std::string projector_source_;
    std::vector<std::vector<float>> owned_;
};

}  // namespace rtf::lm
