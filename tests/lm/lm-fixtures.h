#pragma once
// Tiny GGUF fixtures for rtf_lm tests, written with ggml's gguf API (deterministic weights):
//  - a MiniCPM-o-style TTS file (llama arch + the 11 extra tensors of spec §1.3) and its
//    projector file, with dims chosen by the test (interface constants kept: 6562 codes,
//    text rows covering ids 151687/151692);
//  - a 2-layer Qwen3 LLM carrying llama.cpp's real Qwen2 tokenizer.
#include <string>
#include <vector>

namespace rtf::lm::test {

struct TinyTtsSpec {
    int n_embd = 64, n_head = 2, n_ff = 128, n_layer = 2;
    int n_codes = 6562, n_text = 151700, n_llm = 128;
    float eos_beta = 0.6f;           // EOS column of head_code at hidden dim 0 (larger: earlier EOS)
    bool emb_f16 = true;             // emb_text / emb_code as F16 (the real file: F32)
    bool projector_file = true;      // also write MiniCPM-o-4_5-projector-F16.gguf
    std::string skip_tensor;         // leave this tensor out (error tests)
    std::string bad_shape_tensor;    // write this tensor with a wrong shape (error tests)
    unsigned seed = 1;
};

// Writes <dir>/tts/MiniCPM-o-4_5-tts-F16.gguf (+ projector); returns the TTS path.
std::string write_tiny_tts(const std::string &dir, const TinyTtsSpec &spec);

// Writes a 2-layer Qwen3 (n_embd 64, 4 heads x 16, 2 KV heads, FFN 128) with the Qwen2
// tokenizer from RTF_VOCAB_DIR; returns the path.
std::string write_tiny_qwen3(const std::string &path, unsigned seed = 3);

// A fresh folder for `name` inside this process's scratch folder (common/scratch-dir.h),
// which is removed when the process exits.
std::string temp_dir(const std::string &name);

}  // namespace rtf::lm::test
