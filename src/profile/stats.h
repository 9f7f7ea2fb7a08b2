#pragma once
// Order statistics used by every report: percentiles and the p50/p95/p99/max summary.
//
// The percentile is core's (core/robust-stats.h: percent 0..100, linear interpolation
// between closest ranks, numpy.percentile's default; NaN when empty), so p50 of an
// even-sized sample is the mean of the two middle values and p100 is the max. Empty input
// gives NaN (rendered as JSON null).
#include <cstddef>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/robust-stats.h"

namespace rtf::prof {

// prof::percentile(v, 95) is core's rtf::percentile (not a second implementation); the
// median is rtf::median_of.
using rtf::percentile;

struct Summary {
    size_t n = 0;
    double mean = 0, p50 = 0, p95 = 0, p99 = 0, max = 0;  // NaN when n == 0 (except n)
};

Summary summarize(const std::vector<double> &values);

// {"n", "mean", "p50", "p95", "p99", "max"}; NaN values become null.
nlohmann::json to_json(const Summary &s);

// A double as JSON, NaN/inf as null (JSON has no NaN).
nlohmann::json json_number(double v);

}  // namespace rtf::prof
