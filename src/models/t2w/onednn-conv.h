#pragma once
// oneDNN convolution for the HiFT vocoder's conv1d layers in the bf16 compute type
// (`--t2w-type-voc bf16`) and, for A/B runs, in f32 (ConvType; internal to the t2w engine).
//
// The f32 vocoder runs our direct convolution (packed-conv.h) at the FMA units' rate. bf16
// halves the bytes and, with VDPBF16PS (AVX512-BF16) or AMX tiles, doubles (or more) the
// multiply-adds per instruction: oneDNN's brgemm convolution on channels-last ("nwc") data
// reaches ~2x our f32 kernel per core on the EPYC (bench-t2w-conv, docs/measurements.md §14).
// Our activations are time-fastest ("tc", [T, C]), so each call transposes its input slice
// to channels-last bf16 (one pass, rounding to nearest even) and its output back (one pass,
// the residual added there), in 16x16 tiles in AVX-512 registers: ~2 passes over T·C floats
// against K·C multiply-adds per output.
//
//   x "tc" ne = [Tin, Cin], W GGUF ne = [K, Cin, Cout] (PyTorch [Cout, Cin, K])
//   y "tc" ne = [Tout, Cout] = conv(x, W; stride, pad, dilation) + b (+ res)
//
// Threads: ggml's threads split the output times; each runs a primitive for its slice
// geometry (input length and edge padding; cached per kernel), single-threaded.
//
// Numerics: weights and activations rounded to bf16, products exact, F32 sums in oneDNN's
// order, + b, + res in F32. Not bit-equal to the f32 path: the fidelity is the PCM SNR
// against f32 that `rtf t2w` prints (docs/measurements.md §14). The result can depend on the
// slice geometry (thread count) in the last bits only where oneDNN's order does; the unit
// test checks it does not for the vocoder's shapes.
//
// Availability: onednn::available() (onednn-linear.h). Without it a bf16 vocoder is refused
// at load with the reason.
#include <cstdint>

#include <ggml.h>

namespace rtf::t2w::onednn {

// The type a registered kernel and its input run in: bf16 (the `--t2w-type-voc bf16` path) or
// f32 (oneDNN's f32 convolution on channels-last data: the f32 vocoder's math up to the sums'
// order, for where it beats our direct convolution; bench-t2w-conv measures both).
enum class ConvType { bf16, f32 };

// Whether a kernel of Cin input channels goes to oneDNN here. bf16: the transposes must run as
// 16x16 register tiles (AVX-512F, Cin a multiple of 16); per element they cost more than the
// bf16 products save at 64 channels (bench-t2w-conv, §14); others stay f32 (direct). f32: on
// no CPU measured so far (an AVX2 EPYC: 1.5x slower per window than ggml's im2col path, §24);
// RTF_T2W_VOC_ONEDNN_F32=1 sends the f32 vocoder's convolutions there anyway (an A/B switch).
bool conv_pays(int64_t Cin, ConvType type);

// Reorders a kernel (GGUF order, W[co][ci][k] at w + (co·Cin + ci)·K + k, F32) for a
// convolution of `type` and registers it under `key` (the ggml tensor the vocoder will hand to
// conv1d()). Throws rtf::Error(Setup) when oneDNN cannot make the convolution. Thread-safe.
void register_conv(const ggml_tensor *key, const float *w, int64_t Cout, int64_t Cin, int64_t K,
                   ConvType type = ConvType::bf16);
void unregister_conv(const ggml_tensor *key);
bool is_conv_registered(const ggml_tensor *key);

// ggml op: y = conv(x, W) + b (+ res) in the "tc" layout, as conv::conv1d (packed-conv.h):
// x ne = [Tin, Cin] F32 (any row stride), w a registered kernel (ne = [K, Cin, Cout]), b ne =
// [Cout] or null, res ne = [Tout, Cout] or null. Returns F32 ne = [Tout, Cout]. CPU only.
ggml_tensor *conv1d(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, int stride, int pad, int dilation,
                    ggml_tensor *res = nullptr);

// Direct use (tests): output times [t0, t1) of the convolution (y rows of Tout floats: row
// co at y + co·ldy) on the calling thread, as one thread of conv1d()'s split computes them.
void conv_slice(const ggml_tensor *key, const float *x, int64_t ldx, int64_t Tin, int stride, int pad, int dilation,
                const float *bias, const float *res, int64_t ldr, float *y, int64_t ldy, int64_t t0, int64_t t1);

}  // namespace rtf::t2w::onednn
