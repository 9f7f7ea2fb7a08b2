#pragma once
// Graph blocks of the audio encoder (docs/minicpmo45.md §5.1), one function per block, each
// unit-tested against a plain-loop implementation (tests/apm/test-apm-blocks.cpp). The
// encoder (apm-encoder.h) chains them:
//
//   mel [T_mel, n_mel] -> conv_front -> [d, T]       T = ceil(T_mel / 2) tokens
//                      -> add_positions(offset)      rows [offset, offset + T) of the table
//                      -> encoder_layer x n_layer    attention over the streaming KV cache
//                      -> project_pool -> [n_out, n] n = (T - 5) / 5 + 1 embeddings
//
// Tensors are in ggml ne order (ne0 contiguous). Functions only add nodes to `ctx`; the
// KV-cache writes are added to `gf` directly (they are not on the output's path).
#include <cstdint>

#include <ggml.h>

#include "models/apm/apm-model.h"

namespace rtf::apm {

// conv1 (k 3, stride 1, pad 1) + bias, GELU; conv2 (k 3, stride 2, pad 1) + bias, GELU; then
// transposed to one column per token. mel: F32 [T_mel, n_mel]. Returns F32 [d, T].
ggml_tensor *conv_front(ggml_context *ctx, ggml_tensor *mel, const ApmWeights &w);

// x + pos[:, offset .. offset + T). pos: [d, n_ctx]; the caller keeps offset + T <= n_ctx.
ggml_tensor *add_positions(ggml_context *ctx, ggml_tensor *x, ggml_tensor *pos, int64_t offset);

// The streaming KV cache of one layer: K as [d, n_ctx] (one row per token), V transposed as
// [n_ctx, d] (one row per channel) so the attention reads V^T without a copy. Either F16
// (the reference's type) or F32.
struct LayerCache {
    ggml_tensor *k = nullptr;
    ggml_tensor *v = nullptr;
};

// One pre-LN block over x [d, T]: x + out(Attn(LN(x))), then + fc2(GELU(fc1(LN(.)))).
// The chunk's K and V are written at token n_past of the cache; its queries attend to all
// n_past + T cached tokens without a mask (later chunks see earlier ones; inside a chunk
// every token sees every other). Scale 1/sqrt(d / n_head).
ggml_tensor *encoder_layer(ggml_context *ctx, ggml_cgraph *gf, ggml_tensor *x, const ApmLayer &l,
                           const LayerCache &cache, int64_t n_past, int64_t n_head, float eps);

// ln_post, linear1, ReLU, linear2, then average pooling over tokens (kernel = stride = 5, no
// padding; trailing tokens that do not fill a window are dropped). x: [d, T] with T >= 5.
// Returns [n_out, (T - 5) / 5 + 1].
ggml_tensor *project_pool(ggml_context *ctx, ggml_tensor *x, const ApmWeights &w, float eps);

}  // namespace rtf::apm
