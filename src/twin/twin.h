#pragma once
// Twin models: GGUF files with the exact tensor names, shapes, types and metadata of a real
// model file, filled with seeded random values. A twin costs the same
// bytes and FLOPs as the real file, so its timings are real; its audio is noise.
//
// Usage:
//   rtf::twin::KitOptions o;                 // minicpmo45, tiny, f16, seed 0
//   o.scale = Scale::cpu; o.out_dir = "kit";
//   o.dims = rtf::gguf::minicpmo45::dims_for_scale(o.scale);
//   auto r = rtf::twin::make_kit(o);          // writes the kit + kit/rtf-kit.json
//   rtf::twin::make_like("real.gguf", "twin.gguf", 0);
//
// Kit layout (the reference runtime's, docs/minicpmo45.md §2.1): DIR/MiniCPM-o-4_5-<TYPE>.gguf
// (LLM), DIR/tts/MiniCPM-o-4_5-tts-<TYPE>.gguf, DIR/tts/MiniCPM-o-4_5-projector-F16.gguf,
// DIR/token2wav-gguf/{encoder,flow_matching,flow_extra,hifigan2,prompt_cache}.gguf (with the
// seeded prompt bundle spk_f32.bin, prompt_tokens_i32.bin, prompt_mel_btc_f32.bin beside the
// prompt cache: prompt-bundle.h),
// DIR/audio/MiniCPM-o-4_5-audio-F16.gguf (the duplex audio encoder, role `apm`), optionally
// DIR/vision/MiniCPM-o-4_5-vision-F16.gguf (the vision encoder, role `vpm`; not by default), and
// DIR/voices/{twin-a,twin-b}/prompt_cache.gguf (two more seeded voices: KitOptions::voices), and
// DIR/rtf-kit.json (family, scale, type, seed, dims, files with roles and sizes, voices).
//
// Determinism: the same options (seed, dims, type, vocabulary file) give identical bytes.
// Files are written streaming (a few MiB of memory whatever the file size) to "<name>.part",
// renamed when complete. Errors: rtf::Error(Usage) for bad options, rtf::Error(Setup) for I/O.
// Not thread-safe to write the same directory from two calls.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/gguf/layout.h"
#include "models/gguf/minicpmo45-layout.h"
#include "models/gguf/pockettts-layout.h"
#include "models/gguf/qwen3tts-layout.h"

namespace rtf::twin {

using gguf::Role;
using gguf::WeightType;
using gguf::minicpmo45::Scale;

// Progress of one file: bytes written so far and the file's total.
using ProgressFn = std::function<void(const std::string &file, uint64_t done, uint64_t total)>;

struct KitOptions {
    // "minicpmo45" (the files above), "pocket-tts" (DIR/pocket-tts.gguf + DIR/mmproj-pocket-tts.gguf,
    // pockettts-layout.h; `pocket` holds its dims, `roles` / `voices` / `vocab_path` do not apply) or
    // "qwen3-tts" (DIR/qwen3-tts.gguf + DIR/mmproj-qwen3-tts.gguf, qwen3tts-layout.h; `qwen3`; the
    // text vocabulary from `vocab_path`).
    std::string family = "minicpmo45";
    Scale scale = Scale::tiny;
    WeightType type = WeightType::f16;
    uint64_t seed = 0;
    std::string out_dir;                  // required unless dry_run
    gguf::minicpmo45::Dims dims = gguf::minicpmo45::dims_for_scale(Scale::tiny);
    gguf::pockettts::Dims pocket = gguf::pockettts::dims_for_scale(Scale::tiny);
    gguf::qwen3tts::Dims qwen3 = gguf::qwen3tts::dims_for_scale(Scale::tiny);
    std::vector<Role> roles{gguf::default_kit_roles.begin(), gguf::default_kit_roles.end()};  // files to write
    std::string vocab_path;               // vocabulary GGUF for the tokenizer ("" = RTF_VOCAB_DIR/ggml-vocab-qwen2.gguf)
    // Extra voices written with the prompt cache: DIR/voices/NAME/prompt_cache.gguf, the prompt
    // cache's layout with the seed voice_seed(seed, i): other speaker vectors and caches, so
    // other audio for the same codes. Names: t2w::valid_voice_name (voice.h).
    std::vector<std::string> voices{"twin-a", "twin-b"};
    bool dry_run = false;                 // compute sizes from the headers, write nothing
    ProgressFn progress;                  // optional

    void validate() const;                // throws rtf::Error(Usage) naming the option
    nlohmann::json to_json() const;
};

struct FileResult {
    Role role;
    std::string path;        // relative to out_dir
    uint64_t bytes = 0;
    int64_t n_tensors = 0;
    double seconds = 0.0;
};

struct KitResult {
    std::vector<FileResult> files;
    std::vector<FileResult> voices;  // KitOptions::voices' files (role prompt_cache), in order
    uint64_t total_bytes = 0;
    double seconds = 0.0;
    nlohmann::json to_json(const KitOptions &o) const;  // what rtf-kit.json holds
};

KitResult make_kit(const KitOptions &o);

// The seed of the kit's i-th extra voice (0-based): apart from every other file's.
uint64_t voice_seed(uint64_t seed, size_t i);

// Default vocabulary file (RTF_VOCAB_DIR/ggml-vocab-qwen2.gguf).
std::string default_vocab_path();

// Writes one file of a layout. `vocab_path` is needed when the layout has a tokenizer.
// Returns the file size (also in dry-run mode, where nothing is written).
FileResult write_layout(const gguf::FileLayout &layout, const std::string &path, uint64_t seed,
                        const std::string &vocab_path, bool dry_run, const ProgressFn &progress);

// Twin of any GGUF file from its header alone: the same header bytes (every key/value, tensor
// name, shape, type and offset) followed by random data of each tensor's type and size.
FileResult make_like(const std::string &in_path, const std::string &out_path, uint64_t seed,
                     const ProgressFn &progress = {});

}  // namespace rtf::twin
