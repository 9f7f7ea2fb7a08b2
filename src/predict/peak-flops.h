#pragma once
// `rtf limits`, the machine's own arithmetic ceiling: a register-only multiply-add loop
// per instruction set, on n threads at once, so that a floor is a property of the CPU and
// not of ggml's kernels (ggml's achieved mul_mat rate is printed beside it: their ratio
// is the operator layer's headroom).
//
//   type   instruction (x86-64)                     FLOPs (or int ops) per instruction
//   f32    vfmadd231ps zmm (AVX-512F) / ymm (FMA3)   2 x 16 / 2 x 8
//   f16    as f32: F16C converts, the arithmetic is F32 (no AVX512-FP16 here)
//   bf16   vdpbf16ps zmm (AVX512-BF16)              2 x 32 (32 bf16 pairs into 16 f32)
//   int8   vpdpbusd zmm (AVX512-VNNI)               2 x 64 (64 u8 x s8 products into 16 i32)
// Each thread runs 12 independent accumulator chains (enough to cover the FMA latency on
// two pipes); the rate is total operations / wall time of the slowest thread. A type the
// CPU lacks is reported as unsupported (rate 0), never estimated.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rtf::predict {

struct PeakResult {
    std::string type;     // "f32" | "f16" | "bf16" | "int8"
    std::string isa;      // "avx512f", "fma", "avx512bf16", "avx512vnni" or "unsupported"
    int n_threads = 1;
    double gflops = 0;    // GFLOP/s (int8: GOP/s)
};

// The types measured, in order.
const std::vector<std::string> &peak_types();

// Throws rtf::Error(Usage) for an unknown type or n_threads < 1. `ms`: how long each
// thread runs (>= 10).
PeakResult measure_peak(const std::string &type, int n_threads, double ms = 200);

nlohmann::json to_json(const PeakResult &r);

}  // namespace rtf::predict
