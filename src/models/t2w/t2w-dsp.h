#pragma once
// Host-side (plain C++) kernels of Token2Wav where ggml has no op or the work is tiny:
// the conformer's relative position table, HiFT's harmonic source, the 16-point STFT of
// the source and the iSTFT of the decoder output, and the Hamming cross-fade window.
// All float32, single-threaded, deterministic. Spec: minicpmo45-speak-path.md §3.4, §3.8.
#include <cstdint>
#include <vector>

namespace rtf::t2w::dsp {

constexpr int kNfft = 16;
constexpr int kHop = 4;
constexpr int kBins = kNfft / 2 + 1;  // 9

// ESPnet relative positional table for a key length S: 2S-1 rows of d values, row r
// encodes relative position p = S-1-r ([sin(p·ω_k), cos(p·ω_k)] pairs, ω_k = 10000^(-2k/d)).
// Row-major [2S-1][d] (= ggml ne [d, 2S-1]).
std::vector<float> rel_pos_table(int d, int S);

// Harmonic source: f0 per mel frame -> s (480·T samples) = tanh(Σ_h w_h·0.1·sin(Φ_h)·uv + b),
// h = 1..n_harmonics, phase interpolated linearly inside each frame
// (docs/minicpmo45.md §4.8 steps 2-4).
std::vector<float> harmonic_source(const std::vector<float> &f0, const std::vector<float> &w_harm, float bias,
                                   int samples_per_frame = 480, int sample_rate = 24000);

// STFT (reflect-pad 8, periodic Hann 16, hop 4) of x (n samples, n % 4 == 0):
// returns [18][n/4+1] (Re_0..8 then Im_0..8, time fastest) = ggml ne [n/4+1, 18].
std::vector<float> stft16(const std::vector<float> &x);

// iSTFT of re/im [9][F] (time fastest): overlap-add with w², trims 8 samples at each
// end -> 4·(F-1) samples, then clamps to ±limit.
std::vector<float> istft16(const float *re, const float *im, int64_t F, float limit = 0.99f);

// Hamming window of length n: 0.54 - 0.46·cos(2πk/(n-1)).
std::vector<float> hamming(int n);

}  // namespace rtf::t2w::dsp
