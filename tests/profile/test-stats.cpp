#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profile/stats.h"

using namespace rtf::prof;

TEST(Stats, PercentileInterpolatesLinearly) {
    // numpy.percentile([1,2,3,4], q) -> 50: 2.5, 95: 3.85, 0: 1, 100: 4
    std::vector<double> v{4, 1, 3, 2};
    EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
    EXPECT_DOUBLE_EQ(percentile(v, 95), 3.85);
    EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
    EXPECT_DOUBLE_EQ(percentile(v, 100), 4);
    EXPECT_DOUBLE_EQ(median({7}), 7);
    EXPECT_TRUE(std::isnan(median({})));
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
