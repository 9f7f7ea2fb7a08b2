#pragma once
// The per-block graph builders and the host solver step of token2mel, in their own file
// (internal to the t2w engine) so that tests/t2w/test-t2w-blocks.cpp can build each block
// on tiny random weights and check it against plain loops. token2mel.cpp builds its encoder
// and DiT graphs from exactly these functions; nothing here owns memory or a backend.
//
// Layout: activations "ct" (ne = [C, T], channel fastest), weights named as in the GGUF
// files (spec minicpmo45-speak-path.md §1.5, §1.7) and looked up in `w` under `prefix`
// (e.g. "encoders.3." or "estimator.blocks.7."): a missing tensor throws rtf::Error(Usage)
// naming the file and tensor (GgufWeights::get).
#include <cstdint>
#include <string>
#include <vector>

#include <ggml.h>

#include "models/t2w/t2w-model.h"

namespace rtf::t2w::blocks {

constexpr float kCfgRate = 0.7f;   // classifier-free guidance rate (docs/minicpmo45.md §4.5)
constexpr int kDitMaxKeys = 600;   // TOKEN2WAV_FM_MAX_T_CACHE default (docs/minicpmo45.md §4.6)

// ---------------- encoder (docs/minicpmo45.md §4.4)

// ESPnet relative-position multi-head self-attention, chunk mode (no mask), up to and
// including linear_out. y [d, Tq] (already layer-normed); cache ne = [2·hd, ≥Sc, H]: per
// head K‖V of the cached keys, of which the first Sc time entries are read (Sc = 0: no
// cache, `cache` may be null: the prompt setup); pe [d, 2S-1]
// with S = Sc + Tq (row r = relative position S-1-r, dsp::rel_pos_table). Returns [d, Tq];
// *new_cache = K‖V of [cache ; current], ne = [2·hd, S, H].
ggml_tensor *rel_pos_mha(ggml_context *ctx, const GgufWeights &w, const std::string &prefix, ggml_tensor *y,
                         ggml_tensor *cache, ggml_tensor *pe, int Sc, int n_heads, int head_dim, ggml_tensor **new_cache);

// One conformer layer (pre-norm, no macaron, no conv module):
//   x += MHA(LN_1e-12(x)); x += W2·SiLU(W1·LN_1e-12(x)).
// Arguments as rel_pos_mha; x [d, Tq] -> [d, Tq].
ggml_tensor *conformer_layer(ggml_context *ctx, const GgufWeights &w, const std::string &prefix, ggml_tensor *x,
                             ggml_tensor *cache, ggml_tensor *pe, int Sc, int n_heads, int head_dim,
                             ggml_tensor **new_cache);

// ---------------- DiT estimator (docs/minicpmo45.md §4.6)

// SiLU(c) [h] of the time condition c = mlp.2(SiLU(mlp.0(emb(1000·t)))); t ne = [1].
// `w` = flow_matching.gguf (names "estimator.t_embedder.*").
ggml_tensor *dit_time_condition(ggml_context *ctx, const GgufWeights &w, ggml_tensor *t, int freq_dim, int hidden);

// Batch: every DiT builder below takes x / m as [h, T, B] (B = 1, or 2 = both CFG branches
// of one Euler step in one graph, so each weight is read once per step); caches then carry
// the batch in their last dimension, and a batch element only ever meets its own keys and
// cached frames. Each element's numbers are exactly those of a B = 1 graph.
//
// DiT self-attention up to and including proj. m [h, T, B] (modulated); cache ne =
// [2·dh, L, H, B]: per head K‖V of the cached context (null: none, L = 0, the prompt setup).
// Keys/values = [current ; cached]; when T + L > max_keys only the last max_keys of that
// sequence are kept. Returns [h, T, B]; *new_kv (when asked) = K‖V of the current frames,
// ne = [2·dh, T, H, B] (K after k_norm): a prompt cache's estimator_att_cache slot
// (docs/minicpmo45.md §4.9).
//
// vt_cache (optional, with a cache): ne = [R, dh, H, B], R >= T + L, whose last L columns
// hold V^T of the cache (vt_cache[R-L+l][d][hh][b] = V of cached frame l), as
// fill_vt_cache() fills it. Then the cache is neither concatenated nor transposed per call:
// the cached keys are read in place, and the current V^T is written into columns
// [R-L-T, R-L) of vt_cache (so a graph using it must not run concurrently with another
// graph writing the same tensor). The same dot products over [current ; cached], equal to
// the concatenating path within float rounding (the strided V^T view may take another
// ggml kernel path: 1 LSB of 16-bit PCM measured). Ignored when T + L > max_keys.
// k_cache (optional, with vt_cache): ne = [dh, R, H, B], the cached K in rows [R-L, R)
// (fill_k_cache); the current K is written into rows [R-L-T, R-L) and the scores are one
// product over the contiguous rows [R-L-T, R) (else two products, the cached keys read in
// place from `cache` with its K‖V row stride, joined).
// `fused` (CPU backend only, no new_kv, T + L <= max_keys): the whole attention is one
// custom op, attn::dit_attention (dit-attention.h), reading the cache in place; vt_cache
// and k_cache are then not used.
// `cpu_ops` false (a graph for another backend): the strided V^T view is copied into a
// contiguous tensor before its product. It starts R-L-T floats into its rows, and
// ggml-vulkan's matmul binds a non-contiguous operand's start as a storage-buffer offset,
// which must be a multiple of minStorageBufferOffsetAlignment (16 bytes on lavapipe; the
// validation layer flags it); its copy op takes an unaligned start.
ggml_tensor *dit_attention(ggml_context *ctx, const GgufWeights &w, const std::string &prefix, ggml_tensor *m,
                           ggml_tensor *cache, int n_heads, int head_dim, int max_keys = kDitMaxKeys,
                           ggml_tensor **new_kv = nullptr, ggml_tensor *vt_cache = nullptr,
                           ggml_tensor *k_cache = nullptr, bool fused = false, bool cpu_ops = true);

// One DiT block. x [h, T, B]; mod [9·h] = adaLN(SiLU(c)) of this block (shift_msa, scale_msa,
// gate_msa, shift_mlp, scale_mlp, gate_mlp, shift_conv, scale_conv, gate_conv); att_cache
// as dit_attention; cnn_cache ne = [2·h, 2, B]: the 2 cached input frames of conv1 (channels
// [0, h)) and conv2 ([h, 2h)). Returns x' [h, T, B]; *new_cnn ne = [2·h, 2, B] = the last 2
// input frames of conv1 and conv2; *new_att as dit_attention's *new_kv (when asked).
// `cpu_ops`: the graph runs on the CPU backend, so CPU custom ops may be used (Mish:
// mish()); false = plain ggml ops any backend runs. `vt_cache`, `k_cache`: as dit_attention's;
// `fused_attn` (with cpu_ops): dit_attention's `fused`.
ggml_tensor *dit_block(ggml_context *ctx, const GgufWeights &w, const std::string &prefix, ggml_tensor *x,
                       ggml_tensor *mod, ggml_tensor *att_cache, ggml_tensor *cnn_cache, int n_heads, int head_dim,
                       ggml_tensor **new_cnn, int max_keys = kDitMaxKeys, ggml_tensor **new_att = nullptr,
                       bool cpu_ops = true, ggml_tensor *vt_cache = nullptr, ggml_tensor *k_cache = nullptr,
                       bool fused_attn = false);

// Mish z·tanh(ln(1 + e^z)) elementwise on a contiguous F32 tensor, as one custom op (CPU
// backend only) with a vectorised exponential: within ~1e-6 of the reference's float
// exp/log/tanh chain (token2mel-blocks.cpp says where they differ).
ggml_tensor *mish(ggml_context *ctx, ggml_tensor *x);
// ggml_gelu's CPU result bit for bit (its tanh form through an fp16 table), as one custom op
// (CPU backend only) with the lookup vectorised (AVX-512F gather): ggml's own loop is scalar.
// The table is ggml_gelu's output on every fp16 value, computed once on first use.
ggml_tensor *gelu_fast(ggml_context *ctx, ggml_tensor *x);
// The reference's own op chain z·tanh(log(exp(z) + 1)), on any backend.
ggml_tensor *mish_chain(ggml_context *ctx, ggml_tensor *x);

// Host side of vt_cache: from one K‖V cache slot kv (ne = [2·dh, L, H], as
// estimator_att_cache holds it) the values of columns [R-L, R) of vt (ne = [R, dh, H]).
void fill_vt_cache(const float *kv, int L, int n_heads, int head_dim, float *vt, int R);
// The same for k_cache: rows [R-L, R) of kb (ne = [dh, R, H]) = the cached K.
void fill_k_cache(const float *kv, int L, int n_heads, int head_dim, float *kb, int R);

// ---------------- flow-matching solver (docs/minicpmo45.md §4.5, host side)

// t_i = 1 - cos(π·i/(2N)), i = 0..N (float arithmetic as the reference).
std::vector<float> flow_time_span(int n_steps);

// One Euler step in place: x += dt·f, f = (1+rate)·f_cond - rate·f_uncond, or f = f_cond
// when f_uncond is null (CFG off). All three arrays hold n floats.
void euler_cfg_step(float *x, const float *f_cond, const float *f_uncond, size_t n, float dt, float rate = kCfgRate);

}  // namespace rtf::t2w::blocks
