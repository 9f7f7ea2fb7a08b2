#pragma once
// Duty cycle (docs/method.md §3): is the accelerator really computing?
//
// A mean over a window that includes idle prefill, queue waits and drain hides bursts:
// in the write-up a 2-minute mean of 14 % hid bursts of 72 %, and a single 4 % sample was
// read as "not on the NPU". So rtfkit reports, next to the mean:
//
//   duty_cycle          share of samples with compute > compute_threshold_pct AND
//                       memory > memory_threshold_pct (both default 5 %). When the device
//                       reports no memory figure (CPUs, old GPUs) the memory clause is
//                       dropped and `memory_reported` is false, so readers know.
//   active_mean_compute mean compute over the active samples only: the burst level.
//   mean_compute        the plain mean, for comparison (the misleading number).
//
// Samples whose compute is NaN are not counted at all (n_missing).
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "monitor/util-sample.h"

namespace rtf::mon {

struct DutyCycleConfig {
    double compute_threshold_pct = 5.0;
    double memory_threshold_pct = 5.0;
    // Throws rtf::Error(Usage) when a threshold is outside [0, 100).
    void validate() const;
};

struct DutyCycle {
    int n = 0;                 // samples with a compute figure
    int n_missing = 0;         // samples without one (skipped)
    int n_active = 0;          // samples over both thresholds
    bool memory_reported = false;
    double duty_cycle = 0;     // n_active / n (NaN when n == 0)
    double mean_compute = 0;   // NaN when n == 0
    double mean_memory = 0;    // NaN when no memory figure
    double active_mean_compute = 0;  // NaN when n_active == 0
    double max_compute = 0;    // NaN when n == 0
    DutyCycleConfig config;
};

DutyCycle compute_duty_cycle(const std::vector<UtilSample> &samples, const DutyCycleConfig &cfg = {});

// {"n", "n_missing", "n_active", "duty_cycle", "mean_compute_pct", "mean_memory_pct",
//  "active_mean_compute_pct", "max_compute_pct", "memory_reported", "thresholds": {...}}
nlohmann::json to_json(const DutyCycle &d);

}  // namespace rtf::mon
