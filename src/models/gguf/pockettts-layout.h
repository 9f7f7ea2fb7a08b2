#pragma once
// Layout tables of Pocket TTS as the pinned llama.cpp tree loads it (docs/families/qwen3-tts-pocket-tts.md
// §2.4, §3.4, §6): two GGUF files per kit,
//
//   DIR/pocket-tts.gguf          backbone, arch `pockettts` (libllama): the flow_lm transformer
//                                (pre-LN LayerNorm, GELU FFN, NORM rope), a UGM ("t5") vocabulary
//                                whose last rows are <|pad|>, <|bos_before_voice|>, <|audio_bos|>
//   DIR/mmproj-pocket-tts.gguf   mmproj (`clip`, libmtmd): the speaker encoder (mimi SEANet +
//                                2 transformer layers + downsample + speaker_proj, `a.*`) and the
//                                audio generator (the flow MLP + EOS head + mimi decoder, `a.gen.*`)
//
// What clip.cpp fixes and a twin must keep (§6.3): SEANet ratios {4,5,6} (the decoder walks them
// backwards), down/upsampling by 16 with kernel 32, a 250-frame transformer context, two time
// embedders, 1920 samples per 12.5 Hz frame at 24 kHz; the backbone width equals speaker_proj's
// and input_linear's output. Everything else shrinks with the scale.
//
// Scales (rtf twin --family pocket-tts --scale):
//   full  the english model's shapes: backbone 6 x 1024 (16 heads, FFN 4096, 4000 text pieces),
//         mimi 512 wide (8 heads, FFN 2048, 2 layers), SEANet 64 filters, flow MLP 512 x 6.
//   cpu   = full (Pocket TTS is a CPU model already).
//   tiny  backbone 2 x 64 (2 heads, FFN 128, 124 text pieces), mimi 32 (2 heads, FFN 64), SEANet 4
//         filters, flow MLP 32 x 2; the latent stays 32 wide and every fixed number above stays.
//
// The twin's vocabulary is its own (the real one is a 4000-piece sentencepiece model we do not
// have): <unk>, then "▁" + the letters, digits and punctuation, then whole words ("▁the", ...),
// each scored so that UGM's Viterbi prefers the longest piece, then the three control rows.
#include <cstdint>
#include <string>

#include "models/gguf/layout.h"
#include "models/gguf/minicpmo45-layout.h"

namespace rtf::gguf {
class GgufFile;
}

namespace rtf::gguf::pockettts {

inline constexpr const char *kBackboneFile = "pocket-tts.gguf";
inline constexpr const char *kMmprojFile = "mmproj-pocket-tts.gguf";
inline constexpr int64_t kLatent = 32;      // latent floats per frame (the flow's output)
inline constexpr int64_t kFrameSamples = 1920;
inline constexpr int kSampleRate = 24000;
inline constexpr int64_t kNControl = 3;     // <|pad|>, <|bos_before_voice|>, <|audio_bos|>

struct BackboneDims {
    int64_t n_layer = 6, n_embd = 1024, n_head = 16, n_ff = 4096;
    int64_t n_text = 4000;  // vocabulary rows before the control rows
    int64_t n_ctx = 4096;
    int64_t n_vocab() const { return n_text + kNControl; }
};

struct MimiDims {
    int64_t d = 512, n_head = 8, n_ff = 2048, n_layer = 2;  // the encoder's and decoder's transformers
    int64_t n_filters = 64;                                  // SEANet: stage widths F, 2F, 4F, then 8F
};

struct FlowDims {
    int64_t d = 512, depth = 6;
};

struct Dims {
    BackboneDims backbone;
    MimiDims mimi;
    FlowDims flow;
    std::string variant = "english";  // clip.gen.audio.model_variant: llama.cpp's tuned pack for it
};

Dims dims_for_scale(minicpmo45::Scale s);

// The twin vocabulary's pieces (n_text of them: <unk> first), deterministic.
std::vector<std::string> twin_pieces(int64_t n_text);

FileLayout backbone_layout(const Dims &d, WeightType t);
FileLayout mmproj_layout(const Dims &d);
// Role::backbone or Role::mmproj; throws rtf::Error(Usage) for another role.
FileLayout layout_for(Role r, const Dims &d, WeightType t);

// Dimensions of a file as found in its keys and tensor shapes (layout-check.h).
Dims infer_dims(const GgufFile &f, Role r);

}  // namespace rtf::gguf::pockettts
