#include "profile/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <nlohmann/json.hpp>

namespace rtf::prof {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double percentile_sorted(const std::vector<double> &v, double q) {
    if (v.empty()) return kNaN;
    double pos = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(v.size() - 1);
    size_t lo = static_cast<size_t>(std::floor(pos));
    size_t hi = std::min(lo + 1, v.size() - 1);
    double frac = pos - static_cast<double>(lo);
    return v[lo] + (v[hi] - v[lo]) * frac;
}
}  // namespace

double percentile(std::vector<double> values, double q) {
    std::sort(values.begin(), values.end());
    return percentile_sorted(values, q);
}

double median(std::vector<double> values) { return percentile(std::move(values), 50.0); }

Summary summarize(const std::vector<double> &values) {
    Summary s;
    s.n = values.size();
    if (values.empty()) {
        s.mean = s.p50 = s.p95 = s.p99 = s.max = kNaN;
        return s;
    }
    std::vector<double> v = values;
    std::sort(v.begin(), v.end());
    s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    s.p50 = percentile_sorted(v, 50);
    s.p95 = percentile_sorted(v, 95);
    s.p99 = percentile_sorted(v, 99);
    s.max = v.back();
    return s;
}

nlohmann::json json_number(double v) {
    if (!std::isfinite(v)) return nullptr;
    return v;
}

nlohmann::json to_json(const Summary &s) {
    return {{"n", s.n},
            {"mean", json_number(s.mean)},
            {"p50", json_number(s.p50)},
            {"p95", json_number(s.p95)},
            {"p99", json_number(s.p99)},
            {"max", json_number(s.max)}};
}

}  // namespace rtf::prof
