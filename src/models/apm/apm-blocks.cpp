#include "models/apm/apm-blocks.h"

#include <cmath>

#include "models/gguf/minicpmo45-layout.h"

namespace rtf::apm {

namespace {

ggml_tensor *layer_norm(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, float eps) {
    return ggml_add(ctx, ggml_mul(ctx, ggml_norm(ctx, x, eps), w), b);
}

}  // namespace

ggml_tensor *conv_front(ggml_context *ctx, ggml_tensor *mel, const ApmWeights &w) {
    ggml_tensor *cur = ggml_conv_1d_ph(ctx, w.conv1_w, mel, 1, 1);  // [T_mel, d]
    cur = ggml_gelu(ctx, ggml_add(ctx, cur, w.conv1_b));             // bias [1, d] broadcasts over time
    cur = ggml_conv_1d_ph(ctx, w.conv2_w, cur, 2, 1);                // [T, d]
    cur = ggml_gelu(ctx, ggml_add(ctx, cur, w.conv2_b));
    return ggml_cont(ctx, ggml_transpose(ctx, cur));                 // [d, T]
}

ggml_tensor *add_positions(ggml_context *ctx, ggml_tensor *x, ggml_tensor *pos, int64_t offset) {
    ggml_tensor *rows = ggml_view_2d(ctx, pos, pos->ne[0], x->ne[1], pos->nb[1], static_cast<size_t>(offset) * pos->nb[1]);
    return ggml_add(ctx, x, rows);
}

ggml_tensor *encoder_layer(ggml_context *ctx, ggml_cgraph *gf, ggml_tensor *x, const ApmLayer &l,
                           const LayerCache &cache, int64_t n_past, int64_t n_head, float eps) {
    const int64_t d = x->ne[0], T = x->ne[1], hd = d / n_head, n_kv = n_past + T;
    ggml_tensor *h = layer_norm(ctx, x, l.attn_ln_w, l.attn_ln_b, eps);
    ggml_tensor *q = ggml_add(ctx, ggml_mul_mat(ctx, l.q_w, h), l.q_b);
    ggml_tensor *k = ggml_mul_mat(ctx, l.k_w, h);
    ggml_tensor *v = ggml_add(ctx, ggml_mul_mat(ctx, l.v_w, h), l.v_b);

    // Write this chunk's rows into the cache (K row-wise, V column-wise).
    const size_t ek = ggml_element_size(cache.k), ev = ggml_element_size(cache.v);
    ggml_tensor *k_dst = ggml_view_2d(ctx, cache.k, d, T, cache.k->nb[1], static_cast<size_t>(n_past) * cache.k->nb[1]);
    ggml_build_forward_expand(gf, ggml_cpy(ctx, k, k_dst));
    ggml_tensor *v_dst = ggml_view_2d(ctx, cache.v, T, d, cache.v->nb[1], static_cast<size_t>(n_past) * ev);
    ggml_build_forward_expand(gf, ggml_cpy(ctx, ggml_transpose(ctx, v), v_dst));

    // Read all n_kv cached tokens. The views depend on the writes above through the graph
    // order: ggml computes nodes in the order they were expanded.
    ggml_tensor *K = ggml_view_3d(ctx, cache.k, hd, n_kv, n_head, cache.k->nb[1], static_cast<size_t>(hd) * ek, 0);
    ggml_tensor *V = ggml_view_3d(ctx, cache.v, n_kv, hd, n_head, cache.v->nb[1], static_cast<size_t>(hd) * cache.v->nb[1], 0);
    ggml_tensor *Q = ggml_permute(ctx, ggml_reshape_3d(ctx, q, hd, n_head, T), 0, 2, 1, 3);  // [hd, T, H]
    ggml_tensor *kq = ggml_mul_mat(ctx, K, Q);                                               // [n_kv, T, H]
    kq = ggml_soft_max_ext(ctx, kq, nullptr, 1.0f / std::sqrt(static_cast<float>(hd)), 0.0f);
    ggml_tensor *kqv = ggml_mul_mat(ctx, V, kq);                                             // [hd, T, H]
    ggml_tensor *att = ggml_cont_2d(ctx, ggml_permute(ctx, kqv, 0, 2, 1, 3), d, T);
    att = ggml_add(ctx, ggml_mul_mat(ctx, l.o_w, att), l.o_b);
    ggml_tensor *x1 = ggml_add(ctx, x, att);

    h = layer_norm(ctx, x1, l.mlp_ln_w, l.mlp_ln_b, eps);
    h = ggml_gelu(ctx, ggml_add(ctx, ggml_mul_mat(ctx, l.fc1_w, h), l.fc1_b));
    h = ggml_add(ctx, ggml_mul_mat(ctx, l.fc2_w, h), l.fc2_b);
    return ggml_add(ctx, x1, h);
}

ggml_tensor *project_pool(ggml_context *ctx, ggml_tensor *x, const ApmWeights &w, float eps) {
    ggml_tensor *cur = layer_norm(ctx, x, w.ln_post_w, w.ln_post_b, eps);
    cur = ggml_relu(ctx, ggml_add(ctx, ggml_mul_mat(ctx, w.proj1_w, cur), w.proj1_b));
    cur = ggml_add(ctx, ggml_mul_mat(ctx, w.proj2_w, cur), w.proj2_b);  // [n_out, T]
    const int k = static_cast<int>(gguf::minicpmo45::kApmPool);
    cur = ggml_cont(ctx, ggml_transpose(ctx, cur));                       // [T, n_out]: pool runs along ne0
    cur = ggml_pool_1d(ctx, cur, GGML_OP_POOL_AVG, k, k, 0);              // [(T - 5) / 5 + 1, n_out]
    return ggml_cont(ctx, ggml_transpose(ctx, cur));                      // [n_out, n]
}

}  // namespace rtf::apm
