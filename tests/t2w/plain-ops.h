#pragma once
// Plain double-precision loops of the operations token2mel is built from: the independent side
// of the t2w tests (test-t2w-blocks checks each graph block against them, test-t2w-prompt the
// prompt-cache builder). Written from the spec's definitions, never from the engine's code.
// Layout: row-major [T][C] (= ggml "ct" ne [C, T]); weights as ggml stores them.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include <ggml.h>

namespace rtf::test::plain {

using Vec = std::vector<double>;

// y[t][o] = b[o] + Σ_i W[o][i]·x[t][i]; W as ggml ne [in, out] (row o contiguous); b may be empty.
inline Vec linear(const Vec &x, const Vec &W, const Vec &b, int in, int out) {
    const size_t T = x.size() / in;
    Vec y(T * out);
    for (size_t t = 0; t < T; ++t)
        for (int o = 0; o < out; ++o) {
            double s = b.empty() ? 0.0 : b[o];
            for (int i = 0; i < in; ++i) s += W[static_cast<size_t>(o) * in + i] * x[t * in + i];
            y[t * out + o] = s;
        }
    return y;
}

// LayerNorm over each group of C consecutive values (population variance); w/b may be empty.
inline Vec layer_norm(const Vec &x, int C, const Vec &w, const Vec &b, double eps) {
    Vec y(x.size());
    for (size_t r = 0; r < x.size() / C; ++r) {
        double mean = 0, var = 0;
        for (int c = 0; c < C; ++c) mean += x[r * C + c];
        mean /= C;
        for (int c = 0; c < C; ++c) var += (x[r * C + c] - mean) * (x[r * C + c] - mean);
        var /= C;
        for (int c = 0; c < C; ++c) {
            double v = (x[r * C + c] - mean) / std::sqrt(var + eps);
            if (!w.empty()) v *= w[c];
            if (!b.empty()) v += b[c];
            y[r * C + c] = v;
        }
    }
    return y;
}

inline double silu(double z) { return z / (1.0 + std::exp(-z)); }
inline double mish(double z) { return z * std::tanh(std::log1p(std::exp(z))); }
// The engine's GELU is ggml_gelu: the tanh approximation, which ggml's CPU backend evaluates
// through a table indexed by the fp16 value of the input and holding fp16 results
// (GGML_GELU_FP16 in ggml-cpu/vec.h), so the reference rounds input and output to fp16 too
// (the exact formula differs from it by ~1e-3).
inline double gelu_tanh(double z) { return 0.5 * z * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (z + 0.044715 * z * z * z))); }
inline double fp16(double z) { return ggml_fp16_to_fp32(ggml_fp32_to_fp16(static_cast<float>(z))); }
inline double gelu_ggml(double z) {
    if (z <= -10.0) return 0.0;
    if (z >= 10.0) return z;
    return fp16(gelu_tanh(fp16(z)));
}

inline Vec softmax(const Vec &s) {
    const double mx = *std::max_element(s.begin(), s.end());
    Vec p(s.size());
    double z = 0;
    for (size_t j = 0; j < s.size(); ++j) z += (p[j] = std::exp(s[j] - mx));
    for (auto &v : p) v /= z;
    return p;
}

// Valid conv over time of x [T][Cin]; W ggml ne [K, Cin, Cout]: W[co][ci][k].
inline Vec conv1d(const Vec &x, const Vec &W, const Vec &b, int K, int Cin, int Cout) {
    const int T = static_cast<int>(x.size() / Cin), To = T - (K - 1);
    Vec y(static_cast<size_t>(To) * Cout);
    for (int t = 0; t < To; ++t)
        for (int co = 0; co < Cout; ++co) {
            double s = b[co];
            for (int ci = 0; ci < Cin; ++ci)
                for (int k = 0; k < K; ++k) s += W[(static_cast<size_t>(co) * Cin + ci) * K + k] * x[static_cast<size_t>(t + k) * Cin + ci];
            y[static_cast<size_t>(t) * Cout + co] = s;
        }
    return y;
}

}  // namespace rtf::test::plain
