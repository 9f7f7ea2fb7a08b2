#pragma once
// A test that needs something a machine may lack (a Vulkan device, oneDNN, pocketsphinx, the
// golden twins) skips where it is missing, saying why, unless the run requires it:
// RTF_TEST_REQUIRE=vulkan,onednn,asr,golden (a comma list, or "all") turns that skip into a
// failure. .ci/run sets it, because CI's setup installs every one of them: a regression that
// hides lavapipe must fail CI, not turn its tests into skips.
//
//   if (dev.empty()) RTF_SKIP_OR_FAIL("vulkan", why);
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace rtf::test {

inline bool required(const std::string &dep) {
    const char *e = std::getenv("RTF_TEST_REQUIRE");
    if (!e) return false;
    const std::string list = std::string(",") + e + ",";
    return list.find(",all,") != std::string::npos || list.find("," + dep + ",") != std::string::npos;
}

}  // namespace rtf::test

// Skips the test (GTEST_SKIP) with `why`, or fails it where RTF_TEST_REQUIRE names `dep`.
#define RTF_SKIP_OR_FAIL(dep, why)                                                                       \
    do {                                                                                                 \
        if (::rtf::test::required(dep)) {                                                                \
            GTEST_FAIL() << "RTF_TEST_REQUIRE names " << (dep) << ", but it is missing: " << (why);      \
        }                                                                                                \
        GTEST_SKIP() << (why);                                                                           \
    } while (0)
