#pragma once
// The mel filter bank Whisper-style audio front ends use: librosa.filters.mel(sr, n_fft, n_mels)
// with its defaults (fmin 0, fmax sr/2, the Slaney mel scale — linear below 1 kHz, logarithmic
// above — and Slaney area normalisation: each triangle is scaled by 2 / (its upper minus lower
// edge frequency)). MiniCPM-o's audio-encoder converter stores exactly this bank (sr 16000,
// n_fft 400, 80 mels) in the GGUF key `filters`, so a twin can carry the real values.
//
// Computed in double as librosa does, returned as float (librosa's default dtype).
// Thread-safety: pure function.
#include <vector>

namespace rtf {

// Row-major [n_mels][1 + n_fft/2]. Throws rtf::Error(Usage) for non-positive arguments.
std::vector<float> mel_filters_slaney(int sample_rate, int n_fft, int n_mels);

}  // namespace rtf
