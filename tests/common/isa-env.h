#pragma once
// What the test run's kernel level (RTF_ISA, core/cpu-features.h) allows, read here from the
// environment with its own list of levels, independent of the code under test: a detection
// test expects "the CPU has X and the level allows X".
#include <cstdlib>
#include <cstring>

namespace rtf::test {

// true when RTF_ISA is unset or names `level` or a level above it
inline bool isa_env_allows(const char *level) {
    static const char *const order[] = {"baseline", "avx2", "avx512", "avx512-bf16", "amx"};
    const char *e = std::getenv("RTF_ISA");
    if (!e || !*e) return true;
    int want = -1, have = -1;
    for (int i = 0; i < 5; ++i) {
        if (std::strcmp(order[i], level) == 0) want = i;
        if (std::strcmp(order[i], e) == 0) have = i;
    }
    return have >= want;
}

}  // namespace rtf::test
