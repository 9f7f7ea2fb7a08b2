#include "core/robust-stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include <nlohmann/json.hpp>

namespace rtf {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

double percentile(std::vector<double> values, double percent) {
    if (std::isnan(percent)) return kNaN;
    values.erase(std::remove_if(values.begin(), values.end(), [](double x) { return std::isnan(x); }), values.end());
    if (values.empty()) return kNaN;
    std::sort(values.begin(), values.end());
    const double pos = std::clamp(percent, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, values.size() - 1);
    const double frac = pos - static_cast<double>(lo);
    if (frac == 0.0) return values[lo];  // an exact rank: no 0 * inf = NaN from an infinite neighbour
    return values[lo] + (values[hi] - values[lo]) * frac;
}

double median_of(std::vector<double> v) { return percentile(std::move(v), 50.0); }

double modified_z(double x, double median, double mad) {
    if (!(mad > 0)) return 0.0;
    return 0.6745 * (x - median) / mad;
}

RobustStats robust_stats(const std::vector<double> &values, double outlier_z, double min_abs_dev) {
    RobustStats s;
    std::vector<double> v;
    for (double x : values)
        if (!std::isnan(x)) v.push_back(x);
    s.n = static_cast<int>(v.size());
    if (v.empty()) {
        s.median = s.min = s.max = s.mad = s.mean = kNaN;
        return s;
    }
    s.median = median_of(v);
    s.min = *std::min_element(v.begin(), v.end());
    s.max = *std::max_element(v.begin(), v.end());
    s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    std::vector<double> dev;
    for (double x : v) dev.push_back(std::fabs(x - s.median));
    s.mad = median_of(dev);
    for (size_t i = 0; i < values.size(); ++i) {
        if (std::isnan(values[i])) continue;
        double z = modified_z(values[i], s.median, s.mad);
        if (std::fabs(z) > outlier_z && std::fabs(values[i] - s.median) >= min_abs_dev) {
            s.outliers.push_back(static_cast<int>(i));
            s.outlier_z.push_back(z);
        }
    }
    return s;
}

nlohmann::json to_json(const RobustStats &s) {
    nlohmann::json j = {{"n", s.n},           {"median", num(s.median)}, {"min", num(s.min)},
                        {"max", num(s.max)},  {"mad", num(s.mad)},       {"mean", num(s.mean)}};
    if (!s.outliers.empty()) j["outliers"] = s.outliers;
    return j;
}

namespace {

// Number of arrangements of n1 "a" and n2 "b" ranks with U_a = u, for all u in [0, n1*n2].
// Recurrence: the largest rank is either an "a" (it beats all n2 b's: U shifts by n2) or a "b".
std::vector<double> u_distribution(int n1, int n2) {
    // f[i][j] is a vector over u; build iteratively over i, j.
    std::vector<std::vector<std::vector<double>>> f(n1 + 1, std::vector<std::vector<double>>(n2 + 1));
    for (int i = 0; i <= n1; ++i) {
        for (int j = 0; j <= n2; ++j) {
            std::vector<double> d(static_cast<size_t>(i * j) + 1, 0.0);
            if (i == 0 || j == 0) {
                d[0] = 1.0;
            } else {
                const auto &fa = f[i - 1][j];  // largest is a: U += j
                for (size_t u = 0; u < fa.size(); ++u) d[u + static_cast<size_t>(j)] += fa[u];
                const auto &fb = f[i][j - 1];
                for (size_t u = 0; u < fb.size(); ++u) d[u] += fb[u];
            }
            f[i][j] = std::move(d);
        }
    }
    return f[n1][n2];
}

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace

double min_exact_p(int n1, int n2) {
    if (n1 <= 0 || n2 <= 0) return 1.0;
    double c = 1.0;  // C(n1+n2, n1)
    for (int k = 1; k <= n1; ++k) c = c * (n2 + k) / k;
    return std::min(1.0, 2.0 / c);
}

SignificanceTest mann_whitney_u(const std::vector<double> &a, const std::vector<double> &b, double alpha) {
    SignificanceTest t;
    t.alpha = alpha;
    t.p_value = kNaN;
    const int n1 = static_cast<int>(a.size()), n2 = static_cast<int>(b.size());
    double pmin = min_exact_p(n1, n2);
    if (n1 == 0 || n2 == 0 || pmin >= alpha) {
        t.possible = false;
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "no significance test: with %d and %d runs the smallest two-sided p-value a rank test can "
                      "give is %.3f, not below alpha %.2f; run at least 4 each (interleaved --ab) for a test",
                      n1, n2, pmin, alpha);
        t.note = buf;
        return t;
    }
    t.possible = true;
    // Ranks with average ranks for ties.
    std::vector<std::pair<double, int>> all;
    for (double x : a) all.push_back({x, 0});
    for (double x : b) all.push_back({x, 1});
    std::sort(all.begin(), all.end(), [](const auto &l, const auto &r) { return l.first < r.first; });
    const int n = n1 + n2;
    std::vector<double> rank(static_cast<size_t>(n));
    double tie_term = 0;
    bool ties = false;
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && all[static_cast<size_t>(j + 1)].first == all[static_cast<size_t>(i)].first) ++j;
        double r = 0.5 * (i + j) + 1.0;
        for (int k = i; k <= j; ++k) rank[static_cast<size_t>(k)] = r;
        int cnt = j - i + 1;
        if (cnt > 1) {
            ties = true;
            tie_term += static_cast<double>(cnt) * cnt * cnt - cnt;
        }
        i = j + 1;
    }
    double ra = 0;
    for (int k = 0; k < n; ++k)
        if (all[static_cast<size_t>(k)].second == 0) ra += rank[static_cast<size_t>(k)];
    t.u = ra - n1 * (n1 + 1) / 2.0;
    const double mu = n1 * n2 / 2.0;
    if (!ties && static_cast<long>(n1) * n2 <= 10000) {
        t.exact = true;
        auto d = u_distribution(n1, n2);
        double total = std::accumulate(d.begin(), d.end(), 0.0);
        // two-sided: P(|U - mu| >= |u - mu|)
        double dev = std::fabs(t.u - mu), tail = 0;
        for (size_t u = 0; u < d.size(); ++u)
            if (std::fabs(static_cast<double>(u) - mu) >= dev - 1e-9) tail += d[u];
        t.p_value = std::min(1.0, tail / total);
    } else {
        double var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (static_cast<double>(n) * (n - 1)));
        double z = var > 0 ? (std::fabs(t.u - mu) - 0.5) / std::sqrt(var) : 0.0;
        t.p_value = std::min(1.0, 2.0 * normal_sf(std::max(0.0, z)));
    }
    t.significant = t.p_value < alpha;
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s Mann-Whitney U = %.1f, two-sided p = %.4f: %s at alpha %.2f",
                  t.exact ? "exact" : "normal-approximation", t.u, t.p_value,
                  t.significant ? "the difference is significant" : "no significant difference", alpha);
    t.note = buf;
    return t;
}

nlohmann::json to_json(const SignificanceTest &t) {
    return {{"test", t.test},       {"possible", t.possible},       {"exact", t.exact},
            {"u", t.possible ? num(t.u) : nlohmann::json(nullptr)},   {"p_value", num(t.p_value)},
            {"alpha", t.alpha},     {"significant", t.significant}, {"note", t.note}};
}

}  // namespace rtf
