#pragma once
// Layout check: does a GGUF file contain what its role in the MiniCPM-o 4.5 family requires?
// Used by `rtf inspect` and by the engines when they load a file (require_layout), so a real
// file and a twin are checked by the same tables (minicpmo45-layout.h).
//
// How the expected layout is found: dimensions come from the file itself — the llama-style
// files (LLM, TTS) from their metadata keys (qwen3.* / llama.*), token2wav block counts from the
// tensor names that exist (encoders.{i}, up_encoders.{i}, estimator.blocks.{i}: max index + 1),
// prompt_cache length L from its tensors and N from mtmd.prompt_cache.n_timesteps; every other
// width is the reference runtime's constant (docs/minicpmo45.md §8.1). Then every tensor is
// compared by name, shape and type, and the required keys by presence (general.architecture by
// value).
//
// Usage:
//   auto problems = rtf::gguf::check_layout("kit/token2wav-gguf/encoder.gguf");   // role from name
//   rtf::gguf::require_layout(path, rtf::gguf::Role::hifigan2);  // throws rtf::Error(Usage)
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/gguf/gguf-file.h"
#include "models/gguf/layout.h"
#include "models/gguf/minicpmo45-layout.h"

namespace rtf::gguf {

struct Problem {
    std::string file;      // path as given
    std::string kind;      // not_gguf | bad_header | truncated | unknown_role | missing_tensor |
                           // extra_tensor | shape | type | missing_key | key_value | vocab | missing_file
    std::string subject;   // tensor name or metadata key ("" for whole-file problems)
    std::string expected;
    std::string actual;
    std::string message() const;  // one line naming file, subject, expected and actual
};

nlohmann::json to_json(const Problem &p);

// Role from the file name (encoder.gguf, ...-projector-..., ...-tts-...) or, failing that, from
// the content (general.architecture, characteristic tensors). nullopt when neither says.
std::optional<Role> detect_role(const std::string &path, const GgufFile *file);

// Dimensions of a file as read from it (see the header comment); fields of other roles keep the
// full-scale defaults.
minicpmo45::Dims infer_dims(const GgufFile &f, Role r);

// Problems of one file (empty = the file has the layout). `role` nullopt: detect_role.
// Non-GGUF files, unreadable headers and truncated data are reported as problems.
// Throws rtf::Error(Usage) only when the path does not exist or cannot be read.
std::vector<Problem> check_layout(const std::string &path, std::optional<Role> role = std::nullopt);
// Same for an already opened file.
std::vector<Problem> check_layout(const GgufFile &f, Role role);

// Throws rtf::Error(Usage) listing every problem (file and tensor named) when there is any.
void require_layout(const std::string &path, std::optional<Role> role = std::nullopt);

// `rtf inspect`: one file or a directory (a kit: *.gguf files up to two levels deep).
struct InspectedFile {
    std::string path;
    std::string role;       // "" when unknown
    int64_t n_tensors = 0;
    uint64_t bytes = 0;     // file size
    std::string architecture;
    std::vector<Problem> problems;
    bool skipped = false;   // directory mode: a GGUF file of no known role (not counted as a problem)
    // Directory mode: a file rtfkit derived itself, under a `.rtf-cache` folder (the
    // plain-llama TTS file of lm/derived-tts-model.h). Listed with its header facts, not
    // checked against a family layout; an unreadable one is a problem (delete it: the next
    // run rebuilds it).
    bool derived = false;
};

struct InspectReport {
    std::string path;
    std::vector<InspectedFile> files;
    std::vector<Problem> kit_problems;  // missing files of a kit (rtf-kit.json), cross-file dims
    size_t n_problems() const;
};

// Throws rtf::Error(Usage) when `path` does not exist or cannot be read.
InspectReport inspect_path(const std::string &path);
nlohmann::json to_json(const InspectReport &r);

}  // namespace rtf::gguf
