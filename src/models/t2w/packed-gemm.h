#pragma once
// Packed F32 GEMM for token2mel's linear layers (internal to the t2w engine).
//
// ggml's F32 mul_mat computes each output as one dot product (src1 row converted per
// call, no register blocking): ~44 % of this CPU's FMA peak (`rtf limits`). Here the
// weight is packed once, at load, into panels of 16 output rows stored k-major, and an
// AVX-512F micro-kernel keeps a 32 (two panels) x 12 (tokens) block of outputs in 24
// registers for the whole K loop: per k two weight vectors and 12 broadcasts feed 24 FMAs.
//
//   W  ggml ne = [K, N] (PyTorch [N, K]: N outputs, K inputs)
//   packed  panels p = 0..ceil(N/16)-1, element (p·K + k)·16 + j = W[16p + j][k]
//           (zero where 16p + j >= N); packed_floats(N, K) floats.
//   y[m][n] = Σ_k W[n][k]·x[m][k] (+ b[n]), x rows m = 0..M-1 of K floats (row stride ldx).
//
// Numerics: every output is one F32 accumulator updated by fma() in order k = 0..K-1,
// then + b[n] — exactly what gemm_reference() computes, bit for bit, whatever M, the
// block an output falls into, the thread count or the split. So results do not depend on
// the window length (streamed == one-shot stays exact). They differ from ggml's mul_mat
// (which sums in another order) in the last bits.
//
// An AVX2 + FMA kernel (for CPUs without AVX-512: one panel x 6 tokens in 12 YMM
// accumulators, the same packed layout) computes the same fma chain per output: its results
// are the same bits. On an AVX2-only AMD EPYC (Zen 3) ggml's F32 mul_mat ran at ~50 % of
// the FMA peak (docs/measurements.md §24), which is why this kernel exists there too.
//
// Dispatch: packed_enabled() is true on a CPU with AVX-512F or AVX2 + FMA (cpuid) when the
// environment variable RTF_T2W_PACKED is not "0"; callers keep ggml's mul_mat otherwise.
// RTF_T2W_PACKED=avx2 runs the AVX2 kernel on an AVX-512 CPU too (A/B, and its tests on
// any CI machine). gemm() itself also runs without either (a portable loop, for tests),
// but slowly.
#include <cstdint>

#include <ggml.h>

namespace rtf::t2w::gemm {

constexpr int kPanel = 16;  // output rows per panel (one AVX-512 vector)

// The CPU reports AVX-512F (and the OS saves its registers), and the kernel level
// (core/cpu-features.h isa_level(), RTF_ISA) is avx512 or above.
bool cpu_has_avx512f();
// The CPU reports AVX2 and FMA, and the kernel level is avx2 or above.
bool cpu_has_avx2_fma();
// The micro-kernel gemm() runs: avx512 with AVX-512F, else avx2 with AVX2 + FMA (also on an
// AVX-512 CPU when RTF_T2W_PACKED=avx2), else the portable loop. Read on each call.
enum class Isa { portable, avx2, avx512 };
Isa kernel_isa();
const char *isa_name(Isa isa);  // "avx512", "avx2", "portable"
// kernel_isa() is not portable and RTF_T2W_PACKED is unset or not "0" (read on each call:
// T2wModel::load asks once per model).
bool packed_enabled();

// Floats a packed W of N outputs x K inputs takes: ceil(N/16)·16·K.
int64_t packed_floats(int64_t N, int64_t K);
// Packs W (row n at w + n·K) into dst (packed_floats(N, K) floats, not overlapping w).
void pack(const float *w, int64_t N, int64_t K, float *dst);
// Packs in place (the same N·K floats reordered); requires N % 16 == 0, so the packed
// matrix is exactly as large as the original. Uses an N·K scratch copy while it runs.
void pack_in_place(float *w, int64_t N, int64_t K);

// y (row m at y + m·ldy, N floats) = packed W · x (+ bias; null = none), for the output
// blocks of thread ith of nth (the whole product when nth = 1). Threads write disjoint
// outputs; calling every ith in 0..nth-1 computes all of y.
void gemm(const float *packed, int64_t N, int64_t K, const float *x, int64_t ldx, int64_t M, const float *bias, float *y,
          int64_t ldy, int ith = 0, int nth = 1);
// The same product as a plain loop over the unpacked W (row n at w + n·K): the contract.
void gemm_reference(const float *w, int64_t N, int64_t K, const float *x, int64_t ldx, int64_t M, const float *bias,
                    float *y, int64_t ldy);

// Weights packed in place are registered here (process-wide, thread-safe) so that the
// graph builders (ops::linear, ops::conv1d_ct) route them to linear() instead of ggml's
// mul_mat: a packed tensor keeps its ggml type and shape but no longer holds a plain matrix.
// GgufWeights registers at load and unregisters in its destructor.
void register_packed(const ggml_tensor *w);
void unregister_packed(const ggml_tensor *w);
bool is_packed(const ggml_tensor *w);

// ggml op: y = W·x + b with W a weight packed in place (ne = [K, N] as before packing, or a
// 2-D view of it such as a conv kernel [k, Cin, Cout] seen as [k·Cin, Cout]; its data the
// packed panels), x ne = [K, M, ...]
// F32 (made contiguous when it is not), b ne = [N] or null. Returns ne = [N, M, ...]. A
// custom op: CPU backend only; ggml's threads split the output blocks (ith/nth).
ggml_tensor *linear(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w_packed, ggml_tensor *b);

// Conv kernels of a channel-fastest convolution (ops::conv1d_ct, dilation 1) without im2col.
// A kernel ne = [k, Cin, Cout] is packed as the matrix of its k-major rows,
// W'[n][j·Cin + c] = W[n][c][j] (K = k·Cin, N = Cout), so that output frame t is the product
// with the k·Cin contiguous floats of input frames t..t+k-1, read in place (rows of the
// GEMM's x overlap, stride Cin). Registered apart from linear weights (is_conv_k_major), so
// no builder takes one for the other. Numerics: one fma accumulator per output in order
// j-major, c inner — the plain loop of that order, bit for bit.
void pack_conv_k_major_in_place(float *w, int64_t k, int64_t Cin, int64_t Cout);
// The reorder both packings (this F32 one and packed-gemm-bf16.h's) start from: dst row n =
// [W[n][c][0] for c ; W[n][c][1] for c ; ...] from ggml's [k, Cin, Cout] (src row n: c-major).
template <class T>
void reorder_k_major(const T *src, T *dst, int64_t k, int64_t Cin, int64_t Cout) {
    for (int64_t n = 0; n < Cout; ++n)
        for (int64_t c = 0; c < Cin; ++c)
            for (int64_t j = 0; j < k; ++j) dst[(n * k + j) * Cin + c] = src[(n * Cin + c) * k + j];
}
void register_conv_k_major(const ggml_tensor *w);
void unregister_conv_k_major(const ggml_tensor *w);
bool is_conv_k_major(const ggml_tensor *w);
// y ne = [Cout, T-k+1, B] = the valid conv of x ne = [Cin, T, B] (F32; made contiguous when
// it is not) with a kernel packed by pack_conv_k_major_in_place (ne = [k, Cin, Cout]), + b
// (ne = [Cout] or null). A custom op (CPU backend only), its name rtf:packed-conv-ct-f32.
ggml_tensor *conv_k_major(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w_packed, ggml_tensor *b);

}  // namespace rtf::t2w::gemm
