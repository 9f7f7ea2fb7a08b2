#pragma once
// `rtf limits`, part 3: each stage's floor and the path's hard-limit RTF (docs/method.md §2, §4).
//
//   floor_s      = units/s x max(bytes / read_bw(threads_s), flops / flop_rate(type_s, threads_s))
//                  seconds of work per second of audio, i.e. an RTF. read_bw is the measured
//                  read bandwidth; flop_rate the CPU's measured arithmetic peak for the
//                  stage's weight type (peak-flops.h: f32 for F32 weights, f16 = F32 FMAs
//                  after F16C for the rest) — the machine's limit, not our kernels'. When no
//                  peak was measured, ggml's achieved mul_mat rate stands in (and the floor
//                  then says so: compute_rate = "ggml"). compute_rtf_ggml is the same floor
//                  at ggml's rate: their ratio is the operator layer's headroom.
//   serial_rtf   = sum_s floor_s: the stages one after another, each with its threads.
//   overlapped   = max( max_s floor_s,                              (the bottleneck stage)
//                       sum_s bytes_s / read_bw(all threads),       (one memory bus)
//                       sum_s flops_s / flop_rate_s(all threads) )  (the cores are shared)
//                  A lower bound in every case: overlapping stages cannot beat the machine's
//                  total bandwidth or total FLOP rate, so on a 2-core CPU the overlapped limit
//                  stays near the serial one unless one stage is memory-bound and another
//                  compute-bound — the caveat of docs/method.md §2 (stages sharing cores).
// The rate for n threads is the BEST measured at <= n threads (a stage given n threads can
// always use fewer, and a floor must stay a lower bound on time even when an oversubscribed
// machine made more threads slower).
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "predict/limits.h"
#include "predict/model-floors.h"
#include "predict/peak-flops.h"

namespace rtf::predict {

struct MachineRates {
    std::vector<BandwidthResult> bandwidth;  // CPU, per thread count
    std::vector<MatmulResult> matmul;        // per device / type / threads
    std::vector<PeakResult> peak;            // CPU arithmetic peak per type / threads
    std::vector<HostLinkResult> host_link;   // non-CPU devices: host <-> device copies
    double read_gib_s(int n_threads) const;             // NaN when none measured
    double gflops(const std::string &type, int n_threads) const;  // ggml mul_mat, CPU; f16 used for non-f32 types
    double peak_gflops(const std::string &type, int n_threads) const;  // NaN when not measured / unsupported
};

struct StageFloor {
    std::string stage;
    int n_threads = 0;
    double bytes_per_audio_s = 0, flops_per_audio_s = 0;
    double memory_rtf = 0, compute_rtf = 0, floor_rtf = 0;
    double compute_rtf_ggml = 0;  // the compute floor at ggml's achieved mul_mat rate
    std::string compute_rate;     // "peak" | "ggml": which rate compute_rtf used
    std::string bound;  // "memory" | "compute"
};

struct PathLimits {
    std::vector<StageFloor> stages;
    double serial_rtf = 0, overlapped_rtf = 0;
    std::string overlapped_binding;  // which term set the overlapped limit
    int total_threads = 0;
};

// stage_threads: threads per stage (missing: total_threads).
PathLimits path_limits(const ModelCosts &costs, const MachineRates &rates, const std::map<std::string, int> &stage_threads,
                       int total_threads);

nlohmann::json to_json(const PathLimits &p);

}  // namespace rtf::predict
