// Linked into every test binary (tests/CMakeLists.txt rtf_add_test): an RTF_ISA kernel level
// this CPU cannot run, or a name that is no level, stops the binary before any test with the
// refusal's line (core/cpu-features.h check_isa_env). Without it a refused level would fall
// back to the host's kernels and its tests would pass as if that level had been exercised.
#include <cstdio>
#include <cstdlib>

#include "core/cpu-features.h"
#include "core/error.h"

namespace {
const bool kIsaChecked = [] {
    try {
        rtf::check_isa_env();
    } catch (const rtf::Error &e) {
        std::fprintf(stderr, "test binary refused to run: %s\n", rtf::error_text(e).c_str());
        std::exit(1);
    }
    return true;
}();
}  // namespace
