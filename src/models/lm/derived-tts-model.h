#pragma once
// The TTS transformer as a plain llama GGUF that upstream libllama loads (docs/minicpmo45.md §2.3:
// it refuses the original, which has 11 extra tensors). Made once from the TTS file and cached:
//   - every blk.* tensor and output_norm.weight, byte for byte;
//   - token_embd.weight := emb_code.0.weight ([n_embd, n_codes]) and
//     output.weight     := head_code.0.weight transposed to [n_embd, n_codes] (F32),
//     so the model's "vocabulary" is the audio codes and its logits are head_code's;
//   - the metadata of the TTS file minus its text tokenizer (tokenizer.ggml.model = "none",
//     llama.vocab_size = n_codes).
// The derived file is ~ the size of the transformer (≈ 420 MB for the real F16 TTS).
#include <string>

namespace rtf::lm {

class TtsWeights;

// Cache folder used when none is given: <kit>/.rtf-cache, where <kit> is the parent of the
// TTS file's folder when that folder is named "tts" (the bundle layout), else the TTS
// file's folder itself.
std::string default_tts_cache_dir(const std::string &tts_path);

// Path of the derived file for `w`'s TTS file in `cache_dir` (created, atomically, if it
// does not exist yet; the name encodes source path, size and mtime, so a changed source
// gets a new file). Throws rtf::Error(Setup) naming the folder if it cannot be written.
std::string ensure_derived_tts_model(const TtsWeights &w, const std::string &cache_dir);

}  // namespace rtf::lm
