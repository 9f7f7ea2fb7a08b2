#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profile/stats.h"

using namespace rtf::prof;

TEST(Stats, PercentileInterpolatesLinearly) {
    // prof::percentile is core's rtf::percentile (its rule is pinned in tests/core/test-robust-stats.cpp).
    EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 95), 3.85);  // numpy.percentile([1,2,3,4], 95)
    EXPECT_TRUE(std::isnan(percentile({}, 50)));
}

TEST(Stats, SummaryAndJson) {
    std::vector<double> v;
    for (int i = 1; i <= 100; ++i) v.push_back(i);
    Summary s = summarize(v);
    EXPECT_EQ(s.n, 100u);
    EXPECT_DOUBLE_EQ(s.p50, 50.5);
    EXPECT_DOUBLE_EQ(s.p95, 95.05);
    EXPECT_DOUBLE_EQ(s.p99, 99.01);
    EXPECT_DOUBLE_EQ(s.max, 100);
    EXPECT_DOUBLE_EQ(s.mean, 50.5);
    auto j = to_json(summarize({}));
    EXPECT_EQ(j["n"], 0);
    EXPECT_TRUE(j["p50"].is_null());
}
