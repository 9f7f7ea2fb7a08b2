#pragma once
// Seeded standard-normal test data (the kernels' tests draw their weights and inputs here).
#include <cstddef>
#include <random>
#include <vector>

namespace rtf::test {

inline std::vector<float> randn(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto &x : v) x = d(rng);
    return v;
}

}  // namespace rtf::test
