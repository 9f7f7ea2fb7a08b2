#pragma once
// What the TTS golden tests (simplex test-tts-golden, duplex test-tts-duplex-golden) share:
// where the seeded full-shape twin and the reference's dumps are, and a reader of the dumps'
// little-endian records. Compiled with RTF_PROJECT_DIR defined; RTF_SHARED_DIR comes from test-paths.h.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "test-paths.h"  // RTF_TESTS_SOURCE_DIR, RTF_SHARED_DIR

namespace rtf::test {

// The twin scripts/golden-twins.sh makes; RTF_TTS_TWIN_DIR overrides.
inline std::string tts_twin_dir() {
    if (const char *e = std::getenv("RTF_TTS_TWIN_DIR")) return e;
    return std::string(RTF_PROJECT_DIR) + "/.cache/tts-golden-twin";
}

// ../shared/golden/<name>; RTF_SHARED_DIR in the environment wins (worktrees whose
// ../shared is elsewhere).
inline std::string golden_dir(const std::string &name) {
    const char *e = std::getenv("RTF_SHARED_DIR");
    return std::string(e && *e ? e : RTF_SHARED_DIR) + "/golden/" + name;
}

inline std::vector<char> slurp(const std::string &p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read " + p);
    return {std::istreambuf_iterator<char>(f), {}};
}

// Sequential reader of a dump: int32 / float32 fields and arrays, in file order.
struct Reader {
    const std::vector<char> &b;
    size_t o = 0;
    bool done() const { return o >= b.size(); }
    int32_t i32() { int32_t v; std::memcpy(&v, b.data() + o, 4); o += 4; return v; }
    float f32() { float v; std::memcpy(&v, b.data() + o, 4); o += 4; return v; }
    template <class T> std::vector<T> vec(size_t n) { std::vector<T> v(n); std::memcpy(v.data(), b.data() + o, n * sizeof(T)); o += n * sizeof(T); return v; }
};

}  // namespace rtf::test
