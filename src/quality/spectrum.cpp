#include "quality/spectrum.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace rtf::quality {

void fft_inplace(std::vector<double> &re, std::vector<double> &im) {
    const size_t n = re.size();
    // Bit-reversal permutation.
    for (size_t i = 1, j = 0; i < n; ++i) {
        size_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            std::swap(re[i], re[j]);
            std::swap(im[i], im[j]);
        }
    }
    for (size_t len = 2; len <= n; len <<= 1) {
        const double ang = -2 * std::numbers::pi / static_cast<double>(len);
        const double wr = std::cos(ang), wi = std::sin(ang);
        for (size_t i = 0; i < n; i += len) {
            double cr = 1, ci = 0;
            for (size_t k = 0; k < len / 2; ++k) {
                const size_t a = i + k, b = i + k + len / 2;
                const double tr = re[b] * cr - im[b] * ci;
                const double ti = re[b] * ci + im[b] * cr;
                re[b] = re[a] - tr;
                im[b] = im[a] - ti;
                re[a] += tr;
                im[a] += ti;
                const double ncr = cr * wr - ci * wi;
                ci = cr * wi + ci * wr;
                cr = ncr;
            }
        }
    }
}

Spectrogram power_spectrogram(const float *x, size_t n, int sample_rate, double win_ms, double hop_ms) {
    Spectrogram s;
    s.sample_rate = sample_rate;
    s.win = std::max(2, static_cast<int>(std::lround(win_ms * sample_rate / 1000.0)));
    s.hop = std::max(1, static_cast<int>(std::lround(hop_ms * sample_rate / 1000.0)));
    s.n_fft = 1;
    while (s.n_fft < s.win) s.n_fft <<= 1;
    s.n_bins = s.n_fft / 2 + 1;
    if (n == 0) return s;
    const size_t win = static_cast<size_t>(s.win), hop = static_cast<size_t>(s.hop);
    s.n_frames = n < win ? 1 : static_cast<int>((n - win) / hop + 1);
    s.power.assign(static_cast<size_t>(s.n_frames) * static_cast<size_t>(s.n_bins), 0.0f);

    std::vector<double> window(win);
    for (size_t i = 0; i < win; ++i)
        window[i] = 0.5 - 0.5 * std::cos(2 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(win));
    std::vector<double> re(static_cast<size_t>(s.n_fft)), im(static_cast<size_t>(s.n_fft));
    for (int t = 0; t < s.n_frames; ++t) {
        std::fill(re.begin(), re.end(), 0.0);
        std::fill(im.begin(), im.end(), 0.0);
        const size_t start = static_cast<size_t>(t) * hop;
        for (size_t i = 0; i < win && start + i < n; ++i) {
            const float v = x[start + i];
            re[i] = std::isfinite(v) ? v * window[i] : 0.0;
        }
        fft_inplace(re, im);
        float *out = s.power.data() + static_cast<size_t>(t) * static_cast<size_t>(s.n_bins);
        for (int k = 0; k < s.n_bins; ++k) {
            const auto kk = static_cast<size_t>(k);
            out[k] = static_cast<float>(re[kk] * re[kk] + im[kk] * im[kk]);
        }
    }
    return s;
}

namespace {

double hz_to_mel(double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); }
double mel_to_hz(double mel) { return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0); }

// Triangular filters as (first bin, weights) per band.
struct Band {
    int first = 0;
    std::vector<double> w;
};

std::vector<Band> mel_bands(const Spectrogram &s, int n_mels, double fmin, double fmax) {
    fmax = std::min(fmax, s.sample_rate / 2.0);
    fmin = std::clamp(fmin, 0.0, fmax);
    const double mlo = hz_to_mel(fmin), mhi = hz_to_mel(fmax);
    std::vector<double> edges(static_cast<size_t>(n_mels) + 2);
    for (size_t i = 0; i < edges.size(); ++i)
        edges[i] = mel_to_hz(mlo + (mhi - mlo) * static_cast<double>(i) / static_cast<double>(n_mels + 1));
    std::vector<Band> bands(static_cast<size_t>(n_mels));
    const double bin_hz = static_cast<double>(s.sample_rate) / s.n_fft;
    for (int m = 0; m < n_mels; ++m) {
        const double lo = edges[static_cast<size_t>(m)], mid = edges[static_cast<size_t>(m) + 1],
                     hi = edges[static_cast<size_t>(m) + 2];
        Band &b = bands[static_cast<size_t>(m)];
        const int k0 = static_cast<int>(std::ceil(lo / bin_hz)), k1 = static_cast<int>(std::floor(hi / bin_hz));
        b.first = std::max(0, k0);
        for (int k = b.first; k <= std::min(k1, s.n_bins - 1); ++k) {
            const double f = k * bin_hz;
            double w = f <= mid ? (f - lo) / std::max(mid - lo, 1e-9) : (hi - f) / std::max(hi - mid, 1e-9);
            b.w.push_back(std::max(0.0, w));
        }
        // Narrow low bands can fall between two bins: give them the nearest bin so no band
        // is empty (an empty band would read as silence and distort distances).
        if (b.w.empty() || *std::max_element(b.w.begin(), b.w.end()) <= 0) {
            b.first = std::clamp(static_cast<int>(std::lround(mid / bin_hz)), 0, s.n_bins - 1);
            b.w.assign(1, 1.0);
        }
    }
    return bands;
}

double band_power(const float *frame, const Band &b) {
    double acc = 0;
    for (size_t i = 0; i < b.w.size(); ++i) acc += b.w[i] * frame[static_cast<size_t>(b.first) + i];
    return acc;
}

}  // namespace

LogMel log_mel(const Spectrogram &s, int n_mels, double fmin, double fmax, double floor_power) {
    LogMel out;
    out.n_frames = s.n_frames;
    out.n_mels = n_mels;
    out.hop_ms = 1000.0 * s.hop / std::max(1, s.sample_rate);
    if (s.n_frames == 0) return out;
    const auto bands = mel_bands(s, n_mels, fmin, fmax);
    out.db.resize(static_cast<size_t>(s.n_frames) * static_cast<size_t>(n_mels));
    for (int t = 0; t < s.n_frames; ++t) {
        const float *f = s.frame(t);
        for (int m = 0; m < n_mels; ++m) {
            const double p = std::max(band_power(f, bands[static_cast<size_t>(m)]), floor_power);
            out.db[static_cast<size_t>(t) * static_cast<size_t>(n_mels) + static_cast<size_t>(m)] =
                static_cast<float>(10.0 * std::log10(p));
        }
    }
    return out;
}

double max_band_power(const Spectrogram &s, int n_mels, double fmin, double fmax) {
    if (s.n_frames == 0) return 0;
    const auto bands = mel_bands(s, n_mels, fmin, fmax);
    double mx = 0;
    for (int t = 0; t < s.n_frames; ++t)
        for (const auto &b : bands) mx = std::max(mx, band_power(s.frame(t), b));
    return mx;
}

}  // namespace rtf::quality
