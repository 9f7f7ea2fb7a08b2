#pragma once
// The seeded prompt bundle of a twin kit: the three files a Token2Wav prompt cache is built
// from (spec minicpmo45-speak-path.md §1.9 "prompt bundle alternative", §3.9), written by
// make_kit() into token2wav-gguf/ beside prompt_cache.gguf at every scale:
//
//   spk_f32.bin             192 float32: the speaker x-vector
//   prompt_tokens_i32.bin   T_p int32 audio codes 0..6560, T_p = L/2 + 3
//   prompt_mel_btc_f32.bin  T_m x 80 float32 (time-major), T_m = 2·(T_p-3) = L
//
// L is the layout's prompt length (dims.prompt_cache.L), so a cache built from the bundle
// (`rtf t2w-prompt --bundle KIT/token2wav-gguf --steps N`) has the twin cache's shapes; the
// twin's own prompt_cache.gguf stays the layout's random one (golden hashes depend on it).
// Values: the twin's xoshiro streams seeded from (kit seed, file name), so the bytes are the
// same on every platform; spk and mel are bell-shaped (sd 1), codes uniform.
#include <cstdint>
#include <string>

namespace rtf::twin {

// Writes the three files into `dir` (which exists). Returns the bytes written.
// rtf::Error(Usage) for L < 2 or odd; rtf::Error(Setup) on I/O errors.
uint64_t write_prompt_bundle(const std::string &dir, int64_t L, uint64_t seed);

}  // namespace rtf::twin
