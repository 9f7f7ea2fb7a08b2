#pragma once
// rtf::pipe::Item — what flows between stages. One struct with optional payloads rather
// than a variant, because one hand-off can carry several (LLM -> TTS: text tokens AND
// hidden states) and a stage simply ignores what it does not use.
//
//   request   -> stage 0 (source)  text (the prompt / reply text), maybe tokens
//   LLM -> TTS                     text_tokens + hidden [n_tokens x n_embd], row-major
//   TTS -> T2W                     audio_tokens (25 per chunk for MiniCPM-o 4.5)
//   T2W -> sink                    pcm (mono float in [-1, 1]) at sample_rate; audio_ms
//
// `seq` is set by the pipeline: the n-th item a stage hands on gets seq n (0-based), so
// a stage need not count. `audio_ms` is the audio the item represents; the pipeline
// derives it from pcm/sample_rate when the last stage leaves it 0.
// Items are moved, never copied, between stages.
#include <cstdint>
#include <string>
#include <vector>

namespace rtf::pipe {

struct Item {
    int64_t seq = 0;
    std::string text;
    std::vector<int32_t> text_tokens;
    std::vector<float> hidden;       // text_tokens.size() x n_embd
    int n_embd = 0;
    std::vector<int32_t> audio_tokens;
    std::vector<float> pcm;
    int sample_rate = 0;             // Hz, for pcm
    double audio_ms = 0;             // duration of audio this item stands for
    bool last = false;               // optional end-of-stream hint from a stage
    // Carried untouched for the stages of one family: the index of the input unit the item
    // stems from (a duplex session's input frame; -1 = none) and bits whose meaning the family
    // defines (speak/duplex-stages.h: end of a speaking chunk, end of a turn).
    int64_t origin = -1;
    uint32_t marks = 0;

    // Managed by the pipeline: per stage, the index of the StageEvent on this item's path.
    std::vector<int> lineage;
};

}  // namespace rtf::pipe
