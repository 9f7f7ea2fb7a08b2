#pragma once
// Packed BF16 GEMM for token2mel's linear layers in the bf16 compute type (internal to the
// t2w engine; the F32 twin of this is packed-gemm.h, same tiling and registry).
//
// With `--t2w-type-t2m bf16` the linear weights are converted to bf16 at load and ggml's
// mul_mat then runs one dot product per output (no register blocking). Here the bf16
// weight is packed once, in place, into panels of 16 output rows whose k's are stored in
// pairs, and an AVX512-BF16 micro-kernel keeps a 32 x 12 block of F32 outputs in
// registers: per pair of k's two weight vectors and 12 broadcast activation pairs feed 24
// VDPBF16PS, each two multiply-adds per lane — twice the F32 kernel's arithmetic per
// instruction, half its weight bytes.
//
//   W  ggml ne = [K, N] BF16, K even
//   packed  element ((p·K/2 + kk)·16 + j)·2 + e = W[16p + j][2kk + e]  (N % 16 == 0)
//   x  BF16 rows m = 0..M-1 of K (the activations rounded to bf16, nearest-even, by the op
//      itself (bf16-round.h): the bits ggml's F32 -> BF16 copy and its own bf16 mul_mat give)
//   y[m][n] = Σ_k W[n][k]·x[m][k] (+ b[n]) in F32
//
// Numerics: VDPBF16PS adds, per pair, the odd product and then the even one to the F32
// accumulator, each product exact (8-bit x 8-bit mantissas) and each sum rounded to
// nearest (denormals flushed): per output, acc = fma(w[2i+1], x[2i+1], acc) then
// fma(w[2i], x[2i], acc) for i = 0..K/2-1, then + b[n]. gemm_bf16_reference() is that
// loop; the kernel equals it bit for bit (denormal-free data), whatever the block or
// thread split, so the result does not depend on the window length.
//
// Dispatch: bf16_packed_enabled() is true on a CPU with AVX512-BF16 when RTF_T2W_PACKED
// is not "0"; otherwise the bf16 weights stay on ggml's mul_mat.
#include <cstdint>

#include <ggml.h>

namespace rtf::t2w::gemm {

// The CPU reports AVX-512F and AVX512-BF16, and the kernel level (RTF_ISA) is avx512-bf16 or above.
bool cpu_has_avx512bf16();
// cpu_has_avx512bf16() (with AVX-512F) and RTF_T2W_PACKED unset or not "0".
bool bf16_packed_enabled();

// Packs a BF16 W (row n at w + n·K, raw bf16 bits) in place; requires N % 16 == 0 and K
// even (returns false, untouched, otherwise).
bool pack_bf16_in_place(uint16_t *w, int64_t N, int64_t K);
// y (row m at y + m·ldy) = packed W · x (+ bias), the output blocks of thread ith of nth.
// Requires AVX512-BF16 (the caller checks bf16_packed_enabled()).
void gemm_bf16(const uint16_t *packed, int64_t N, int64_t K, const uint16_t *x, int64_t ldx, int64_t M,
               const float *bias, float *y, int64_t ldy, int ith = 0, int nth = 1);
// The same product as a plain loop over the unpacked W, in the instruction's order: the contract.
void gemm_bf16_reference(const uint16_t *w, int64_t N, int64_t K, const uint16_t *x, int64_t ldx, int64_t M,
                         const float *bias, float *y, int64_t ldy);

// ggml ops: x (F32, ne = [K, M, ...]) is rounded to BF16 by the op, then y = W·x + b with W a
// BF16 weight packed in place (registered with register_packed()). Returns F32 [N, M, ...].
ggml_tensor *linear_bf16(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w_packed, ggml_tensor *b);

// A bf16 conv kernel (ne = [k, Cin, Cout], the bf16 copy of a channel-fastest conv's kernel)
// packed in place as the k-major matrix of packed-gemm.h's conv_k_major (W'[n][j·Cin + c] =
// W[n][c][j]) in this file's k-pair panels; requires Cout % 16 == 0 and k·Cin even (returns
// false, untouched, otherwise). Register it with register_conv_k_major().
bool pack_conv_k_major_bf16_in_place(uint16_t *w, int64_t k, int64_t Cin, int64_t Cout);
// y ne = [Cout, T-k+1, B] = the valid conv of x ne = [Cin, T, B] (F32, rounded to bf16 by the
// op, as linear_bf16) with such a kernel, + b: one packed BF16 GEMM over the input's
// overlapping frames, no im2col. Its name: rtf:packed-conv-ct-bf16.
ggml_tensor *conv_k_major_bf16(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w_packed, ggml_tensor *b);

}  // namespace rtf::t2w::gemm
