#pragma once
// Signals for the quality tests: a deterministic speech-like synthesiser (syllables of
// gliding harmonic tones with formant-shaped spectra, pauses and fricatives) for the fast
// unit tests, and flite rendering of real speech for the `model` tests.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numbers>
#include <random>
#include <string>
#include <vector>

namespace rtf::quality::test {

// ~`seconds` of speech-like audio at `sr`, peak about 0.5, deterministic for a seed.
inline std::vector<float> synth_speech(double seconds, int sr, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> U(0.0, 1.0);
    std::normal_distribution<double> N(0.0, 1.0);
    const size_t total = static_cast<size_t>(seconds * sr);
    std::vector<float> x;
    x.reserve(total + static_cast<size_t>(sr));
    double phase = 0;
    while (x.size() < total) {
        // Pause with a faint noise floor (-70 dBFS), like a vocoder between words.
        const size_t pause = static_cast<size_t>((0.03 + 0.12 * U(rng)) * sr);
        for (size_t i = 0; i < pause; ++i) x.push_back(static_cast<float>(3e-4 * N(rng)));
        if (U(rng) < 0.25) {  // fricative: shaped noise burst
            const size_t len = static_cast<size_t>((0.05 + 0.08 * U(rng)) * sr);
            double prev = 0;
            for (size_t i = 0; i < len; ++i) {
                const double env = std::sin(std::numbers::pi * static_cast<double>(i) / static_cast<double>(len));
                const double w = N(rng);
                x.push_back(static_cast<float>(0.04 * env * (w - 0.7 * prev)));
                prev = w;
            }
        }
        // Voiced syllable: gliding f0, harmonics weighted by two formants.
        const size_t len = static_cast<size_t>((0.12 + 0.14 * U(rng)) * sr);
        const double f0a = 90 + 130 * U(rng), f0b = f0a * (0.8 + 0.4 * U(rng));
        const double fm1 = 300 + 600 * U(rng), fm2 = 900 + 1800 * U(rng);
        for (size_t i = 0; i < len; ++i) {
            const double t = static_cast<double>(i) / static_cast<double>(len);
            const double f0 = f0a + (f0b - f0a) * t;
            phase += 2 * std::numbers::pi * f0 / sr;
            double v = 0;
            for (int h = 1; h * f0 < 4000; ++h) {
                const double f = h * f0;
                const double a = std::exp(-std::pow((f - fm1) / 150, 2)) + 0.5 * std::exp(-std::pow((f - fm2) / 250, 2)) +
                                 0.02;
                v += a * std::sin(h * phase) / h;
            }
            const double env = 0.5 - 0.5 * std::cos(2 * std::numbers::pi * t);
            x.push_back(static_cast<float>(0.25 * env * v));
        }
    }
    x.resize(total);
    float peak = 0;
    for (float v : x) peak = std::max(peak, std::fabs(v));
    for (float &v : x) v *= 0.5f / peak;
    return x;
}

inline std::vector<float> white_noise(size_t n, float amplitude, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> U(-amplitude, amplitude);
    std::vector<float> x(n);
    for (float &v : x) v = U(rng);
    return x;
}

inline bool have_flite() { return std::system("command -v flite >/dev/null 2>&1") == 0; }

// Renders `text` with flite's `voice` (slt, kal16) to `path` (16 kHz mono 16-bit WAV).
inline bool flite_render(const std::string &voice, const std::string &text, const std::string &path) {
    const std::string cmd = "flite -voice " + voice + " -t \"" + text + "\" -o \"" + path + "\" >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0 && std::filesystem::exists(path);
}

}  // namespace rtf::quality::test
