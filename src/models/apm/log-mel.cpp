#include "models/apm/log-mel.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace rtf::apm {

namespace {

constexpr double kPi = 3.14159265358979323846;

// DFT of x[i * stride], i < n, into out[2k], out[2k+1] (k < n). The twiddle exp(-2 pi i k j / n)
// is table entry (k j 400/n) mod 400, so every length divides 400.
void dft_rec(const float *x, size_t stride, int n, float *out, const std::vector<float> &c,
             const std::vector<float> &s) {
    const int step = kNFft / n;
    if (n % 2 == 1) {  // odd: direct DFT (n = 25 for 400)
        for (int k = 0; k < n; ++k) {
            float re = 0.0f, im = 0.0f;
            for (int j = 0; j < n; ++j) {
                const auto idx = static_cast<size_t>((k * j * step) % kNFft);
                const float v = x[static_cast<size_t>(j) * stride];
                re += v * c[idx];
                im -= v * s[idx];
            }
            out[2 * k] = re;
            out[2 * k + 1] = im;
        }
        return;
    }
    const int h = n / 2;
    std::vector<float> ev(static_cast<size_t>(2 * h)), od(static_cast<size_t>(2 * h));
    dft_rec(x, 2 * stride, h, ev.data(), c, s);
    dft_rec(x + stride, 2 * stride, h, od.data(), c, s);
    for (int k = 0; k < h; ++k) {
        const auto idx = static_cast<size_t>(k * step);
        const float wr = c[idx], wi = -s[idx];
        const float orr = od[2 * static_cast<size_t>(k)], oi = od[2 * static_cast<size_t>(k) + 1];
        const float tr = wr * orr - wi * oi, ti = wr * oi + wi * orr;
        const float er = ev[2 * static_cast<size_t>(k)], ei = ev[2 * static_cast<size_t>(k) + 1];
        out[2 * k] = er + tr;
        out[2 * k + 1] = ei + ti;
        out[2 * (k + h)] = er - tr;
        out[2 * (k + h) + 1] = ei - ti;
    }
}

}  // namespace

void fft400(const float *in, float *out, const std::vector<float> &cos_table, const std::vector<float> &sin_table) {
    dft_rec(in, 1, kNFft, out, cos_table, sin_table);
}

std::vector<float> pad_to_100ms(const std::vector<float> &samples) {
    std::vector<float> out = samples;
    const size_t n = std::max(kPadQuantum, (samples.size() + kPadQuantum - 1) / kPadQuantum * kPadQuantum);
    out.resize(n, 0.0f);
    return out;
}

LogMel::LogMel(std::vector<float> filters, int64_t n_mel) : filters_(std::move(filters)), n_mel_(n_mel) {
    if (n_mel_ <= 0 || filters_.size() != static_cast<size_t>(n_mel_) * kFftBins)
        throw_usage("log-mel: the filter bank has " + std::to_string(filters_.size()) + " values, expected n_mel " +
                    std::to_string(n_mel_) + " x " + std::to_string(kFftBins));
    window_.resize(kNFft);
    cos_.resize(kNFft);
    sin_.resize(kNFft);
    for (int i = 0; i < kNFft; ++i) {
        const double t = 2.0 * kPi * i / kNFft;
        window_[static_cast<size_t>(i)] = static_cast<float>(0.5 * (1.0 - std::cos(t)));  // periodic Hann
        cos_[static_cast<size_t>(i)] = static_cast<float>(std::cos(t));
        sin_[static_cast<size_t>(i)] = static_cast<float>(std::sin(t));
    }
}

Mel LogMel::compute(const float *samples, size_t n) const {
    constexpr size_t pad = kNFft / 2;
    if (n <= pad)
        throw_usage("log-mel: " + std::to_string(n) + " samples are too few (at least " + std::to_string(pad + 1) +
                    " for the 200-sample reflection pad)");
    // [reflect 200 | samples | 200 zeros]
    std::vector<float> padded(n + 2 * pad, 0.0f);
    std::copy(samples, samples + n, padded.begin() + static_cast<std::ptrdiff_t>(pad));
    for (size_t j = 0; j < pad; ++j) padded[j] = samples[pad - j];

    Mel m;
    m.n_mel = n_mel_;
    m.n_frames = static_cast<int64_t>(n / kHop);
    m.data.assign(static_cast<size_t>(m.n_mel * m.n_frames), 0.0f);
    std::vector<float> in(kNFft), spec(2 * kNFft), power(kFftBins);
    for (int64_t i = 0; i < m.n_frames; ++i) {
        const size_t off = static_cast<size_t>(i) * kHop;
        for (size_t j = 0; j < static_cast<size_t>(kNFft); ++j) in[j] = window_[j] * padded[off + j];
        fft400(in.data(), spec.data(), cos_, sin_);
        for (size_t k = 0; k < static_cast<size_t>(kFftBins); ++k) power[k] = spec[2 * k] * spec[2 * k] + spec[2 * k + 1] * spec[2 * k + 1];
        for (int64_t b = 0; b < n_mel_; ++b) {
            const float *f = filters_.data() + static_cast<size_t>(b) * kFftBins;
            double sum = 0.0;
            for (size_t k = 0; k < static_cast<size_t>(kFftBins); ++k) sum += static_cast<double>(power[k] * f[k]);
            m.data[static_cast<size_t>(b * m.n_frames + i)] = static_cast<float>(std::log10(std::max(sum, 1e-10)));
        }
    }
    // Whole-frame normalisation (Whisper's): dynamic range 8 (log10 units) below the maximum.
    float mmax = -1e20f;
    for (float v : m.data) mmax = std::max(mmax, v);
    const float floor_v = mmax - 8.0f;
    for (float &v : m.data) v = (std::max(v, floor_v) + 4.0f) / 4.0f;
    return m;
}

}  // namespace rtf::apm
