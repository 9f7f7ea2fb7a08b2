#pragma once
// Prompt-cache builder: a voice's prompt bundle -> prompt_cache.gguf for N flow steps
// (spec minicpmo45-speak-path.md §1.9 file layout, §3.9 the computation).
//
//   auto model = T2wModel::load(dir, {}, T2wLoadOptions::weights_only());
//   PromptBundle b = PromptBundle::load("bundle/");          // spk, codes, mel; sizes checked
//   PromptCacheOptions o; o.steps = 3;
//   PromptCache c = build_prompt_cache(*model, b, o);
//   write_prompt_cache(c, "prompt_cache.gguf");                // what T2wModel::load reads
//
// Why: the estimator caches hold one slot per (Euler step, DiT block), so a prompt cache
// works for exactly the step count it was built for (Token2Mel refuses any other
// `--flow-steps`); fewer steps therefore need a cache rebuilt from the bundle.
//
// The computation (§3.9): the encoder on the T_p prompt codes as one non-last chunk with
// no caches (zero conv context, no attention cache) -> mu [80, T_m], T_m = 2·(T_p - 3);
// then one CFM chunk of N Euler steps without caches, cond = the prompt mel, both CFG
// branches, x_0 = temperature·ε with ε the first 80·T_m draws of a fresh MT19937(42)
// (std::normal_distribution<float>, channel fastest); the output mel is discarded. Every
// cache the chunk produced becomes the file, L = T_m:
//   conformer_cnn_cache  [d, 6, 1]          last 2 frames of the pre-look-ahead conv1 output ‖
//                                           last 4 of [zeros(4) ; upsampled] (conv context)
//   conformer_att_cache  [2hd, L, H, NL]    token-rate layers: K‖V of the T1 = T_p-3 frames
//                                           written twice along time ([c ; c], §3.7);
//                                           mel-rate layers: K‖V of the T_m frames
//   estimator_cnn_cache  [2h, 2, depth·N, 2] per (step, block) slot s·depth+b and CFG branch:
//                                           the last 2 input frames of conv1 ‖ conv2
//   estimator_att_cache  [2dh, L, Hd·depth·N, 2] per slot and branch: K (after k_norm) ‖ V
// The graphs are built from the same block builders as Token2Mel (token2mel-blocks.h),
// with a null cache; matrix weights in F32 (the model should be loaded with f32 types).
//
// Deterministic: the same model, bundle and options give identical bytes (ggml's CPU
// kernels compute each output element in one fixed order whatever the thread count).
// Errors: rtf::Error(Usage) naming the file / option; rtf::Error(Runtime) for a failed
// graph; rtf::Error(Setup) for I/O. Not thread-safe (one call at a time per model is fine:
// the model is only read).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/t2w/t2w-model.h"

namespace rtf::t2w {

// The three files of a prompt bundle (docs/minicpmo45.md §2.9), little-endian, no header.
inline constexpr const char *kBundleSpkFile = "spk_f32.bin";              // 192 f32
inline constexpr const char *kBundleTokensFile = "prompt_tokens_i32.bin";  // T_p int32 codes, T_p > 3
inline constexpr const char *kBundleMelFile = "prompt_mel_btc_f32.bin";    // T_m x 80 f32, time-major

struct PromptBundle {
    std::vector<float> spk;       // [192]
    std::vector<int32_t> tokens;  // [T_p]
    std::vector<float> mel;       // [T_m][80] (= ggml ne [80, T_m])

    int n_tokens() const { return static_cast<int>(tokens.size()); }
    int n_frames() const { return static_cast<int>(mel.size() / kMelBins); }

    // Reads DIR/spk_f32.bin, DIR/prompt_tokens_i32.bin, DIR/prompt_mel_btc_f32.bin and
    // validates their sizes (a missing file, a size that is not a whole number of values,
    // 192 speaker floats, T_p > 3, T_m = 2·(T_p-3) rows of 80): rtf::Error(Usage) naming
    // the file and what was expected.
    static PromptBundle load(const std::string &dir);
    // Writes the three files into dir (created): rtf::Error(Setup) on I/O errors.
    void save(const std::string &dir) const;
    // Sizes as load() checks them, and codes in 0..vocab-1 (vocab > 0); `where` names the
    // bundle in the message.
    void validate(const std::string &where, int vocab = 0) const;
};

struct PromptCacheOptions {
    int steps = 5;             // Euler steps N the cache is for (1..100; the reference ships 5)
    float temperature = 1.0f;  // noise scale τ, written as mtmd.prompt_cache.temperature (> 0)
    int threads = 2;           // CPU threads of the graphs (results do not depend on it)
    // Called after each graph: (what, done, total), e.g. ("encoder", 1, 1 + 2N).
    std::function<void(const std::string &what, int done, int total)> progress;

    void validate() const;  // throws rtf::Error(Usage) naming the option
};

// What prompt_cache.gguf holds (docs/minicpmo45.md §2.9); ne as ggml orders them (fastest first).
struct PromptCache {
    int n_timesteps = 0;
    float temperature = 1.0f;
    int att_len = 0;  // L = T_m
    std::vector<float> spk, conf_cnn, conf_att, est_cnn, est_att;
    std::vector<int64_t> ne_spk, ne_conf_cnn, ne_conf_att, ne_est_cnn, ne_est_att;

    nlohmann::json to_json() const;  // shapes and settings (no data)
};

// Runs docs/minicpmo45.md §4.9 on the model's token2mel device (CPU expected). The model may come
// from T2wModel::load(dir, {}, T2wLoadOptions::weights_only()). Throws as described on top.
PromptCache build_prompt_cache(const T2wModel &model, const PromptBundle &bundle, const PromptCacheOptions &opt);

// Writes `c` as GGUF: general.architecture = "token2wav", the seven mtmd.prompt_cache.*
// keys of §1.9 (version 2, n_timesteps, temperature, pre_lookahead 3, chunk_main 25,
// chunk_total 28, up_rate 2) and the five F32 tensors in the order above. Written to
// path + ".part", then renamed. rtf::Error(Setup) on I/O errors.
void write_prompt_cache(const PromptCache &c, const std::string &path);

}  // namespace rtf::t2w
