#pragma once
// Layout tables: what one GGUF file of a model family must contain (metadata keys, tensor
// names, shapes, types), plus how a twin fills each tensor with random values.
//
// A FileLayout is built from dimensions (see minicpmo45-layout.h): the twin generator writes
// exactly the layout, and the layout check (layout-check.h) compares a file against the layout
// built from the dimensions found in that file. So a real file and a twin are checked the same way.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <ggml.h>
#include <gguf.h>

namespace rtf::gguf {

// The files of MiniCPM-o 4.5 (docs/minicpmo45.md §2.1, with `apm` and
// `vpm`, the audio and vision encoders of the duplex input side). One role per file.
// `encoder` is Token2Wav's conformer encoder, `apm` the Whisper audio encoder, `vpm` the
// SigLIP vision encoder with its resampler.
enum class Role { llm, tts, projector, encoder, flow_matching, flow_extra, hifigan2, prompt_cache, apm, vpm, backbone, mmproj };

inline constexpr std::array<Role, 10> all_roles{Role::llm,      Role::tts,           Role::projector,
                                                Role::encoder,  Role::flow_matching, Role::flow_extra,
                                                Role::hifigan2, Role::prompt_cache,  Role::apm,
                                                Role::vpm};
// The two files of a libmtmd speech family (Pocket TTS, Qwen3-TTS; pockettts-layout.h): the libllama
// backbone, and the mmproj GGUF holding the speaker encoder and the audio-generation stages.
inline constexpr std::array<Role, 2> mtmd_family_roles{Role::backbone, Role::mmproj};
// What `rtf twin` writes unless told otherwise: every role but the vision encoder (optional:
// `rtf twin --vision`, or `--only vpm`).
inline constexpr std::array<Role, 9> default_kit_roles{Role::llm,      Role::tts,           Role::projector,
                                                       Role::encoder,  Role::flow_matching, Role::flow_extra,
                                                       Role::hifigan2, Role::prompt_cache,  Role::apm};

const char *role_name(Role r) noexcept;  // "llm", "tts", "projector", "encoder", ..., "apm"
// Parses a role name; throws rtf::Error(Usage) naming `what` and the allowed names.
Role parse_role(const std::string &text, const std::string &what);
bool is_token2wav(Role r) noexcept;

// Weight type of a kit (`--type`): applies to the weight matrices of the LLM and the TTS; the
// projector and token2wav files stay F32 (docs/minicpmo45.md §2.12).
enum class WeightType { f16, q8_0, q4_k_m };
const char *weight_type_name(WeightType t) noexcept;       // "f16", "q8_0", "q4_k_m"
const char *weight_type_file_tag(WeightType t) noexcept;   // "F16", "Q8_0", "Q4_K_M"
WeightType parse_weight_type(const std::string &text, const std::string &what);
// llama.cpp's general.file_type (enum llama_ftype): 1, 7, 15.
uint32_t llama_file_type(WeightType t) noexcept;

// How the twin generator fills a tensor. Values are N(mean, std²) (the generator may use a
// uniform distribution with the same mean and std), then the special rules below.
struct Init {
    float mean = 0.0f;
    float std = 0.0f;          // 0: constant `mean`
    float dim0_offset = 0.0f;  // added to element 0 of every row (TTS embeddings: keeps dim 0 positive)
    int64_t rows_nonzero = -1; // rows >= this are zero (TTS token_embd padding); -1 = all rows
    // Last row-element (ne0-1) of every row is set to 0, except row 0 which gets `last_col_value`
    // (TTS head_code EOS column in its transposed storage, docs/minicpmo45.md §2.3).
    bool last_col_special = false;
    float last_col_value = 0.0f;
};
Init init_normal(float std);
Init init_const(float value);

struct TensorSpec {
    std::string name;
    std::array<int64_t, 4> ne{1, 1, 1, 1};
    ggml_type type = GGML_TYPE_F32;  // type a twin writes
    // Type check: true = any float or quantized type is accepted (weight matrices of llama-style
    // models: a real file may be F16, BF16, Q8_0 or a Q4_K_M mix); false = exactly `type`.
    bool any_weight_type = false;
    Init init;
    // Random stream name (empty: `name`). The projector file uses the TTS file's
    // projector_semantic.* names so both hold the same values, as in the real bundle.
    std::string seed_name;
};

// std::vector<float>: an f32 array key (the audio encoder's mel filter bank); the string and
// int32 arrays: a tokenizer a layout writes itself (Pocket TTS's, pockettts-layout.h).
using KvValue = std::variant<std::monostate, uint32_t, int32_t, float, bool, std::string, uint64_t, std::vector<float>,
                             std::vector<int32_t>, std::vector<std::string>>;

struct KvSpec {
    std::string key;
    KvValue value;       // value a twin writes (monostate: written by someone else, e.g. the tokenizer)
    // The check compares the value: strings (general.architecture) and integers exactly; an
    // array by its length only. Else presence only.
    bool check_value;
    bool required = true;  // false: written by a twin but not required in a real file
};

struct FileLayout {
    Role role = Role::llm;
    std::string file_name;  // path relative to the kit directory (docs/minicpmo45.md §2.1)
    std::vector<KvSpec> kvs;
    std::vector<TensorSpec> tensors;
    // The twin copies tokenizer.ggml.* from a vocabulary GGUF and sizes the token list to this
    // many entries (0: no tokenizer).
    int64_t tokenizer_tokens = 0;
    // Control tokens the layout names itself (id, text), written over the copied list; empty =
    // MiniCPM-o 4.5's named tokens. With them, `tokenizer_eos` (>= 0) is the EOS id.
    std::vector<std::pair<int64_t, std::string>> named_tokens;
    int64_t tokenizer_eos = -1;

    const TensorSpec *find(const std::string &name) const;
    // Bytes of tensor data including alignment padding (32) — the data section of the file.
    uint64_t data_bytes(size_t alignment = 32) const;
};

// Type-size helpers.
uint64_t tensor_nbytes(ggml_type type, const std::array<int64_t, 4> &ne);

}  // namespace rtf::gguf
