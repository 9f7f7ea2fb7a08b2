#pragma once
// Prints how long each phase of a long test case took ("[phase] <name>: 1.23 s"), so that a
// case slow or stopped by its timeout in CI shows in the log where its time went:
//
//   rtf::test::PhaseClock clock;
//   ... clock.mark("our generator");   // the time since the last mark (or construction)
#include <chrono>
#include <cstdio>

namespace rtf::test {

class PhaseClock {
public:
    void mark(const char *name) {
        const auto now = std::chrono::steady_clock::now();
        std::fprintf(stderr, "[phase] %s: %.2f s\n", name, std::chrono::duration<double>(now - last_).count());
        std::fflush(stderr);
        last_ = now;
    }

private:
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace rtf::test
