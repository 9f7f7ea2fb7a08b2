#pragma once
// Direct F32 convolution for the HiFT vocoder's conv1d layers (internal to the t2w engine).
//
// The im2col formulation (ops::conv1d_tc + the packed GEMM) first expands the input K-fold
// (kernel 7/11 ResBlock convs at 24 kHz: ~7-11x the activations through memory), then
// multiplies, then transposes the [Cout, T] product back into the "tc" layout: three passes
// over large buffers, so its time swings with the host's memory traffic. Here the kernel
// reads the input where it lies and writes the output in place: an AVX-512F micro-kernel
// keeps an 8 (output channels) x 48 (times, three vectors) block in 24 registers for the
// whole (ci, k) loop; per (ci, k) three unaligned input loads (time-shifted by k·d - pad)
// and eight weight broadcasts feed 24 FMAs. Zero padding is done with masked loads on the
// blocks that touch an edge (no padded copy); a stride > 1 gathers. Without AVX-512F an
// AVX2 + FMA kernel takes the same blocks as 4 x 24 sub-blocks (12 YMM accumulators) and
// computes the same bits.
//
//   x  "tc" ne = [Tin, Cin] (time fastest; row stride ldx floats)
//   W  GGUF ne = [K, Cin, Cout] (PyTorch [Cout, Cin, K])
//   y  "tc" ne = [Tout, Cout], Tout = (Tin + 2·pad - d·(K-1) - 1) / s + 1
//   y[co][t] = (Σ_ci Σ_k W[co][ci][k] · x[ci][t·s + k·d - pad]) + b[co] (+ res[co][t])
//   packed   blocks g = 0..ceil(Cout/8)-1, element ((g·Cin + ci)·K + k)·8 + r = W[8g + r][ci][k]
//            (zero where 8g + r >= Cout); packed_floats(Cout, Cin, K) floats.
//
// Numerics: every output is one F32 accumulator updated by fma() in the order ci = 0..Cin-1,
// k = 0..K-1 (terms outside the input contribute nothing), then + b, then + res — exactly
// conv_reference(), bit for bit, whatever the block, thread count or split. That is also the
// order of im2col + the packed GEMM (its K·Cin index is ci·K + k) followed by ggml_add, so the
// vocoder's output does not move when this path replaces that one.
//
// Dispatch: enabled() is gemm::packed_enabled() (AVX-512F or AVX2 + FMA, RTF_T2W_PACKED not
// "0"; its kernel_isa() picks the kernel, so RTF_T2W_PACKED=avx2 runs the AVX2 one on an
// AVX-512 CPU) and RTF_T2W_CONV not "0"; with it off the vocoder keeps im2col + the packed
// GEMM. conv() itself
// also runs without either (a portable loop, for tests), but slowly.
#include <cstdint>

#include <ggml.h>

namespace rtf::t2w::conv {

constexpr int kRows = 8;  // output channels per block

// gemm::packed_enabled() and RTF_T2W_CONV unset or not "0" (read on each call:
// T2wModel::load asks once per model).
bool enabled();

// Floats a packed kernel of Cout x Cin x K takes: ceil(Cout/8)·8·Cin·K.
int64_t packed_floats(int64_t Cout, int64_t Cin, int64_t K);
// Packs W (GGUF order: W[co][ci][k] at w + (co·Cin + ci)·K + k) into dst (packed_floats()
// floats, not overlapping w).
void pack(const float *w, int64_t Cout, int64_t Cin, int64_t K, float *dst);
// Packs in place; requires Cout % 8 == 0 (the packed kernel is then exactly as large).
// Uses a scratch copy while it runs.
void pack_in_place(float *w, int64_t Cout, int64_t Cin, int64_t K);

// One convolution's geometry. Tout = out_len(Tin).
struct Geometry {
    int64_t Cin = 0, Cout = 0, K = 0;
    int stride = 1, pad = 0, dilation = 1;
    int64_t out_len(int64_t Tin) const { return (Tin + 2 * pad - static_cast<int64_t>(dilation) * (K - 1) - 1) / stride + 1; }
};

// y (row co at y + co·ldy, Tout floats) = packed W * x (+ bias) (+ res, row co at
// res + co·ldr; null = none), for the blocks of thread ith of nth (the whole output when
// nth = 1). Threads write disjoint outputs. y must not overlap x; it may be res.
void conv(const float *packed, const Geometry &g, const float *x, int64_t ldx, int64_t Tin, const float *bias,
          const float *res, int64_t ldr, float *y, int64_t ldy, int ith = 0, int nth = 1);
// The same convolution as a plain loop over the unpacked W: the contract.
void conv_reference(const float *w, const Geometry &g, const float *x, int64_t ldx, int64_t Tin, const float *bias,
                    const float *res, int64_t ldr, float *y, int64_t ldy);

// Kernels packed in place at load (T2wModel: the F32 vocoder's conv1d weights) are
// registered here (process-wide, thread-safe), as gemm::register_packed does for the GEMM's:
// such a tensor keeps its ggml type and shape but holds the packed layout, so only conv1d()
// may read it. GgufWeights unregisters in its destructor.
void register_packed(const ggml_tensor *w);
void unregister_packed(const ggml_tensor *w);
bool is_packed(const ggml_tensor *w);

// ggml op: y = conv(x, W) + b (+ res) in the "tc" layout. x ne = [Tin, Cin] F32 (any row
// stride), w a kernel packed in place (ne = [K, Cin, Cout]), b ne = [Cout] or null, res ne =
// [Tout, Cout] or null (the residual add fused: saves ggml_add's pass). Returns ne = [Tout,
// Cout], contiguous. A custom op: CPU backend only; ggml's threads split the blocks.
// Throws rtf::Error (Internal) for an unregistered w or mismatching shapes.
ggml_tensor *conv1d(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, int stride, int pad, int dilation,
                    ggml_tensor *res = nullptr);

}  // namespace rtf::t2w::conv
