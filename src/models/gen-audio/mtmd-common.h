#pragma once
// What the libmtmd speech families share (pocket-engine.h, qwen3tts-engine.h): an mmproj context
// on the backbone's model, the backbone's token rows as floats (prompts are built from them), a
// token found by its text, a speaker reference through the mmproj's speaker encoder.
// Errors: rtf::Error(Setup) naming the file; rtf::Error(Usage) for a speaker file that is not audio.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <llama.h>

#include "models/lm/placement.h"

struct mtmd_context;

namespace rtf::gen_audio {

// libmtmd's log stays quiet (errors only) unless RTF_LLAMA_LOG=1. `what` names the family in errors.
mtmd_context *open_mmproj(const std::string &path, const llama_model *model, const lm::ModelPlacement &p,
                          const std::string &what);
// token_embd.weight of the GGUF at `path`, every row as n_embd floats (any ggml type).
std::vector<float> token_rows(const std::string &path, int n_embd);
// The id whose text is exactly `text`, searched from the end (special tokens sit there); -1 if none.
int32_t find_token(const llama_vocab *v, const char *text);
// A speaker reference (WAV / MP3 / FLAC, resampled by libmtmd to the encoder's rate) through the
// mmproj's speaker encoder, as llama.cpp's helper does: the rows of its first audio chunk, n_embd
// floats each (Pocket TTS: one per 80 ms; Qwen3-TTS: one x-vector). `what` names the family.
std::vector<float> encode_speaker(mtmd_context *m, const std::string &file, int n_embd, const std::string &what);
// The rows of the voice named `name` among `voices` ("default" first); rtf::Error(Usage) naming
// the loaded ones when there is none of that name. `what` names the family.
const std::vector<float> &pick_voice(const std::vector<std::pair<std::string, std::vector<float>>> &voices,
                                     const std::string &name, const std::string &what);
// Throws rtf::Error(Usage) when `name` cannot be one more voice among `voices` (empty, "default",
// or already loaded), naming it and the family.
void check_new_voice(const std::vector<std::pair<std::string, std::vector<float>>> &voices, const std::string &name,
                     const std::string &what);
// The ne[0] of a tensor in a GGUF (headers only); throws naming the file and tensor when absent.
int64_t tensor_ne0(const std::string &path, const std::string &tensor);

}  // namespace rtf::gen_audio
