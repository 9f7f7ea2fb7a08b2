#include "models/t2w/t2w-dsp.h"

#include <algorithm>
#include <cmath>

namespace rtf::t2w::dsp {

namespace {
constexpr double kPi = 3.14159265358979323846;

const std::vector<float> &hann16() {
    static const std::vector<float> w = [] {
        std::vector<float> v(kNfft);
        for (int n = 0; n < kNfft; ++n) v[n] = static_cast<float>(0.5 - 0.5 * std::cos(2.0 * kPi * n / kNfft));
        return v;
    }();
    return w;
}
// cos/sin(2π·m/16) as floats, m = (k·n) mod 16: looked up, not recomputed per term (the STFT
// and iSTFT called libm's double cos/sin ~3.6 M times per window, ~25 ms); the same values.
struct Twiddles {
    float c[kNfft], s[kNfft];
    Twiddles() {
        for (int m = 0; m < kNfft; ++m) {
            c[m] = static_cast<float>(std::cos(2.0 * kPi * m / kNfft));
            s[m] = static_cast<float>(std::sin(2.0 * kPi * m / kNfft));
        }
    }
};
const Twiddles &twiddles() {
    static const Twiddles t;
    return t;
}
float cos16(int k, int n) { return twiddles().c[(k * n) % kNfft]; }
float sin16(int k, int n) { return twiddles().s[(k * n) % kNfft]; }
}  // namespace

std::vector<float> rel_pos_table(int d, int S) {
    // Same float arithmetic as the reference's precomputed table (div term and angle in float).
    const int half = (d + 1) / 2;
    std::vector<float> div(half);
    const float log10000 = std::log(10000.0f);
    for (int k = 0; k < half; ++k) div[k] = std::exp(-(log10000 / static_cast<float>(d)) * static_cast<float>(2 * k));
    const int rows = 2 * S - 1;
    std::vector<float> pe(static_cast<size_t>(rows) * d);
    for (int r = 0; r < rows; ++r) {
        const int p = S - 1 - r;
        const int a = p < 0 ? -p : p;
        for (int k = 0; k < half; ++k) {
            const float angle = static_cast<float>(a) * div[k];
            const float s = std::sin(angle), c = std::cos(angle);
            pe[static_cast<size_t>(r) * d + 2 * k] = p < 0 ? -s : s;
            if (2 * k + 1 < d) pe[static_cast<size_t>(r) * d + 2 * k + 1] = c;
        }
    }
    return pe;
}

std::vector<float> harmonic_source(const std::vector<float> &f0, const std::vector<float> &w_harm, float bias,
                                   int spf, int sample_rate) {
    const int64_t T = static_cast<int64_t>(f0.size());
    const int H = static_cast<int>(w_harm.size());
    std::vector<float> s(static_cast<size_t>(T * spf));
    if (T == 0) return s;
    // Per harmonic: frame-rate cumulative phase (in cycles), then linear interpolation
    // inside the frame; the last frame reuses the previous frame's increment.
    std::vector<float> phase(static_cast<size_t>(T)), delta(static_cast<size_t>(T));
    std::vector<double> acc(static_cast<size_t>(T * spf), 0.0);
    std::vector<float> mix(static_cast<size_t>(T * spf), 0.0f);
    const float two_pi = 2.0f * static_cast<float>(M_PI);
    for (int h = 0; h < H; ++h) {
        float run = 0.0f;
        for (int64_t t = 0; t < T; ++t) {
            const float rad = (f0[t] * static_cast<float>(h + 1)) * (1.0f / static_cast<float>(sample_rate));
            // mean of spf identical per-sample values (summed in double like ggml_sum_rows)
            const float mean = static_cast<float>(static_cast<double>(rad) * spf) * (1.0f / static_cast<float>(spf));
            run = (t == 0) ? mean : run + mean;
            phase[t] = run * two_pi;
        }
        for (int64_t t = 0; t + 1 < T; ++t) delta[t] = phase[t + 1] - phase[t];
        delta[T - 1] = T >= 2 ? delta[T - 2] : 0.0f;
        for (int64_t t = 0; t < T; ++t) {
            const bool voiced = f0[t] - 10.0f > 0.0f;
            for (int k = 0; k < spf; ++k) {
                const float ramp = static_cast<float>(k) * (1.0f / static_cast<float>(spf));
                const float ph = (phase[t] + delta[t] * ramp) * static_cast<float>(spf);
                const float sine = voiced ? std::sin(ph) * 0.1f : 0.0f;
                mix[t * spf + k] += w_harm[h] * sine;
            }
        }
    }
    for (size_t i = 0; i < s.size(); ++i) s[i] = std::tanh(mix[i] + bias);
    return s;
}

std::vector<float> stft16(const std::vector<float> &x) {
    const int64_t n = static_cast<int64_t>(x.size());
    const int64_t F = n / kHop + 1;
    const int pad = kNfft / 2;
    std::vector<float> out(static_cast<size_t>(F) * 2 * kBins, 0.0f);
    if (n == 0) return out;
    auto at = [&](int64_t i) {  // reflect padding
        i -= pad;
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
        return (i >= 0 && i < n) ? x[static_cast<size_t>(i)] : 0.0f;
    };
    const auto &w = hann16();
    float frame[kNfft];
    for (int64_t f = 0; f < F; ++f) {
        for (int j = 0; j < kNfft; ++j) frame[j] = at(f * kHop + j) * w[j];
        for (int k = 0; k < kBins; ++k) {
            float re = 0.0f, im = 0.0f;
            for (int j = 0; j < kNfft; ++j) {
                re += frame[j] * cos16(k, j);
                im -= frame[j] * sin16(k, j);
            }
            out[static_cast<size_t>(k) * F + f] = re;
            out[static_cast<size_t>(kBins + k) * F + f] = im;
        }
    }
    return out;
}

std::vector<float> istft16(const float *re, const float *im, int64_t F, float limit) {
    const int64_t n_full = (F - 1) * kHop + kNfft;
    std::vector<float> y(static_cast<size_t>(n_full), 0.0f), wsum(static_cast<size_t>(n_full), 0.0f);
    const auto &w = hann16();
    for (int64_t f = 0; f < F; ++f) {
        for (int j = 0; j < kNfft; ++j) {
            float c = 0.0f, s = 0.0f;
            for (int k = 1; k < kBins - 1; ++k) {
                c += re[k * F + f] * cos16(k, j);
                s += im[k * F + f] * sin16(k, j);
            }
            const float nyq = (j % 2 == 0) ? 1.0f : -1.0f;
            float v = re[0 * F + f] + re[(kBins - 1) * F + f] * nyq;
            v = v + (c - s) * 2.0f;
            v = v * (1.0f / kNfft) * w[j];
            y[static_cast<size_t>(f * kHop + j)] += v;
            wsum[static_cast<size_t>(f * kHop + j)] += w[j] * w[j];
        }
    }
    const int pad = kNfft / 2;
    const int64_t n = std::max<int64_t>(0, n_full - 2 * pad);
    std::vector<float> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        const float v = y[static_cast<size_t>(i + pad)] / std::max(wsum[static_cast<size_t>(i + pad)], 1e-8f);
        out[static_cast<size_t>(i)] = std::clamp(v, -limit, limit);
    }
    return out;
}

std::vector<float> hamming(int n) {
    std::vector<float> w(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) w[k] = static_cast<float>(0.54 - 0.46 * std::cos(2.0 * kPi * k / (n - 1)));
    return w;
}

}  // namespace rtf::t2w::dsp
