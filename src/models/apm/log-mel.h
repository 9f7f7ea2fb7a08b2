#pragma once
// Log-mel features of one audio frame, computed as MiniCPM-o's audio front end computes them
// (docs/minicpmo45.md §5.3; llama.cpp-omni audition.cpp's Whisper preprocessor with its
// streaming changes): 16 kHz mono samples in, [n_mel][n_frames] log-mel values out, the
// layout the encoder's first convolution reads (ggml ne = [n_frames, n_mel]).
//
//   rtf::apm::LogMel mel(filters, 80);                  // filters: n_mel x 201 (the GGUF key)
//   std::vector<float> pcm = rtf::apm::pad_to_100ms(frame);
//   rtf::apm::Mel m = mel.compute(pcm.data(), pcm.size());  // 16000 samples -> 100 frames
//
// The steps, each as the reference does it:
//   - STFT with n_fft 400, hop 160, a periodic Hann window; no 30-s padding. The signal is
//     padded with 200 samples in front, reflected (padded[j] = x[200 - j] for j < 200), and
//     200 zeros behind (not reflected). n_frames = N / 160: torch's last frame is dropped.
//   - Power |X_k|^2 for k = 0..200, mel m = sum_k P_k filters[m][k] (in double),
//     log10(max(m, 1e-10)).
//   - Normalisation over the whole frame: floor at (max - 8), then (v + 4) / 4. The
//     reference point therefore moves from one frame of audio to the next.
// The FFT is rtfkit's own (radix 2 down to the odd factor 25, a direct DFT there), so values
// equal the reference's to float rounding, not bit for bit.
//
// Thread-safety: compute() is const and may run concurrently on one LogMel.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rtf::apm {

inline constexpr int kSampleRate = 16000;
inline constexpr int kNFft = 400;
inline constexpr int kHop = 160;
inline constexpr int kFftBins = kNFft / 2 + 1;  // 201
inline constexpr size_t kPadQuantum = 1600;     // 100 ms

struct Mel {
    int64_t n_mel = 0;
    int64_t n_frames = 0;
    std::vector<float> data;  // [n_mel][n_frames]: mel-major, time contiguous
    float at(int64_t mel, int64_t frame) const { return data[static_cast<size_t>(mel * n_frames + frame)]; }
};

// Zero-pads at the end to a multiple of 1600 samples (100 ms); shorter inputs become 1600.
// The reference does this before the STFT so that the pooled output count is exact.
std::vector<float> pad_to_100ms(const std::vector<float> &samples);

class LogMel {
public:
    // `filters`: row-major [n_mel][201]. Throws rtf::Error(Usage) when its size is not n_mel x 201.
    LogMel(std::vector<float> filters, int64_t n_mel);

    // `n` >= 201 samples at 16 kHz (the reflection needs 200 past the first); throws
    // rtf::Error(Usage) otherwise. n_frames = n / 160.
    Mel compute(const float *samples, size_t n) const;

    int64_t n_mel() const noexcept { return n_mel_; }

private:
    std::vector<float> filters_;
    int64_t n_mel_;
    std::vector<float> window_;      // periodic Hann, 400
    std::vector<float> cos_, sin_;   // cos/sin(2 pi i / 400), i < 400
};

// The real-input DFT of 400 samples that LogMel uses: out[2k], out[2k+1] = Re, Im of X_k for
// k < 400. Exposed for the unit test against a direct DFT.
void fft400(const float *in, float *out, const std::vector<float> &cos_table, const std::vector<float> &sin_table);

}  // namespace rtf::apm
