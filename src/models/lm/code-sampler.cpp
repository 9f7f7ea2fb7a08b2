#include "models/lm/code-sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace rtf::lm {

namespace {
// expf rounded from double: the correctly rounded result the reference's expf gives.
inline float exp_f32(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }

// First index whose cumulative probability is >= u; the last index if none.
int pick(std::span<const float> p, float u) {
    float cum = 0.0f;
    for (size_t i = 0; i < p.size(); ++i) {
        cum += p[i];
        if (cum >= u) return static_cast<int>(i);
    }
    return static_cast<int>(p.size()) - 1;
}
}  // namespace

float CodeRng::uniform() {
    // generate_canonical<float, 24>: float(g - min) / 2^32, clamped below 1.
    const float r = static_cast<float>(gen_()) / 4294967296.0f;
    return r >= 1.0f ? std::nextafter(1.0f, 0.0f) : r;
}

void code_logits(std::span<const float> z, const float *head, int n_codes, std::span<float> out) {
    // j outer, r inner: every l_r still accumulates in j order (the reference's sequential
    // dot product), but the inner loop runs over contiguous memory and vectorises across r.
    const size_t n = static_cast<size_t>(n_codes);
    for (size_t r = 0; r < n; ++r) out[r] = z[0] * head[r];
    for (size_t j = 1; j < z.size(); ++j) {
        const float zj = z[j];
        const float *row = head + j * n;
        for (size_t r = 0; r < n; ++r) {
            const float prod = zj * row[r];
            out[r] = out[r] + prod;
        }
    }
}

int sample_simplex(std::span<float> l, std::span<const int32_t> history, bool first_of_turn, float u) {
    const int n = static_cast<int>(l.size());
    for (auto &x : l) x = x / kCodeTemperature;
    if (!first_of_turn && !history.empty()) {
        std::vector<char> seen(l.size(), 0);
        const size_t from = history.size() > kSimplexPenaltyWindow ? history.size() - kSimplexPenaltyWindow : 0;
        for (size_t i = from; i < history.size(); ++i) {
            if (history[i] >= 0 && history[i] < n) seen[static_cast<size_t>(history[i])] = 1;
        }
        for (int r = 0; r < n; ++r) {
            if (!seen[static_cast<size_t>(r)]) continue;
            l[static_cast<size_t>(r)] = l[static_cast<size_t>(r)] >= 0.0f ? l[static_cast<size_t>(r)] / kSimplexPenalty
                                                                          : l[static_cast<size_t>(r)] * kSimplexPenalty;
        }
    }
    const float mx = *std::max_element(l.begin(), l.end());
    float sum = 0.0f;
    for (auto &x : l) {
        x = exp_f32(x - mx);
        sum += x;
    }
    for (auto &x : l) x = x / sum;
    return pick(l, u);
}

int sample_duplex(std::span<float> l, std::span<const int32_t> call_codes, int t, bool forbid_eos, float u,
                  DuplexKept *trace) {
    const int n = static_cast<int>(l.size());
    for (auto &x : l) x = x / kCodeTemperature;
    // The reference skips the penalty (and nothing else) at t == 0, where the call has no codes.
    if (t > 0 && !call_codes.empty()) {
        std::vector<int> count(l.size(), 0);
        const size_t from = call_codes.size() > kDuplexPenaltyWindow ? call_codes.size() - kDuplexPenaltyWindow : 0;
        for (size_t i = from; i < call_codes.size(); ++i) {
            if (call_codes[i] >= 0 && call_codes[i] < n) ++count[static_cast<size_t>(call_codes[i])];
        }
        for (size_t r = 0; r < l.size(); ++r) {
            if (count[r] == 0) continue;
            const float alpha = std::pow(kSimplexPenalty, static_cast<float>(count[r]));
            l[r] = l[r] < 0.0f ? l[r] * alpha : l[r] / alpha;
        }
    }
    if (forbid_eos) l[l.size() - 1] = -std::numeric_limits<float>::infinity();
    const float mx = *std::max_element(l.begin(), l.end());
    float sum = 0.0f;
    for (auto &x : l) {
        x = exp_f32(x - mx);
        sum += x;
    }
    for (auto &x : l) x = x / sum;
    // Only the top 25 can ever be kept: a partial sort is enough (stable on ties by index).
    const auto by_p = [&](int a, int b) {
        const float pa = l[static_cast<size_t>(a)], pb = l[static_cast<size_t>(b)];
        return pa > pb || (pa == pb && a < b);
    };
    std::vector<int> order(l.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t top = std::min(order.size(), static_cast<size_t>(std::max(kDuplexTopK, kDuplexMinKeep)));
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(), by_p);
    std::vector<float> kept;
    float cum = 0.0f;
    for (size_t i = 0; i < top; ++i) {
        const int k = static_cast<int>(kept.size());
        if (!(k < kDuplexMinKeep || (cum < kDuplexTopP && k < kDuplexTopK))) break;
        const float p = l[static_cast<size_t>(order[i])];
        kept.push_back(p);
        cum += p;
    }
    float ksum = 0.0f;
    for (float p : kept) ksum += p;
    for (auto &p : kept) p = p / ksum;
    if (trace) {
        trace->idx.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kept.size()));
        trace->p = kept;
    }
    return order[static_cast<size_t>(pick(kept, u))];
}

int argmax_code(std::span<const float> l) {
    return static_cast<int>(std::max_element(l.begin(), l.end()) - l.begin());
}

}  // namespace rtf::lm
