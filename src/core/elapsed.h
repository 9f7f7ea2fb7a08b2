#pragma once
// Wall time since a steady_clock point, in milliseconds: how engines and benchmarks time
// their own steps (load, prefill, decode). Measurement that must be testable with a
// virtual clock goes through profile/clock.h instead.
#include <chrono>

namespace rtf {

inline double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace rtf
