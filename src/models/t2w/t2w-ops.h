#pragma once
// Small ggml graph builders shared by token2mel and the vocoder. Two activation layouts:
//   "ct"  ne = [C, T, B]  channel-fastest (linear layers, attention; token2mel)
//   "tc"  ne = [T, C]     time-fastest (convolutions via im2col; HiFT)
// Conv weights are in the GGUF layout ne = [K, Cin, Cout] (PyTorch [Cout, Cin, K]);
// transposed-conv weights ne = [K, Cout, Cin].
#include <vector>

#include <ggml.h>

namespace rtf::t2w::ops {

// y = W·x + b; W ne = [in, out], x ne = [in, ...]. A weight packed at load
// (packed-gemm.h: gemm::is_packed) runs as the packed GEMM op, bias fused; else ggml_mul_mat.
ggml_tensor *linear(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b);
// LayerNorm over ne0; w/b may be null (affine-free).
ggml_tensor *layer_norm(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, float eps);
// Valid (unpadded) conv over time of a "ct" input [Cin, T, B] -> [Cout, T-(K-1)·d, B]
// (im2col, then the product: the packed GEMM when w is packed, as linear(); a kernel packed
// k-major, gemm::is_conv_k_major, runs gemm::conv_k_major on the input in place, dilation 1).
ggml_tensor *conv1d_ct(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, int dilation = 1);
// Conv of a "tc" input [T, Cin] with zero padding -> [Tout, Cout] (im2col, then the product:
// the packed GEMM and a transpose when w is packed, else ggml_mul_mat).
ggml_tensor *conv1d_tc(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, int stride, int pad,
                       int dilation);
// Transposed conv of a "tc" input [T, Cin] (stride s, `pad` samples removed at both ends) -> [(T-1)s+K-2pad, Cout].
ggml_tensor *conv_transpose1d_tc(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, int stride, int pad);
// The same transposed conv as one GEMM (tinyBLAS) + overlap-add, with a kernel packed once
// by pack_transposed_kernel: ggml_conv_transpose_1d computes with short dot products and
// repacks its kernel single-threaded on every call. Sums in a different order (float
// rounding differs in the last bits). The product is linear(): the packed GEMM when wp is
// registered as gemm-packed (the Vocoder does so with the direct convolution on).
ggml_tensor *conv_transpose1d_tc_packed(ggml_context *ctx, ggml_tensor *x, ggml_tensor *wp, int K, int Cout, int stride,
                                        int pad, ggml_tensor *b);
// Host packing of a GGUF transposed-conv kernel w ne = [K, Cout, Cin] for the above:
// ne = [Cin, G·s·Cout], G = ceil(K/s), element (cin, kk + s·c + s·Cout·j) = w[j·s+kk][c][cin]
// (zero past K).
std::vector<float> pack_transposed_kernel(const std::vector<float> &w, int K, int Cout, int Cin, int stride);
// Snake(x, α) = x + sin²(α·x)/(α + 1e-9) per channel on a "tc" input [T, C], α ne = [C],
// as a chain of ggml ops (any device).
ggml_tensor *snake(ggml_context *ctx, ggml_tensor *x, ggml_tensor *alpha);
// The same in one pass (a ggml custom op: CPU backend only) with a vectorised sine: equal
// to snake() within ~1.3e-7 per sine (t2w-ops.cpp), not bit-identical.
ggml_tensor *snake_fused(ggml_context *ctx, ggml_tensor *x, ggml_tensor *alpha);
// Time slice [t0, t0+n) of a "ct" tensor (a view).
ggml_tensor *slice_t(ggml_context *ctx, ggml_tensor *x, int64_t t0, int64_t n);

}  // namespace rtf::t2w::ops
