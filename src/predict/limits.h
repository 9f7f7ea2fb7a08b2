#pragma once
// `rtf limits`, part 1: what this machine can do (docs/method.md §4 roofline inputs).
//
// Memory bandwidth (CPU, per thread count; each thread works on its own contiguous slice,
// first-touched by that thread; best of `reps` repetitions as STREAM reports):
//   read   sum of a double array (read-only): what LLM decode needs (weights are read once
//          per token). Bytes counted: the array, once.
//   triad  a[i] = b[i] + s * c[i] (STREAM's triad; McCalpin, "Memory Bandwidth and Machine
//          Balance in Current High Performance Computers", IEEE TCCA Newsletter 1995).
//          Bytes counted as STREAM does: 3 arrays (2 read + 1 written), no write-allocate.
//   copy   memcpy(dst, src) counted as Debian's `mbw` counts its MEMCPY test: the bytes
//          copied, once (not read + write), so the figures can be compared directly.
// Arrays should be >= 4x the last-level cache (STREAM's rule); default 128 MiB each.
//
// Matrix multiply (per backend device, per thread count on CPU devices): a ggml mul_mat
// graph C = A x B with A [K x M] of the weight type (F32 or F16) and B [K x N] F32 (as
// ggml's own matmuls are fed), M = N = K = `size`; FLOPs counted 2 M N K; median of `reps`
// after one warm-up. Also a GEMV (N = 1) over a large F16 matrix: the weight-read bandwidth
// a decode step can reach through ggml's kernels ("gemv_gib_s").
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rtf::predict {

struct BandwidthResult {
    int n_threads = 1;
    size_t array_bytes = 0;
    int reps = 0;
    double read_gib_s = 0, triad_gib_s = 0, copy_gib_s = 0;
};

// Throws rtf::Error(Usage) for n_threads < 1, array_bytes < 1 MiB, reps < 1.
BandwidthResult measure_bandwidth(size_t array_bytes, int n_threads, int reps);

struct MatmulResult {
    std::string device;     // ggml device name ("CPU", "CUDA0")
    std::string type;       // "f32" | "f16" (weight type) | "gemv-f16"
    int n_threads = 0;      // 0 for non-CPU devices
    int m = 0, n = 0, k = 0;
    double ms = 0;          // median time of one multiply
    double gflops = 0;      // 2 m n k / time
    double gib_s = 0;       // weight bytes / time (GEMV rows; also set for the others)
};

// `device`: ggml device name. Throws rtf::Error(Usage) naming the device when unknown, and
// rtf::Error(Setup) when the backend cannot be initialised or cannot run the graph.
MatmulResult measure_matmul(const std::string &device, const std::string &type, int n_threads, int size, int reps);
// GEMV y = W x with W [k x m] F16: weight-read bandwidth through ggml.
MatmulResult measure_gemv(const std::string &device, int n_threads, int m, int k, int reps);
// The same size³ product on our packed F32 GEMM (models/t2w/packed-gemm.h: what token2mel's
// linear layers and the vocoder's convolutions run where the CPU has AVX-512F or AVX2 +
// FMA), the threads splitting its blocks as ggml's do: type "packed-f32", device "CPU".
// The rate Token2Wav's products can reach here, beside ggml's and the peak. Throws
// rtf::Error(Setup) when the packed GEMM is off (packed_gemm_available() false).
bool packed_gemm_available();
MatmulResult measure_packed_gemm(int n_threads, int size, int reps);

// Host -> device copies of `bytes` (ggml_backend_tensor_set into a buffer of a non-CPU
// device): the link a stage's inputs and outputs cross. Median of `reps`, GiB/s.
struct HostLinkResult {
    std::string device;
    size_t bytes = 0;
    double upload_gib_s = 0;
    double download_gib_s = 0;
};
HostLinkResult measure_host_link(const std::string &device, size_t bytes, int reps);
nlohmann::json to_json(const HostLinkResult &r);

nlohmann::json to_json(const BandwidthResult &r);
nlohmann::json to_json(const MatmulResult &r);

}  // namespace rtf::predict
