// Robust statistics and the significance test on fixed data (hand-computed values).
#include <gtest/gtest.h>

#include <cmath>

#include "core/robust-stats.h"

using namespace rtf;

TEST(RobustStats, MedianMadAndOutliers) {
    // median 3; |x - 3| = {2,1,0,1,97} -> MAD 1; z(100) = 0.6745 * 97 = 65.4 > 3.5
    auto s = robust_stats({1, 2, 3, 4, 100});
    EXPECT_EQ(s.n, 5);
    EXPECT_DOUBLE_EQ(s.median, 3);
    EXPECT_DOUBLE_EQ(s.mad, 1);
    EXPECT_DOUBLE_EQ(s.min, 1);
    EXPECT_DOUBLE_EQ(s.max, 100);
    EXPECT_DOUBLE_EQ(s.mean, 22);
    ASSERT_EQ(s.outliers, std::vector<int>{4});
    EXPECT_NEAR(s.outlier_z[0], 0.6745 * 97, 1e-9);
    // 1 and 5 are at |z| = 0.6745 * 2 = 1.35: not outliers
    auto e = robust_stats({0.50, 0.52, 0.48, 0.51});
    EXPECT_DOUBLE_EQ(e.median, 0.505);
    EXPECT_NEAR(e.mad, 0.01, 1e-12);  // deviations .005 .015 .025 .005 -> median .01
    EXPECT_TRUE(e.outliers.empty());
    // A deviation below min_abs_dev is never an outlier, however small the MAD.
    auto stable = robust_stats({0.3820, 0.3821, 0.3810}, kOutlierZ, 0.015);
    EXPECT_TRUE(stable.outliers.empty());
    EXPECT_EQ(robust_stats({0.3820, 0.3821, 0.3810}).outliers.size(), 1u);
}

TEST(RobustStats, ZeroMadFlagsNothingAndNanIgnored) {
    auto s = robust_stats({1, 1, 1, 5});
    EXPECT_DOUBLE_EQ(s.mad, 0);
    EXPECT_TRUE(s.outliers.empty());
    auto n = robust_stats({std::nan(""), 2, 4});
    EXPECT_EQ(n.n, 2);
    EXPECT_DOUBLE_EQ(n.median, 3);
    auto z = robust_stats({});
    EXPECT_TRUE(std::isnan(z.median));
}

TEST(MannWhitney, ThreeRunsCannotGiveATest) {
    EXPECT_DOUBLE_EQ(min_exact_p(3, 3), 0.1);
    EXPECT_NEAR(min_exact_p(4, 4), 2.0 / 70, 1e-12);
    auto t = mann_whitney_u({0.50, 0.51, 0.52}, {0.40, 0.41, 0.42});
    EXPECT_FALSE(t.possible);
    EXPECT_NE(t.note.find("3 and 3 runs"), std::string::npos) << t.note;
    EXPECT_TRUE(std::isnan(t.p_value));
}

TEST(MannWhitney, ExactSmallSamples) {
    // Completely separated 5 vs 5: U_a = 25, two-sided exact p = 2 / C(10,5) = 2/252.
    auto t = mann_whitney_u({10, 11, 12, 13, 14}, {1, 2, 3, 4, 5});
    ASSERT_TRUE(t.possible);
    EXPECT_TRUE(t.exact);
    EXPECT_DOUBLE_EQ(t.u, 25);
    EXPECT_NEAR(t.p_value, 2.0 / 252, 1e-12);
    EXPECT_TRUE(t.significant);
    // Interleaved samples: a = {1,3,5,7}, b = {2,4,6,8}: U_a = 0+1+2+3 = 6 of 16, mu 8.
    // P(|U - 8| >= 2) under H0 for 4 vs 4 (70 arrangements): 1 - P(U in {7,8,9}) = 1 - (7+8+7)/70 = 48/70.
    auto i = mann_whitney_u({1, 3, 5, 7}, {2, 4, 6, 8});
    EXPECT_DOUBLE_EQ(i.u, 6);
    EXPECT_NEAR(i.p_value, 48.0 / 70, 1e-12);
    EXPECT_FALSE(i.significant);
}

TEST(MannWhitney, TiesUseTheNormalApproximation) {
    auto t = mann_whitney_u({1, 1, 2, 2, 3}, {1, 2, 2, 3, 3});
    ASSERT_TRUE(t.possible);
    EXPECT_FALSE(t.exact);
    EXPECT_GT(t.p_value, 0.3);
    auto same = mann_whitney_u({5, 5, 5, 5}, {5, 5, 5, 5});
    EXPECT_DOUBLE_EQ(same.p_value, 1.0);
}

TEST(RobustStats, PercentileIsPercentLinearNanWhenEmpty) {
    // numpy.percentile([1,2,3,4], q): linear interpolation at q/100 * (n-1)
    std::vector<double> v{4, 1, 3, 2};
    EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
    EXPECT_DOUBLE_EQ(percentile(v, 95), 3.85);
    EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
    EXPECT_DOUBLE_EQ(percentile(v, 100), 4);
    EXPECT_DOUBLE_EQ(percentile(v, 150), 4);  // clamped to 0..100
    EXPECT_DOUBLE_EQ(percentile(v, -5), 1);
    EXPECT_DOUBLE_EQ(percentile({7}, 95), 7);
    EXPECT_DOUBLE_EQ(percentile({std::nan(""), 1, 3}, 50), 2);  // NaN ignored
    EXPECT_TRUE(std::isnan(percentile({}, 50)));
    EXPECT_TRUE(std::isnan(percentile({std::nan("")}, 50)));
    EXPECT_DOUBLE_EQ(median_of({4, 1, 3, 2}), percentile({4, 1, 3, 2}, 50));
    EXPECT_DOUBLE_EQ(median_of({5, 1, 3}), 3);
    EXPECT_TRUE(std::isnan(median_of({})));
}
