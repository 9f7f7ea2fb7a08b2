#pragma once
// Robust statistics for benchmark runs: median/min/max/MAD, outliers by the modified
// z-score, and the Mann-Whitney U test for A/B comparisons.
//
// Outliers (as hyperfine's src/outlier_detection.rs does): modified z-score
//   M_i = 0.6745 (x_i - median) / MAD,   outlier when |M_i| > 3.5
// B. Iglewicz and D. C. Hoaglin (1993), "How to Detect and Handle Outliers", ASQC Basic
// References in Quality Control vol. 16, section 3.3. 0.6745 is the 0.75 quantile of the
// standard normal, so M is comparable to a z-score for normal data. MAD = median |x_i - median|
// (unscaled). When MAD is 0 (over half the runs identical) nothing is flagged. A very stable
// sample has a tiny MAD that makes z explode for harmless deviations (0.001 RTF -> z = 11),
// so a value is flagged only when also |x - median| >= min_abs_dev (the caller's notion of
// a deviation that matters, e.g. half the RTF noise floor).
//
// Mann-Whitney U (two-sided): exact null distribution (recurrence over rank arrangements)
// when there are no ties and n1*n2 <= 10000, else the normal approximation with tie
// correction and continuity correction. `can_reach_alpha` says whether the sample sizes can
// give p < alpha at all: with 3 runs against 3 the smallest exact p is 2/20 = 0.10, so three
// runs cannot make a significance test at 5 % (docs/method.md §7.3 asks us to say so).
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rtf {

struct RobustStats {
    int n = 0;
    double median = 0, min = 0, max = 0, mad = 0, mean = 0;  // NaN when n == 0
    std::vector<int> outliers;         // indices into the input
    std::vector<double> outlier_z;     // their modified z-scores
};

inline constexpr double kOutlierZ = 3.5;

// NaN inputs are ignored (indices still refer to the input vector).
RobustStats robust_stats(const std::vector<double> &values, double outlier_z = kOutlierZ, double min_abs_dev = 0);

// The one percentile every layer uses (p50/p95/p99 of docs/metrics.md, report lines, the
// t2w profile, medians): `percent` is in percent, 0..100 (clamped), e.g. percentile(v, 95).
// Linear interpolation between closest ranks (Hyndman & Fan type 7, numpy.percentile's
// default): the value at position percent/100 * (n-1) of the sorted sample, v[i] + f*(v[i+1]-v[i]),
// so p0 is the min, p100 the max and p50 of an even-sized sample the mean of the two middle
// values. NaN inputs are ignored; nothing left gives NaN (a caller that prints 0 for an empty
// series says so at its call site). Copies and sorts: fine for per-run sizes.
double percentile(std::vector<double> values, double percent);
double median_of(std::vector<double> v);  // percentile(v, 50): NaN when empty
double modified_z(double x, double median, double mad);

nlohmann::json to_json(const RobustStats &s);

struct SignificanceTest {
    std::string test = "mann-whitney-u";
    bool possible = false;      // false: too few runs to reach alpha (see note)
    bool exact = false;
    double u = 0;               // U of sample a
    double p_value = 0;         // two-sided; NaN when not computed
    double alpha = 0.05;
    bool significant = false;
    std::string note;           // plain words: what the test says or why there is none
};

SignificanceTest mann_whitney_u(const std::vector<double> &a, const std::vector<double> &b, double alpha = 0.05);

// Smallest two-sided exact p-value possible with sizes n1, n2 (= 2 / C(n1+n2, n1)).
double min_exact_p(int n1, int n2);

nlohmann::json to_json(const SignificanceTest &t);

}  // namespace rtf
