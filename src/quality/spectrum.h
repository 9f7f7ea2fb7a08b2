#pragma once
// Short-time spectra for the quality checks: a Hann-windowed power spectrogram and a
// log-mel view of it (HTK mel scale, triangular bands). Written here because rtfkit has
// no FFT dependency and the checks need only a few thousand 1k-point transforms.
//
// Framing: frame t covers samples [t*hop, t*hop + win); frames stop when the next would
// run past the end; input shorter than one window gives one zero-padded frame; empty
// input gives zero frames. n_fft = the next power of two >= win.
//
// Thread-safety: pure functions.
#include <cstddef>
#include <vector>

namespace rtf::quality {

struct Spectrogram {
    int sample_rate = 0;
    int win = 0;       // window length (samples)
    int hop = 0;       // hop (samples)
    int n_fft = 0;
    int n_frames = 0;
    int n_bins = 0;    // n_fft / 2 + 1
    std::vector<float> power;  // n_frames x n_bins, |X|^2 of the windowed frame

    const float *frame(int t) const { return power.data() + static_cast<size_t>(t) * static_cast<size_t>(n_bins); }
    double bin_hz(int k) const { return static_cast<double>(k) * sample_rate / n_fft; }
};

// Non-finite samples are treated as 0 (they are counted by the nonfinite check instead).
Spectrogram power_spectrogram(const float *x, size_t n, int sample_rate, double win_ms = 25, double hop_ms = 10);

// In-place radix-2 complex FFT (re/im arrays of length n, n a power of two).
void fft_inplace(std::vector<double> &re, std::vector<double> &im);

struct LogMel {
    int n_frames = 0;
    int n_mels = 0;
    double hop_ms = 0;
    std::vector<float> db;  // n_frames x n_mels, 10 log10(max(band power, floor))

    const float *frame(int t) const { return db.data() + static_cast<size_t>(t) * static_cast<size_t>(n_mels); }
};

// Band powers on n_mels triangular bands between fmin and fmax (Hz; fmax clipped to
// Nyquist), in dB with power floored at `floor_power` (linear |X|^2 units).
LogMel log_mel(const Spectrogram &s, int n_mels = 80, double fmin = 0, double fmax = 12000,
               double floor_power = 1e-10);

// Largest band power of a log-mel view (linear), e.g. to set a floor relative to a peak.
double max_band_power(const Spectrogram &s, int n_mels = 80, double fmin = 0, double fmax = 12000);

}  // namespace rtf::quality
