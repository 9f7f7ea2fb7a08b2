#pragma once
// Layout tables of Qwen3-TTS as the pinned llama.cpp tree loads it (docs/families/qwen3-tts-pocket-tts.md
// §2.3, §3.3, §5, §6): two GGUF files per kit,
//
//   DIR/qwen3-tts.gguf          backbone, arch `qwen3tts` (libllama: Qwen3-VL text model, IMROPE), the
//                               "talker": Qwen2's BPE text vocabulary then a 3072-row codec block
//                               (<|codec_i|>, the specials renamed), its 3072-row codec head
//   DIR/mmproj-qwen3-tts.gguf   mmproj (`clip`, libmtmd): the ECAPA speaker encoder (`a.*`, `mm.a.fc`),
//                               the code predictor (`a.gen.code.*`: 15 more codes per frame) and
//                               code2wav (`a.gen.wav.*`: RVQ decode, SWA transformer, 2 upsampling
//                               blocks, the DAC decoder)
//
// What clip.cpp fixes and a twin keeps (§6.3): 16 codes per frame (15 predicted), codebooks of 2048,
// 8 code2wav layers of 16 heads, 2 upsampling blocks (stride 2), 4 DAC blocks of strides 8,5,4,3 with
// 3 residual units (dilations 1,3,9), the 72-frame window, 1920 samples per 12.5 Hz frame, 3 ECAPA
// blocks of res2net scale 8; the codec block is the vocabulary's last 3072 rows with <|codec_0|>
// first. Widths shrink with the scale.
//
// Scales: full = the 0.6B model's shapes [ext: its config] (talker 28 x 1024, 16/8 heads of 128,
// FFN 3072; predictor 5 x 1024; code2wav 512 wide, latent 1024, DAC 1536); cpu = full; tiny = talker
// 2 x 64, predictor 1 x 64, code2wav 64 wide (16 heads of 4), latent 64, DAC 96, ECAPA 32 channels.
// The text vocabulary is Qwen2's (llama.cpp's models/ggml-vocab-qwen2.gguf, 151936 entries) at every
// scale: the chat wrapper must tokenize as the real one does.
#include <cstdint>
#include <string>

#include "models/gguf/layout.h"
#include "models/gguf/minicpmo45-layout.h"

namespace rtf::gguf {
class GgufFile;
}

namespace rtf::gguf::qwen3tts {

inline constexpr const char *kBackboneFile = "qwen3-tts.gguf";
inline constexpr const char *kMmprojFile = "mmproj-qwen3-tts.gguf";
inline constexpr int64_t kCodecRows = 3072;   // the talker's codec vocabulary (qwen3vl.cpp hard-codes it)
inline constexpr int64_t kCodebook = 2048;    // entries per codebook
inline constexpr int64_t kAcoustic = 15;      // codebooks the predictor samples
inline constexpr int64_t kTextVocab = 151936; // Qwen2's vocabulary file
// Codec ids of the specials (0.6B model [ext]); the twin renames those rows.
inline constexpr int64_t kCodecLanguageEnglish = 2050, kCodecPad = 2148, kCodecBos = 2149, kCodecEos = 2150,
                         kCodecThink = 2154, kCodecThinkBos = 2156, kCodecThinkEos = 2157;
// Text ids of the TTS specials in the text block [ext]: <tts_pad>, <tts_text_bos>, <tts_text_eod>.
inline constexpr int64_t kTtsPad = 151671, kTtsBos = 151672, kTtsEos = 151673;

struct TalkerDims {
    int64_t n_layer = 28, n_embd = 1024, n_head = 16, n_head_kv = 8, head_dim = 128, n_ff = 3072, n_ctx = 4096;
    int64_t n_text = kTextVocab;
    int64_t n_vocab() const { return n_text + kCodecRows; }
};

struct PredictorDims {
    int64_t n_layer = 5, n_embd = 1024, n_head = 16, n_head_kv = 8, head_dim = 128, n_ff = 3072;
};

struct Code2WavDims {
    int64_t cd = 256, q = 512, latent = 1024, hidden = 512, head_dim = 64, n_ff = 1024, dac = 1536;
};

struct SpeakerDims {
    int64_t c = 512, se = 128, asp = 128, n_mel = 128;
};

struct Dims {
    TalkerDims talker;
    PredictorDims predictor;
    Code2WavDims c2w;
    SpeakerDims spk;
};

Dims dims_for_scale(minicpmo45::Scale s);

FileLayout backbone_layout(const Dims &d, WeightType t);
FileLayout mmproj_layout(const Dims &d);
FileLayout layout_for(Role r, const Dims &d, WeightType t);
Dims infer_dims(const GgufFile &f, Role r);

}  // namespace rtf::gguf::qwen3tts
