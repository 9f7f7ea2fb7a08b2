#include "profile/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <nlohmann/json.hpp>

namespace rtf::prof {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

Summary summarize(const std::vector<double> &values) {
    Summary s;
    s.n = values.size();
    if (values.empty()) {
        s.mean = s.p50 = s.p95 = s.p99 = s.max = kNaN;
        return s;
    }
    s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
    s.p50 = percentile(values, 50);
    s.p95 = percentile(values, 95);
    s.p99 = percentile(values, 99);
    s.max = percentile(values, 100);
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
