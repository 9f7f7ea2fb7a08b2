#include "core/mel-filters.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace rtf {

namespace {

// Slaney's auditory-toolbox mel scale (librosa hz_to_mel / mel_to_hz with htk=False).
constexpr double kFSp = 200.0 / 3.0;     // Hz per mel below the break
constexpr double kMinLogHz = 1000.0;     // the break
constexpr double kMinLogMel = kMinLogHz / kFSp;

double log_step() { return std::log(6.4) / 27.0; }

double hz_to_mel(double hz) {
    return hz >= kMinLogHz ? kMinLogMel + std::log(hz / kMinLogHz) / log_step() : hz / kFSp;
}

double mel_to_hz(double mel) {
    return mel >= kMinLogMel ? kMinLogHz * std::exp(log_step() * (mel - kMinLogMel)) : kFSp * mel;
}

}  // namespace

std::vector<float> mel_filters_slaney(int sample_rate, int n_fft, int n_mels) {
    if (sample_rate <= 0 || n_fft <= 0 || n_mels <= 0)
        throw_usage("mel filters: sample rate, n_fft and n_mels must be > 0 (got " + std::to_string(sample_rate) +
                    ", " + std::to_string(n_fft) + ", " + std::to_string(n_mels) + ")");
    const int n_bins = 1 + n_fft / 2;
    // n_mels + 2 edge frequencies equally spaced on the mel scale from 0 to Nyquist.
    const double mel_max = hz_to_mel(sample_rate / 2.0);
    std::vector<double> edge(static_cast<size_t>(n_mels) + 2);
    for (size_t i = 0; i < edge.size(); ++i)
        edge[i] = mel_to_hz(mel_max * static_cast<double>(i) / static_cast<double>(n_mels + 1));
    std::vector<float> w(static_cast<size_t>(n_mels) * static_cast<size_t>(n_bins));
    for (int m = 0; m < n_mels; ++m) {
        const double lo = edge[static_cast<size_t>(m)], mid = edge[static_cast<size_t>(m) + 1],
                     hi = edge[static_cast<size_t>(m) + 2];
        const double norm = 2.0 / (hi - lo);
        for (int k = 0; k < n_bins; ++k) {
            const double f = static_cast<double>(k) * sample_rate / n_fft;  // np.fft.rfftfreq
            const double rise = (f - lo) / (mid - lo), fall = (hi - f) / (hi - mid);
            const double v = std::max(0.0, std::min(rise, fall));
            // librosa stores the triangle as float32 first, then scales it in place.
            const auto tri = static_cast<double>(static_cast<float>(v));
            w[static_cast<size_t>(m) * static_cast<size_t>(n_bins) + static_cast<size_t>(k)] =
                static_cast<float>(tri * norm);
        }
    }
    return w;
}

}  // namespace rtf
