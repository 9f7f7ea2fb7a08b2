#include "apm-reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rtf::apm::ref {

double rel_err(const std::vector<float> &a, const std::vector<float> &b) {
    if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
    double mx = 1e-12, d = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        mx = std::max(mx, std::fabs(static_cast<double>(b[i])));
        d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
    }
    return d / mx;
}

float gelu(float x) {
    const double c = std::sqrt(2.0 / 3.14159265358979323846);
    return static_cast<float>(0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x))));
}

std::vector<float> linear(const std::vector<float> &x, int64_t T, int64_t in, const std::vector<float> &W,
                          const std::vector<float> &b, int64_t out) {
    std::vector<float> y(static_cast<size_t>(T * out));
    for (int64_t t = 0; t < T; ++t)
        for (int64_t o = 0; o < out; ++o) {
            double s = b.empty() ? 0.0 : b[static_cast<size_t>(o)];
            for (int64_t i = 0; i < in; ++i) s += static_cast<double>(W[static_cast<size_t>(o * in + i)]) * x[static_cast<size_t>(t * in + i)];
            y[static_cast<size_t>(t * out + o)] = static_cast<float>(s);
        }
    return y;
}

std::vector<float> layer_norm(const std::vector<float> &x, int64_t T, int64_t d, const std::vector<float> &w,
                              const std::vector<float> &b, float eps) {
    std::vector<float> y(x.size());
    for (int64_t t = 0; t < T; ++t) {
        double m = 0.0, v = 0.0;
        for (int64_t i = 0; i < d; ++i) m += x[static_cast<size_t>(t * d + i)];
        m /= static_cast<double>(d);
        for (int64_t i = 0; i < d; ++i) {
            const double e = x[static_cast<size_t>(t * d + i)] - m;
            v += e * e;
        }
        v /= static_cast<double>(d);
        for (int64_t i = 0; i < d; ++i)
            y[static_cast<size_t>(t * d + i)] = static_cast<float>((x[static_cast<size_t>(t * d + i)] - m) / std::sqrt(v + eps) *
                                                                       w[static_cast<size_t>(i)] +
                                                                   b[static_cast<size_t>(i)]);
    }
    return y;
}

std::vector<float> conv1d(const std::vector<float> &in, int64_t cin, int64_t t_in, const std::vector<float> &W,
                          const std::vector<float> &b, int64_t cout, int stride) {
    const int64_t t_out = (t_in - 1) / stride + 1;
    std::vector<float> y(static_cast<size_t>(cout * t_out));
    for (int64_t o = 0; o < cout; ++o)
        for (int64_t t = 0; t < t_out; ++t) {
            double s = b[static_cast<size_t>(o)];
            for (int64_t c = 0; c < cin; ++c)
                for (int64_t k = 0; k < 3; ++k) {
                    const int64_t src = t * stride + k - 1;
                    if (src < 0 || src >= t_in) continue;
                    s += static_cast<double>(W[static_cast<size_t>((o * cin + c) * 3 + k)]) * in[static_cast<size_t>(c * t_in + src)];
                }
            y[static_cast<size_t>(o * t_out + t)] = static_cast<float>(s);
        }
    return y;
}

std::vector<float> conv_front(const std::vector<float> &mel, int64_t n_mel, int64_t t_mel, const std::vector<float> &w1,
                              const std::vector<float> &b1, const std::vector<float> &w2, const std::vector<float> &b2,
                              int64_t d, int64_t *T_out) {
    auto h = conv1d(mel, n_mel, t_mel, w1, b1, d, 1);
    for (auto &v : h) v = gelu(v);
    const int64_t T = (t_mel - 1) / 2 + 1;
    auto g = conv1d(h, d, t_mel, w2, b2, d, 2);
    std::vector<float> out(static_cast<size_t>(T * d));
    for (int64_t c = 0; c < d; ++c)
        for (int64_t t = 0; t < T; ++t) out[static_cast<size_t>(t * d + c)] = gelu(g[static_cast<size_t>(c * T + t)]);
    *T_out = T;
    return out;
}

std::vector<float> encoder_layer(const std::vector<float> &x, int64_t T, int64_t d, int64_t n_head, const Layer &l,
                                 std::vector<float> &kc, std::vector<float> &vc, float eps) {
    const int64_t hd = d / n_head;
    const auto h = layer_norm(x, T, d, l.ln1_w, l.ln1_b, eps);
    const auto q = linear(h, T, d, l.q_w, l.q_b, d);
    const auto k = linear(h, T, d, l.k_w, {}, d);
    const auto v = linear(h, T, d, l.v_w, l.v_b, d);
    kc.insert(kc.end(), k.begin(), k.end());
    vc.insert(vc.end(), v.begin(), v.end());
    const int64_t n_kv = static_cast<int64_t>(kc.size()) / d;
    std::vector<float> att(static_cast<size_t>(T * d));
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    std::vector<double> p(static_cast<size_t>(n_kv));
    for (int64_t hh = 0; hh < n_head; ++hh)
        for (int64_t t = 0; t < T; ++t) {
            double mx = -1e300;
            for (int64_t j = 0; j < n_kv; ++j) {
                double s = 0.0;
                for (int64_t i = 0; i < hd; ++i)
                    s += static_cast<double>(q[static_cast<size_t>(t * d + hh * hd + i)]) * kc[static_cast<size_t>(j * d + hh * hd + i)];
                p[static_cast<size_t>(j)] = s * scale;
                mx = std::max(mx, p[static_cast<size_t>(j)]);
            }
            double z = 0.0;
            for (auto &e : p) z += (e = std::exp(e - mx));
            for (int64_t i = 0; i < hd; ++i) {
                double s = 0.0;
                for (int64_t j = 0; j < n_kv; ++j) s += p[static_cast<size_t>(j)] * vc[static_cast<size_t>(j * d + hh * hd + i)];
                att[static_cast<size_t>(t * d + hh * hd + i)] = static_cast<float>(s / z);
            }
        }
    const auto o = linear(att, T, d, l.o_w, l.o_b, d);
    std::vector<float> x1(x.size());
    for (size_t i = 0; i < x.size(); ++i) x1[i] = x[i] + o[i];
    auto f = linear(layer_norm(x1, T, d, l.ln2_w, l.ln2_b, eps), T, d, l.fc1_w, l.fc1_b, l.n_ff);
    for (auto &e : f) e = gelu(e);
    const auto f2 = linear(f, T, l.n_ff, l.fc2_w, l.fc2_b, d);
    for (size_t i = 0; i < x1.size(); ++i) x1[i] += f2[i];
    return x1;
}

std::vector<float> project_pool(const std::vector<float> &x, int64_t T, int64_t d, const std::vector<float> &ln_w,
                                const std::vector<float> &ln_b, const std::vector<float> &w1, const std::vector<float> &b1,
                                int64_t n_proj, const std::vector<float> &w2, const std::vector<float> &b2, int64_t n_out,
                                int64_t *n_rows) {
    auto h = linear(layer_norm(x, T, d, ln_w, ln_b, 1e-5f), T, d, w1, b1, n_proj);
    for (auto &e : h) e = std::max(e, 0.0f);
    const auto y = linear(h, T, n_proj, w2, b2, n_out);
    const int64_t n = (T - 5) / 5 + 1;
    std::vector<float> out(static_cast<size_t>(n * n_out), 0.0f);
    for (int64_t r = 0; r < n; ++r)
        for (int64_t c = 0; c < n_out; ++c) {
            double s = 0.0;
            for (int64_t k = 0; k < 5; ++k) s += y[static_cast<size_t>((r * 5 + k) * n_out + c)];
            out[static_cast<size_t>(r * n_out + c)] = static_cast<float>(s / 5.0);
        }
    *n_rows = n;
    return out;
}

std::vector<float> log_mel(const std::vector<float> &x, const std::vector<float> &filters, int64_t n_mel) {
    const size_t N = x.size(), pad = 200;
    std::vector<double> padded(N + 2 * pad, 0.0);
    for (size_t i = 0; i < N; ++i) padded[pad + i] = x[i];
    for (size_t j = 0; j < pad; ++j) padded[j] = x[pad - j];  // reflect, the edge sample not repeated
    const int64_t n_frames = static_cast<int64_t>(N / 160);
    const double pi = 3.14159265358979323846;
    std::vector<float> out(static_cast<size_t>(n_mel * n_frames));
    std::vector<double> c(400), s(400);  // exp(-2 pi i m / 400) for m = k n mod 400
    for (int m = 0; m < 400; ++m) {
        c[static_cast<size_t>(m)] = std::cos(2.0 * pi * m / 400.0);
        s[static_cast<size_t>(m)] = std::sin(2.0 * pi * m / 400.0);
    }
    for (int64_t f = 0; f < n_frames; ++f) {
        std::vector<double> P(201);
        for (int k = 0; k < 201; ++k) {
            double re = 0.0, im = 0.0;
            for (int n = 0; n < 400; ++n) {
                const double w = 0.5 * (1.0 - c[static_cast<size_t>(n)]);  // periodic Hann
                const double v = w * padded[static_cast<size_t>(f * 160 + n)];
                re += v * c[static_cast<size_t>((k * n) % 400)];
                im -= v * s[static_cast<size_t>((k * n) % 400)];
            }
            P[static_cast<size_t>(k)] = re * re + im * im;
        }
        for (int64_t m = 0; m < n_mel; ++m) {
            double s = 0.0;
            for (int k = 0; k < 201; ++k) s += P[static_cast<size_t>(k)] * filters[static_cast<size_t>(m * 201 + k)];
            out[static_cast<size_t>(m * n_frames + f)] = static_cast<float>(std::log10(std::max(s, 1e-10)));
        }
    }
    const float mx = *std::max_element(out.begin(), out.end()) - 8.0f;
    for (auto &v : out) v = (std::max(v, mx) + 4.0f) / 4.0f;
    return out;
}

}  // namespace rtf::apm::ref
