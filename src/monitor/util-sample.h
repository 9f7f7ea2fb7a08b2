#pragma once
// One utilisation reading of one device at one instant: what every sampler produces and
// what the duty cycle (duty-cycle.h) is computed from.
//
// Units are percent (0..100). A field the device does not report is NaN (never 0: "not
// reported" and "idle" are different facts). `memory_pct` is the memory-traffic figure the
// duty cycle uses: NVML's "memory utilisation" (the share of time the memory controller
// was busy: a time share, NOT a bandwidth), Ascend's HBM/DDR bandwidth usage rate. CPUs
// report no memory-traffic figure here.
#include <cmath>
#include <limits>
#include <string>

namespace rtf::mon {

inline constexpr double kNotReported = std::numeric_limits<double>::quiet_NaN();

struct UtilSample {
    double t_ms = 0;                       // sample time on the caller's clock, ms
    double compute_pct = kNotReported;     // compute busy share (GPU SM / Aicore / CPU busy)
    double memory_pct = kNotReported;      // memory traffic (see above)
    double mem_bw_pct = kNotReported;      // DRAM bandwidth share where the device reports it
    double mem_used_mib = kNotReported;    // memory in use, MiB
};

}  // namespace rtf::mon
