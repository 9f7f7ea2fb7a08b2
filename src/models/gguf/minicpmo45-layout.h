#pragma once
// Layout tables of MiniCPM-o 4.5's speak path (spec specs/minicpmo45-speak-path.md §1, §6):
// dimensions of every file, the three twin scales, and the builders that turn dimensions into
// a FileLayout (tensor names, shapes, types, metadata keys, twin init values).
//
// Scales (rtf twin --scale):
//   full  real shapes: LLM Qwen3-8B, TTS 20 x 768, token2wav as the official files.
//   cpu   full-shape TTS, projector and token2wav + a Qwen3-0.6B-shaped LLM (28 x 1024).
//   tiny  LLM 2 x 128 (4 heads x 32, 2 KV heads, FFN 256), TTS 2 x 64 (2 heads x 32, FFN 128),
//         projector 128 -> 64; token2wav keeps every width, channel count and head count and only
//         the block counts shrink: encoder 1 token-rate + 1 mel-rate conformer block, DiT 2 blocks;
//         HiFT and prompt_cache unchanged (full shape). Engines infer block counts from the tensor
//         names that exist (encoders.{i}, up_encoders.{i}, estimator.blocks.{i}).
// Interface constants never shrink: LLM vocabulary 151748, TTS vocabulary 158626 = 6562 audio
// classes + 152064 text rows, 80 mel bins, 192 speaker dims, 6561 codes.
//
// The audio encoder (`apm`, docs/minicpmo45.md §2.10, §5: Whisper-medium encoder + a 2-layer
// projector to the LLM width) follows the same scales: full 24 x 1024 (16 heads, FFN 4096),
// projector 1024 -> 4096 -> 4096; cpu the same encoder with the projector ending at the cpu
// LLM's 1024; tiny 2 x 64 (2 heads, FFN 256) -> 128 -> 128. At every scale the positional table
// keeps its 1500 rows (the streaming KV cache's 30 s, docs/minicpmo45.md §5.2) and the mel
// filter bank its 80 x 201.
// The vision encoder (`vpm`, docs/minicpmo45.md §2.11, optional in kits): full/cpu SigLIP
// 27 x 1152 with the resampler in the LLM width (4096 / 1024); tiny 2 x 64 (2 heads, FFN 128),
// resampler 128; the 70 x 70 position tables keep their 4900 rows at every scale.
#include <cstdint>
#include <string>

#include "models/gguf/layout.h"

namespace rtf::gguf::minicpmo45 {

inline constexpr int64_t kLlmVocab = 151748;
inline constexpr int64_t kTtsAudio = 6562;     // 6561 codes + EOS
inline constexpr int64_t kTtsText = 152064;    // emb_text rows
inline constexpr int64_t kTtsVocab = kTtsAudio + kTtsText;  // 158626
inline constexpr int64_t kTtsTokEmbdRows = 32000;           // token_embd rows that are not zero padding
inline constexpr int64_t kCodes = 6561;        // token2wav vocabulary
inline constexpr int64_t kMel = 80;
inline constexpr int64_t kSpk = 192;

struct LlmDims {
    int64_t n_layer = 36, n_embd = 4096, n_head = 32, n_head_kv = 8, head_dim = 128, n_ff = 12288;
    int64_t n_vocab = kLlmVocab, n_ctx = 40960;
    float rope_base = 1000000.0f, rms_eps = 1e-6f;
};

struct TtsDims {
    int64_t n_layer = 20, n_embd = 768, n_head = 12, n_head_kv = 12, n_ff = 3072;
    int64_t n_llm_embd = 4096;  // input width of projector_semantic / projector_spk
    int64_t n_ctx = 4096;
    float rope_base = 10000.0f, rms_eps = 1e-6f;
    float eos_beta = 1.3f;      // twin: EOS column of head_code at hidden dim 0 (audio EOS after a few dozen codes)
};

struct ProjectorDims {
    int64_t n_in = 4096, n_out = 768;
};

// Token2Wav: widths are the reference runtime's constants (docs/minicpmo45.md §8.1);
// only block counts vary between scales.
struct EncoderDims {
    int64_t n_blocks = 6, n_up_blocks = 4;
    int64_t d = 512, n_head = 8, n_ff = 2048, k_pre1 = 4, k_pre2 = 3, k_up = 5;
};

struct FlowMatchingDims {
    int64_t n_blocks = 16;
    int64_t d = 512, n_head = 8, n_mlp = 2048, t_freq = 256, n_in = 4 * kMel;
};

struct FlowExtraDims {
    int64_t d_embd = 512, d_enc = 512;
};

struct HiftDims {
    int64_t c_pre = 512, c_f0 = 512;  // conv_pre / f0 condnet width; stage channels c_pre/2, /4, /8
};

struct PromptCacheDims {
    int64_t d = 512, n_head = 8, head_dim = 64, n_conf_layers = 10, n_dit_blocks = 16, n_steps = 5, L = 302;
};

// Audio encoder (docs/minicpmo45.md §2.10). Widths from the MiniCPM-o 4.5 module dump
// (llama.cpp-omni convert/model.txt): conv 80 -> 1024, 24 layers, k_proj without bias,
// fc1 1024 -> 4096, projector linear1 1024 -> 4096, linear2 4096 -> 4096.
inline constexpr int64_t kApmCtx = 1500;     // positional_embedding rows = KV-cache tokens
inline constexpr int64_t kApmFftBins = 201;  // mel filter columns: 1 + n_fft(400) / 2
inline constexpr int64_t kApmPool = 5;       // average pooling kernel = stride over encoder tokens
struct ApmDims {
    int64_t n_layer = 24, d = 1024, n_head = 16, n_ff = 4096;
    int64_t n_mel = kMel, n_ctx = kApmCtx;
    int64_t n_proj = 4096;  // projector linear1 output (the LLM width in the real model)
    int64_t n_out = 4096;   // projector linear2 output = the LLM's n_embd (one embedding row per 5 tokens)
};

// Vision encoder (docs/minicpmo45.md §2.11, §6; llama.cpp-omni convert_vpm.py): SigLIP-so400m
// ViT (27 x 1152, 16 heads, FFN 4304, patch 14, a learned 70 x 70 position table) + the MiniCPM-V
// resampler (64 queries of the LLM width, its attention in that width, a 70 x 70 sin-cos key
// table). The ViT widths are the converter's defaults, not read from the bundle
// (docs/minicpmo45.md §9.9).
inline constexpr int64_t kVpmGrid = 70;  // position buckets per side
struct VpmDims {
    int64_t n_layer = 27, d = 1152, n_head = 16, n_ff = 4304;
    int64_t patch = 14, image_size = 448;
    int64_t n_query = 64;
    int64_t n_embd = 4096;  // resampler width = the LLM's n_embd
    int32_t version = 100045;  // clip.minicpmv_version of MiniCPM-o 4.5 (run_convert.sh; convert.sh says 451)
};

struct Dims {
    LlmDims llm;
    TtsDims tts;
    ProjectorDims projector;
    EncoderDims encoder;
    FlowMatchingDims flow_matching;
    FlowExtraDims flow_extra;
    HiftDims hift;
    PromptCacheDims prompt_cache;
    ApmDims apm;
    VpmDims vpm;
};

enum class Scale { tiny, cpu, full };
const char *scale_name(Scale s) noexcept;
Scale parse_scale(const std::string &text, const std::string &what);
Dims dims_for_scale(Scale s);
// Sets the dims that follow others: the prompt cache holds one slot per conformer layer
// (encoder blocks + up blocks) and per DiT block (x Euler steps). Call after overriding
// block counts.
void derive_dependent_dims(Dims &d);

// File names of a kit (docs/minicpmo45.md §2.1), relative to the kit directory.
std::string file_name(Role r, WeightType t);

// Layout builders. `t` sets the weight-matrix types of the LLM and TTS (Q4_K_M: llama.cpp's
// mix — attn_v / ffn_down of some layers and output.weight Q6_K, the rest Q4_K; rows not
// divisible by 256 fall back to Q5_0 / Q8_0 as llama-quantize does).
FileLayout llm_layout(const LlmDims &d, WeightType t);
FileLayout tts_layout(const TtsDims &d, WeightType t);
FileLayout projector_layout(const ProjectorDims &d);
FileLayout encoder_layout(const EncoderDims &d);
FileLayout flow_matching_layout(const FlowMatchingDims &d);
FileLayout flow_extra_layout(const FlowExtraDims &d);
FileLayout hifigan2_layout(const HiftDims &d);
FileLayout prompt_cache_layout(const PromptCacheDims &d);
// Audio encoder, always F16 matrices (the bundle ships only audio/MiniCPM-o-4_5-audio-F16.gguf).
// Its metadata carries the librosa/Slaney mel filter bank (core/mel-filters.h) as `filters`.
FileLayout apm_layout(const ApmDims &d);
// Vision encoder, F16 matrices (every 4-D tensor and every 2-D `.weight`) and F32 for the rest,
// as convert_vpm.py writes them: so v.position_embd.weight is F16, resampler.query and
// resampler.pos_embed_k F32. HF fc1 is stored as ffn_down and fc2 as ffn_up (the loader
// swaps them back by shape). Not written by default: `rtf twin --vision`.
FileLayout vpm_layout(const VpmDims &d);

FileLayout layout_for(Role r, const Dims &d, WeightType t);

}  // namespace rtf::gguf::minicpmo45
