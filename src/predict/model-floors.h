#pragma once
// `rtf limits`, part 2: per-stage lower bounds from the model files (docs/method.md §4).
//
// A stage cannot run faster than max(bytes it must move / memory bandwidth, FLOPs / peak
// FLOP rate). Costs per second of audio, from GGUF tensor shapes and sizes (headers only):
//
//   llm  per text token: every tensor's bytes except token_embd (one row is read), plus
//        the KV cache read at position `llm_kv_tokens` (K and V, F16, n_layer x n_kv_head x
//        head_dim each); FLOPs 2 x weight elements + 4 x n_layer x n_head x head_dim x
//        kv_tokens (QK^T and AV). x text_tokens_per_s (an ASSUMPTION: speech rate in text
//        tokens per second of audio, default 4; pass the real figure with --text-tokens-per-s).
//   tts  per audio token (25 per second of audio, docs/minicpmo45.md §1.3): blk.* + output_norm +
//        head_code (read whole for the logits) + one emb_code row + KV at `tts_kv_tokens`;
//        plus the projector once per 10-text-token message (docs/minicpmo45.md §3.2).
//   t2w  per 1-s window (28 tokens = 25 + 3 look-ahead, docs/minicpmo45.md §1.3): FLOPs from
//        the token2wav files' shapes — a documented ESTIMATE, not a count of every op (norms,
//        activations, iSTFT are ignored: they are memory-light elementwise work):
//          encoder  token-rate layers x 28 tokens, mel-rate layers (up_*) x 56 frames,
//                   attention 2 x (L_conf + frames) x d per layer per frame
//          DiT      per frame: blocks' weights (q,k,v,proj, 2 convs, MLP) + in_proj + final
//                   linear + attention 2 x (L_est + 56) x d per block; x 56 frames x
//                   n_timesteps (prompt_cache, default 5) x 2 (CFG branches); adaLN and the
//                   timestep MLP once per step and branch
//          HiFT     each conv's K x Cin x Cout x its output length: T = 58 mel frames
//                   (50 new + 8 cached, golden README), stages at 8T, 40T, 120T samples/hop
//                   (ups.s counted on its input length)
//        Bytes: all token2wav weights once per window (F32); parts token2mel_bytes / vocoder_bytes
//        (hifigan2's) split them for a placement that puts the two on different devices.
//   kernels (a part of every stage): device kernels per unit, ESTIMATED as 3 per weight
//        matrix used (the product + its norm / activation / residual); only `rtf predict`'s
//        per-kernel launch floor on accelerators reads it.
//        The golden README's hand estimate for the full-size twin: token2mel ~95 GFLOP, HiFT
//        25-30 GFLOP per window; this code reproduces it from the files.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/gguf/layout.h"
#include "models/gguf/minicpmo45-layout.h"
#include "models/lm/tts-engine.h"
#include "models/t2w/t2w-model.h"

namespace rtf::predict {

struct FloorAssumptions {
    double text_tokens_per_s = 4;     // text tokens per second of audio (speech rate)
    double audio_tokens_per_s = lm::TtsEngine::codes_per_second();  // MiniCPM-o 4.5 TTS rate (docs/minicpmo45.md §1.3)
    int llm_kv_tokens = 512;          // LLM context position the KV read is costed at
    int tts_kv_tokens = 256;          // TTS context position
    int t2w_window_tokens = t2w::kWindowTokens;  // 25 + 3 look-ahead
    int t2w_mel_frames_vocoder = t2w::kMelCacheFrames + 2 * t2w::kStrideTokens;  // 50 new + 8 cached (58)
    void validate() const;            // throws rtf::Error(Usage) naming the flag
    nlohmann::json to_json() const;
};

struct StageCost {
    std::string stage;                // "llm" | "tts" | "t2w"
    std::vector<std::string> files;
    std::string unit;                 // "text token" | "audio token" | "window"
    double units_per_audio_s = 0;
    double bytes_per_unit = 0;
    double flops_per_unit = 0;
    std::string weight_type;          // "f16" | "f32" | other ggml type name: which FLOP rate applies
    std::vector<std::pair<std::string, double>> parts;  // named FLOP (or byte) parts, per unit
    std::vector<std::string> notes;
};

struct ModelCosts {
    std::string dir;
    std::string family = "minicpmo45";  // speak/kit.h's name: minicpmo45, pocket-tts, qwen3-tts
    std::vector<StageCost> stages;
    std::vector<std::string> notes;   // files found/ignored, assumptions
};

// Scans `dir` (and its subfolders, two levels) for the speak path's GGUF files: an LLM (any
// libllama architecture other than the TTS), the TTS (architecture "llama" with
// head_code.0.weight), the projector, and token2wav's encoder / flow_matching / flow_extra /
// hifigan2 / prompt_cache. Stages whose files are missing are left out (noted). Throws
// rtf::Error(Usage) when `dir` is not a directory or holds none of them.
ModelCosts model_costs(const std::string &dir, const FloorAssumptions &a);

// The same costs from the family's layout table instead of files: the tensors a kit of
// `scale` (tiny | cpu | full) with LLM/TTS weight type `type` has (minicpmo45-layout.h), so a
// full-scale kit (a 16 GiB F16 LLM) is costed without being written. ModelCosts::dir reads
// "layout:<scale>-<type>". Equal to model_costs() on a twin kit of that scale and type.
ModelCosts model_costs_for_layout(gguf::minicpmo45::Scale scale, gguf::WeightType type, const FloorAssumptions &a);

// One libllama file costed as a decoder (lm-bench's floor): bytes and FLOPs per decoded
// token as for the llm stage above (every tensor but one row of token_embd, KV at
// `kv_tokens`), whatever the file's architecture; `stage` labels the result. The TTS's
// derived plain-llama file (the one libllama runs) is costed the same way.
StageCost decoder_file_cost(const std::string &path, const std::string &stage, int kv_tokens);

nlohmann::json to_json(const StageCost &c);

}  // namespace rtf::predict
