#pragma once
// Fused DiT attention on the CPU (internal to the t2w engine).
//
// The DiT's attention of one block, per CFG branch and head, over [current frames ; the
// voice's prompt cache]: S = Q·Kᵀ/√dh, softmax over the keys, O = softmax(S)·V, written
// straight into the layout attn.proj reads. The ggml graph it replaces (the cached branch
// of blocks::dit_attention) is 13 nodes per block: three permute copies, the current K
// and Vᵀ copied into resident cache tensors, two F32 MUL_MATs on ggml's one-dot-product-
// per-output kernel, SCALE, SOFT_MAX and the output permute — ~14 % of token2mel's F32
// time on 2 cores (docs/measurements.md §21). Here the cached keys and values are read in
// place from the prompt cache's K‖V rows, the current ones from the projections, and only
// the queries are copied (into panels of 16, so one AVX-512 vector holds 16 queries' scores
// against one key); the resident K / Vᵀ copies of the cache (~117 MB) are not needed.
//
//   q, k, v  ne = [dh, H, T, B], contiguous (q and k after their LayerNorms)
//   kv       ne = [2·dh, L, H, B] (any row / head / branch strides, dh floats contiguous):
//            row l of head h, branch b = K ‖ V of cached frame l
//   result   ne = [dh·H, T, B]: frame t's heads side by side (head h in [h·dh, (h+1)·dh))
//
// Numerics (attention_reference() is the contract, and the AVX-512 kernels compute exactly
// it, bit for bit): each score is one F32 accumulator updated by fma() in order d =
// 0..dh-1, times 1/√dh (exact for dh = 64); softmax subtracts the row's maximum and takes exp_neg() (a degree-6
// polynomial, relative error ~2e-7, not libm's expf); each output sums fma(e, v) over the
// keys in order [current ; cached], then times 1/Σe (Σe in the same key order).
// Deterministic and independent of the thread split. It differs from ggml's path (other
// summation orders, ggml's own exp) in the last bits: tests/t2w/test-t2w-attention.cpp.
//
// Dispatch: fused_enabled() is true on a CPU with AVX-512F unless RTF_T2W_ATTN=ggml (the
// A/B switch); token2mel uses the fused op only on the CPU backend.
#include <cstdint>

#include <ggml.h>

namespace rtf::t2w::attn {

// cpu_has_avx512f() and RTF_T2W_ATTN is not "ggml" (read on each call).
bool fused_enabled();

// exp(x) for x <= 0 (clamped below at -87: the result is then ~1.6e-38): what the softmax
// takes. Exposed for tests.
float exp_neg(float x);

// The op (scale 1/√dh). A custom op: CPU backend only; ggml's threads split the (branch,
// head) pairs.
ggml_tensor *dit_attention(ggml_context *ctx, ggml_tensor *q, ggml_tensor *k, ggml_tensor *v, ggml_tensor *kv);

// The same computation as plain loops (the contract), on host arrays laid out as above:
// kv row l of head h, branch b at kv + b·kv_nb3 + h·kv_nb2 + l·kv_nb1 (in floats).
void attention_reference(const float *q, const float *k, const float *v, int64_t dh, int64_t H, int64_t T, int64_t B,
                         const float *kv, int64_t L, int64_t kv_nb1, int64_t kv_nb2, int64_t kv_nb3, float *out);

}  // namespace rtf::t2w::attn
