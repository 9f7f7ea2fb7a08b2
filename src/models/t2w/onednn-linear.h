#pragma once
// oneDNN matmul for token2mel's linear layers (internal to the t2w engine).
//
// oneDNN (Debian libdnnl 2.6) picks its kernel by the CPU at run time: AMX tiles for bf16
// on a Xeon with AMX (its "brg:avx512_core_amx" impl: TFLOP/s per core, issue 30), VDPBF16PS
// on AVX512-BF16, FMA on AVX-512 / AVX2. Our packed GEMMs (packed-gemm.h, -bf16.h) run the
// same products on FMA / VDPBF16PS only, so on a CPU with AMX oneDNN is the only way to the
// tile unit; without AMX the two are measured against each other (bench-t2w-gemm,
// docs/measurements.md §14) and the faster is the default per CPU (backend_for()).
//
//   y[m][n] = Σ_k W[n][k]·x[m][k] + b[n]   W ggml ne = [K, N], x ne = [K, M, ...] F32
//
// At load, register_weight() reorders a weight once into the layout oneDNN's kernel wants
// (its own copy; the ggml tensor keeps its plain data and is then only a handle), in the
// compute type: f32, or bf16 (round to nearest even, as ggml's F32 -> BF16 conversion).
// linear() is a ggml custom op: ggml's threads split the rows m; each thread runs a matmul
// primitive for its row count (created on first use, cached per weight and row count)
// single-threaded, with its own scratchpad, so concurrent graphs (the CFG lanes) never share
// oneDNN state. bf16: each thread rounds its x rows to bf16 first; the sums are F32.
//
// Numerics: f32 is the same math as the packed GEMM but another summation order (oneDNN
// blocks K): the result differs in the last bits, does not depend on the thread count,
// but may on the row count (a primitive per M), i.e. on the window length — bounded by
// the test against the reference loop. bf16: weights and activations rounded to bf16,
// products exact, F32 sums (on AMX in tile order): the same bound as the packed BF16 GEMM.
//
// Availability: compiled in when CMake finds oneDNN (RTF_HAVE_DNNL); available() also needs
// RTF_T2W_ONEDNN unset or not "0" and RTF_T2W_PACKED not "0" (the switch for all of our
// CPU kernels). Otherwise callers keep the packed GEMMs or ggml's mul_mat; nothing fails.
#include <cstdint>
#include <string>
#include <vector>

#include <ggml.h>

namespace rtf::t2w::onednn {

// Compiled with oneDNN.
bool compiled();
// compiled(), and neither RTF_T2W_ONEDNN nor RTF_T2W_PACKED is "0" (read on each call).
bool available();
// oneDNN's version and the ISA it dispatches to on this CPU ("avx512_core_amx",
// "avx512_core_bf16", "avx512_core", "avx2", ...), or "" when not compiled.
std::string version();
std::string isa();

// Which kernel runs a token2mel linear layer of compute type `type` (F32 or BF16).
enum class Backend { Packed, Onednn };
// The default per CPU, from the measurements: AMX -> oneDNN for bf16 (the only path to
// the tiles); otherwise the packed GEMMs (on the EPYC they win or tie in every interleaved
// A/B, §14). RTF_T2W_GEMM=packed|onednn forces one for every shape (A/Bs). Onednn only when
// available().
Backend backend_for(ggml_type type, int64_t N, int64_t K);

// Reorders W (N rows of K, row n at w + n·K; `src_type` F32 or BF16 bits) into oneDNN's
// layout in compute type `type` (F32 or BF16) and registers it under `key` (the ggml tensor
// ops::linear will be handed). Throws rtf::Error(Setup) when oneDNN cannot make a matmul for
// it (the caller then keeps another kernel). Thread-safe.
void register_weight(const ggml_tensor *key, const void *w, ggml_type src_type, int64_t N, int64_t K, ggml_type type);
void unregister_weight(const ggml_tensor *key);
bool is_registered(const ggml_tensor *key);

// ggml op: y = W·x + b for a registered W (ne = [K, N]), x F32 ne = [K, M, ...] (made
// contiguous when not), b ne = [N] or null. Returns F32 ne = [N, M, ...]. CPU backend only.
ggml_tensor *linear(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b);

// The implementations that ran (matmuls and the bf16 vocoder's convolutions), summed by
// oneDNN's impl string: "f32 brg:avx512_core" -> calls.
// For the profile and `rtf t2w --json` (which kernel did the work).
struct ImplCount {
    std::string impl;
    int64_t calls = 0;
};
std::vector<ImplCount> impls_used();

// Direct use (tests, benchmarks): y (M dense rows of N) = W·x (+ b; null = none), x M dense
// rows of K, through the registered weight `key`, on the calling thread.
void matmul(const ggml_tensor *key, const float *x, int64_t M, const float *bias, float *y);

}  // namespace rtf::t2w::onednn
