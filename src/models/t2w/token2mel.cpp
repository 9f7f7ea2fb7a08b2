#include "models/t2w/token2mel.h"
#include "models/t2w/voice.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <exception>
#include <map>
#include <string>
#include <thread>

#include <ggml-alloc.h>
#include <ggml-backend.h>

#include "core/error.h"
#include "models/t2w/t2w-backend.h"
#include "models/t2w/dit-attention.h"
#include "models/t2w/t2w-dsp.h"
#include "models/t2w/t2w-graph.h"
#include "models/t2w/t2w-op-profile.h"
#include "models/t2w/t2w-ops.h"
#include "models/t2w/token2mel-blocks.h"

// Execution plan. A window costs ~95 GFLOP, 96 % of it in the DiT (16 blocks × 5 Euler
// steps × 2 CFG branches). Measured on the 2-core CI machine (shared, loaded), the first
// version (one ~7000-node graph per window, every op split over 2 threads) spent ~80 % of
// its CPU time spinning in the per-node OpenMP barriers of ggml-cpu (partner thread
// preempted => the other spins for milliseconds), so 2 threads used 6× the CPU of 1
// thread and were slower in wall time too. Hence:
//   1. The two CFG branches are independent until the Euler update. Two plans:
//      - batch-2 CFG (issue 13): one graph per Euler step carries both branches as a batch
//        dimension (activations [C, T, 2]; attention [.., T, H, 2], so no branch sees the
//        other's keys): every DiT weight is read once per step and the packed GEMM gets 2x
//        the tokens; its ops are split over all token2mel threads (a barrier per node).
//      - lanes: each branch gets its own graph per Euler step, computed single-threaded on
//        its own thread; the lanes join once per step (5 joins per window instead of a
//        barrier per node, ~1000 per pass).
//      Per-node barriers are cheap on an idle machine, but when the cores are shared a
//      preempted partner thread makes the other spin in ggml's OpenMP barrier for a time
//      slice: measured on the 2-core CI machine under load, batch-2 on 2 threads ran
//      token2mel 4-25x slower than the lanes (docs/measurements.md §5.4). So by default
//      batch-2 runs where there are no barriers to pay (1 thread, or a non-CPU device) and
//      the lanes with >= 2 CPU threads; RTF_T2W_CFG_BATCH=1/0 forces either (A/B). The
//      numbers are the same either way: every product sums each output in the same order
//      whatever the batch or thread split (tests/t2w: BatchedCfgEqualsTwoSingleBranches).
//   2. Graphs are built once per window shape and reused; the adaLN modulation vectors
//      (functions of the Euler step only) are computed once at construction.
//   3. The DiT prompt attention cache (constant forever, docs/minicpmo45.md §4.7): on the
//      CPU with AVX-512F the fused attention op (dit-attention.h) reads its K‖V rows in
//      place, nothing copied.
//      Elsewhere it is copied once per stream as K [dh, Tm_max+L, H, B] and V^T [Tm_max+L, dh,
//      H, B] with the cache at the end; a pass writes only its current K / V^T in front of it
//      and reads [current ; cached] as one view: no per-pass concatenation or transposition
//      of L = 302 frames per block.
// The per-block builders (conformer layer, DiT block, time condition) and the host Euler
// step live in token2mel-blocks.h so that unit tests can check each block on its own.
namespace rtf::t2w {

using blocks::kCfgRate;
using ops::conv1d_ct;
using ops::layer_norm;
using ops::linear;
using ops::slice_t;
using clock_type = std::chrono::steady_clock;

namespace {
struct EncGraph : Graph {
    using Graph::Graph;
    ggml_tensor *tok = nullptr, *enc_cnn = nullptr, *enc_att = nullptr, *new_cnn = nullptr;
    std::vector<ggml_tensor *> new_att;
};

struct DitGraph : Graph {
    using Graph::Graph;
    ggml_tensor *x = nullptr, *cnn_in = nullptr, *f = nullptr;
    std::vector<ggml_tensor *> new_cnn;  // per block [2h, 2]
};

// Resident tensors of one backend buffer (allocated once, never moved).
struct Resident {
    ggml_context *ctx = nullptr;
    ggml_backend_buffer_t buf = nullptr;
    explicit Resident(size_t n_tensors) {
        ggml_init_params ip{ggml_tensor_overhead() * n_tensors, nullptr, true};
        ctx = ggml_init(ip);
    }
    void alloc(ggml_backend_t backend, const char *what) {
        buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
        if (!buf) throw_runtime(std::string("t2w: token2mel: cannot allocate ") + what + " on " + ggml_backend_name(backend));
        ggml_backend_buffer_clear(buf, 0);
    }
    ~Resident() {
        if (buf) ggml_backend_buffer_free(buf);
        ggml_free(ctx);
    }
    Resident(const Resident &) = delete;
    Resident &operator=(const Resident &) = delete;
};

struct Lane {
    ggml_backend_t backend = nullptr;
};

// One window shape: its graph length in tokens (28, or a shorter first window) and
// whether it is the last window (3 zero look-ahead frames appended).
struct Variant {
    bool built = false;
    int n_tokens = 0, T1 = 0, Tm = 0, S1 = 0, S2 = 0;
    std::unique_ptr<Resident> res;          // pe tables, rest per branch
    ggml_tensor *pe_tok = nullptr, *pe_mel = nullptr;
    ggml_tensor *rest = nullptr;            // [240, Tm, B]: [mu ; v ; cond] (cond branch), zeros (uncond)
    std::unique_ptr<EncGraph> enc;
    std::vector<std::unique_ptr<DitGraph>> dit[2];  // [group][step]; one group (both branches) when batched
};

}  // namespace

struct Token2Mel::Impl {
    const T2wModel &m;
    std::shared_ptr<const Voice> voice;  // whose prompt state the caches below hold (set_voice)
    T2wConfig cfg;
    int N = 0, B = 1;
    // Batch-2 CFG (default with CFG): one DiT graph per Euler step computes both branches
    // (G = 1 group of B branches), else one graph per branch (G = B groups of 1), as lanes.
    bool batch = false;
    int G = 1, per_group = 1;
    bool cpu = true;  // token2mel runs on the CPU backend: CPU custom ops allowed
    bool fused_attn = false;  // the DiT's attention as attn::dit_attention (then vt / kc stay empty)
    std::vector<Lane> lanes;
    std::unique_ptr<Resident> konst;  // per step: adaLN vectors of every block, final-layer modulation
    std::vector<ggml_tensor *> ada, fin;  // [9h, depth], [2h]
    // Per (step, block): V^T of the DiT prompt attention cache, [R, dh, H, B] with R = the
    // longest window's Tm + L, the cache in the last L columns (blocks::dit_attention's
    // vt_cache): built once, so no DiT pass concatenates or transposes the cache.
    // Likewise K of the cache, [dh, R, H, B], the cache in the last L rows.
    std::unique_ptr<Resident> vt_res;
    std::vector<ggml_tensor *> vt, kc;
    ggml_tensor *spk = nullptr;
    std::vector<float> t_span;
    std::map<std::pair<int, bool>, Variant> vars;  // (graph tokens, last) -> shape
    int64_t graphs_built = 0;

    Impl(const T2wModel &model, const T2wConfig &c, int steps)
        : m(model), voice(model.voice()), cfg(c), N(steps), B(c.cfg ? 2 : 1) {
        cpu = ggml_backend_dev_type(m.device_t2m()) == GGML_BACKEND_DEVICE_TYPE_CPU;
        fused_attn = cpu && attn::fused_enabled();
        batch = B == 2 && cfg_batch_enabled(cfg.threads_t2m, cpu);
        G = batch ? 1 : B;
        per_group = batch ? B : 1;
        const int n_lanes = (G == 2 && cpu && cfg.threads_t2m >= 2) ? 2 : 1;
        for (int i = 0; i < n_lanes; ++i) {
            const int th = n_lanes == 1 ? cfg.threads_t2m : (i == 0 ? cfg.threads_t2m - cfg.threads_t2m / 2 : cfg.threads_t2m / 2);
            Lane ln;
            ln.backend = make_backend(m.device_t2m(), th);
            lanes.push_back(ln);
        }
        t_span = blocks::flow_time_span(N);
        build_constants();
        build_vt_cache();
    }
    ~Impl() {
        vars.clear();
        konst.reset();
        vt_res.reset();
        for (auto &ln : lanes) ggml_backend_free(ln.backend);
    }

    // adaLN vectors per (step, block) and the final-layer modulation per step: functions
    // of t_s only, so computed once (the same ops the per-window graph used to run).
    void build_constants() {
        const DitDims &D = m.dit_dims();
        const GgufWeights &wf = m.flow();
        const int h = D.hidden;
        konst = std::make_unique<Resident>(2 * N + 1);
        for (int s = 0; s < N; ++s) {
            ada.push_back(ggml_new_tensor_2d(konst->ctx, GGML_TYPE_F32, 9 * h, D.depth));
            fin.push_back(ggml_new_tensor_1d(konst->ctx, GGML_TYPE_F32, 2 * h));
        }
        spk = ggml_new_tensor_1d(konst->ctx, GGML_TYPE_F32, kSpkDim);
        konst->alloc(lanes[0].backend, "the DiT modulation constants");
        ggml_backend_tensor_set(spk, voice->spk.data(), 0, voice->spk.size() * sizeof(float));

        Graph g(static_cast<size_t>(N) * (D.depth * 8 + 32) + 64);
        std::vector<ggml_tensor *> tts;
        for (int s = 0; s < N; ++s) {
            ggml_tensor *tt = ggml_new_tensor_1d(g.ctx, GGML_TYPE_F32, 1);
            ggml_set_input(tt);
            tts.push_back(tt);
            ggml_tensor *c_silu = blocks::dit_time_condition(g.ctx, wf, tt, D.freq_dim, h);
            for (int b = 0; b < D.depth; ++b) {
                const std::string p = "estimator.blocks." + std::to_string(b) + ".";
                ggml_tensor *a = linear(g.ctx, c_silu, wf.mm(p + "adaLN_modulation.1.weight"), wf.get(p + "adaLN_modulation.1.bias"));
                ggml_tensor *dst = ggml_view_1d(g.ctx, ada[s], 9 * h, static_cast<size_t>(b) * ada[s]->nb[1]);
                ggml_build_forward_expand(g.gf, ggml_cpy(g.ctx, ggml_reshape_1d(g.ctx, a, 9 * h), dst));
            }
            ggml_tensor *fa = linear(g.ctx, c_silu, wf.mm("estimator.final_layer.adaLN_modulation.1.weight"),
                                     wf.get("estimator.final_layer.adaLN_modulation.1.bias"));
            ggml_build_forward_expand(g.gf, ggml_cpy(g.ctx, ggml_reshape_1d(g.ctx, fa, 2 * h), fin[s]));
        }
        g.allocate(lanes[0].backend, "DiT modulation");
        for (int s = 0; s < N; ++s) ggml_backend_tensor_set(tts[s], &t_span[s], 0, sizeof(float));
        if (compute_graph(lanes[0].backend, g.gf, "dit-modulation") != GGML_STATUS_SUCCESS) {
            throw_runtime("t2w: token2mel: DiT modulation graph compute failed on " + std::string(ggml_backend_name(lanes[0].backend)));
        }
    }

    void build_vt_cache() {
        if (fused_attn) return;  // the fused op reads the prompt cache in place
        const DitDims &D = m.dit_dims();
        const int L = m.prompt().att_len, dh = D.head_dim, Hd = D.n_heads;
        const int R = m.enc_dims().up_rate * kWindowTokens + L;
        vt_res = std::make_unique<Resident>(static_cast<size_t>(2) * N * D.depth);
        for (int i = 0; i < N * D.depth; ++i) {
            vt.push_back(ggml_new_tensor_4d(vt_res->ctx, GGML_TYPE_F32, R, dh, Hd, B));
            kc.push_back(ggml_new_tensor_4d(vt_res->ctx, GGML_TYPE_F32, dh, R, Hd, B));
        }
        vt_res->alloc(lanes[0].backend, "the DiT attention cache's K and V^T");
        fill_vt_cache();
    }

    // The voice's DiT attention cache into the last L columns of V^T and rows of K.
    void fill_vt_cache() {
        if (vt.empty()) return;
        const DitDims &D = m.dit_dims();
        const int L = m.prompt().att_len, dh = D.head_dim, Hd = D.n_heads;
        const int R = static_cast<int>(vt.front()->ne[0]);
        ggml_tensor *est_att = voice->est_att_cache();
        std::vector<float> kv(static_cast<size_t>(2) * dh * L * Hd), host(static_cast<size_t>(R) * dh * Hd, 0.0f),
            hostk(host.size(), 0.0f);
        for (int slot = 0; slot < N * D.depth; ++slot) {
            for (int b = 0; b < B; ++b) {
                const size_t off = static_cast<size_t>(slot) * Hd * est_att->nb[2] + static_cast<size_t>(b) * est_att->nb[3];
                ggml_backend_tensor_get(est_att, kv.data(), off, kv.size() * sizeof(float));
                blocks::fill_vt_cache(kv.data(), L, Hd, dh, host.data(), R);
                ggml_backend_tensor_set(vt[slot], host.data(), static_cast<size_t>(b) * vt[slot]->nb[3], host.size() * sizeof(float));
                blocks::fill_k_cache(kv.data(), L, Hd, dh, hostk.data(), R);
                ggml_backend_tensor_set(kc[slot], hostk.data(), static_cast<size_t>(b) * kc[slot]->nb[3], hostk.size() * sizeof(float));
            }
        }
    }

    Variant &variant(int n_tokens, bool last) {
        Variant &v = vars[{n_tokens, last}];
        if (!v.built) build_variant(v, n_tokens, last);
        return v;
    }

    void build_variant(Variant &v, int n_tokens, bool last) {
        const EncoderDims &E = m.enc_dims();
        const int L = m.prompt().att_len;
        const int T_E = n_tokens + (last ? E.lookahead : 0);
        v.n_tokens = n_tokens;
        v.T1 = T_E - E.lookahead;
        v.Tm = E.up_rate * v.T1;
        v.S1 = L / 2 + v.T1;
        v.S2 = L + v.Tm;
        v.res = std::make_unique<Resident>(4);
        v.pe_tok = ggml_new_tensor_2d(v.res->ctx, GGML_TYPE_F32, E.d_model, 2 * v.S1 - 1);
        v.pe_mel = ggml_new_tensor_2d(v.res->ctx, GGML_TYPE_F32, E.d_model, 2 * v.S2 - 1);
        v.rest = ggml_new_tensor_3d(v.res->ctx, GGML_TYPE_F32, 3 * kMelBins, v.Tm, B);
        v.res->alloc(lanes[0].backend, "the window-shape constants");  // zeroed: the uncond branch stays zero
        const std::vector<float> pt = dsp::rel_pos_table(E.d_model, v.S1), pm = dsp::rel_pos_table(E.d_model, v.S2);
        ggml_backend_tensor_set(v.pe_tok, pt.data(), 0, pt.size() * sizeof(float));
        ggml_backend_tensor_set(v.pe_mel, pm.data(), 0, pm.size() * sizeof(float));
        build_encoder(v, last);
        v.enc->allocate(lanes[0].backend, "encoder");
        for (int gi = 0; gi < G; ++gi) {
            for (int s = 0; s < N; ++s) {
                v.dit[gi].push_back(build_dit(v, s, gi * per_group, per_group));
                v.dit[gi].back()->allocate(lanes[lanes.size() == 2 ? gi : 0].backend, "DiT");
            }
        }
        if (std::getenv("RTF_T2W_DEBUG_MEM")) {
            size_t tot = v.enc->bytes();
            for (auto &d : v.dit) for (auto &g : d) tot += g->bytes();
            std::fprintf(stderr, "t2w: token2mel %d-token %s graphs: enc %.1f MiB, dit[0][0] %.1f MiB, total %.1f MiB\n", n_tokens,
                         last ? "last" : "non-last", v.enc->bytes() / 1048576.0, v.dit[0][0]->bytes() / 1048576.0, tot / 1048576.0);
        }
        graphs_built += 1 + static_cast<int64_t>(G) * N;
        v.built = true;
    }

    // Encoder (chunk mode) + encoder_proj + speaker -> rest[0] = [mu ; v ; 0], new caches.
    void build_encoder(Variant &v, bool last) {
        const EncoderDims &E = m.enc_dims();
        const GgufWeights &we = m.encoder();
        const GgufWeights &wx = m.flow_extra();
        const int d = E.d_model, H = E.n_heads, hd = E.head_dim;
        const int L = m.prompt().att_len, Lh = L / 2;
        const int la = E.lookahead;
        const int T1 = v.T1, Tm = v.Tm;
        const int NL = E.n_token_layers + E.n_mel_layers;
        const int cpl = E.conv2_k - 1, cup = E.up_k - 1;
        v.enc = std::make_unique<EncGraph>(static_cast<size_t>(NL) * 160 + 256);
        EncGraph &g = *v.enc;
        ggml_context *ctx = g.ctx;
        ggml_cgraph *gf = g.gf;

        g.tok = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, v.n_tokens);
        ggml_set_input(g.tok);
        g.enc_cnn = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, d, cpl + cup);
        ggml_set_input(g.enc_cnn);
        g.enc_att = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2 * hd, L, H, NL);
        ggml_set_input(g.enc_att);
        ggml_tensor *enc_cnn = g.enc_cnn, *enc_att = g.enc_att;

        auto conformer = [&](ggml_tensor *xx, ggml_tensor *cache, ggml_tensor *pe, const std::string &p, int Sc,
                             ggml_tensor **new_cache) {
            return blocks::conformer_layer(ctx, we, p, xx, cache, pe, Sc, H, hd, new_cache);
        };

        const float xscale = std::sqrt(static_cast<float>(d));
        ggml_tensor *e = ggml_get_rows(ctx, wx.get("input_embedding.weight"), g.tok);  // [d, n_tokens]
        e = linear(ctx, e, we.mm("embed.out.0.weight"), we.get("embed.out.0.bias"));
        e = layer_norm(ctx, e, we.get("embed.out.1.weight"), we.get("embed.out.1.bias"), 1e-5f);
        e = ggml_scale(ctx, e, xscale);
        if (last) e = ggml_pad(ctx, e, 0, la, 0, 0);  // 3 zero frames of look-ahead
        ggml_tensor *hpl = conv1d_ct(ctx, e, we.get("pre_lookahead_layer.conv1.weight"), we.get("pre_lookahead_layer.conv1.bias"));
        hpl = ggml_leaky_relu(ctx, hpl, 0.01f, false);  // [d, T1]
        ggml_tensor *cache_pl = slice_t(ctx, enc_cnn, 0, cpl);
        ggml_tensor *gg = conv1d_ct(ctx, ggml_concat(ctx, ggml_cont(ctx, cache_pl), hpl, 1), we.get("pre_lookahead_layer.conv2.weight"),
                                    we.get("pre_lookahead_layer.conv2.bias"));
        ggml_tensor *xe = ggml_add(ctx, gg, slice_t(ctx, e, 0, T1));
        ggml_tensor *new_pl = ggml_cont(ctx, slice_t(ctx, hpl, T1 - cpl, cpl));
        g.new_att.assign(NL, nullptr);
        for (int i = 0; i < E.n_token_layers; ++i) {
            ggml_tensor *c = ggml_view_3d(ctx, enc_att, 2 * hd, Lh, H, enc_att->nb[1], enc_att->nb[2], i * enc_att->nb[3]);
            xe = conformer(xe, c, v.pe_tok, "encoders." + std::to_string(i) + ".", Lh, &g.new_att[i]);
        }
        // upsample x2 (repeat) + causal conv with the cached left context
        ggml_tensor *rep = ggml_repeat(ctx, ggml_reshape_3d(ctx, xe, d, 1, T1), ggml_new_tensor_3d(ctx, GGML_TYPE_F32, d, E.up_rate, T1));
        rep = ggml_reshape_2d(ctx, rep, d, Tm);
        ggml_tensor *uin = ggml_concat(ctx, ggml_cont(ctx, slice_t(ctx, enc_cnn, cpl, cup)), rep, 1);  // [d, cup+Tm]
        ggml_tensor *u = conv1d_ct(ctx, uin, we.get("up_layer.conv.weight"), we.get("up_layer.conv.bias"));
        ggml_tensor *new_up = ggml_cont(ctx, slice_t(ctx, uin, Tm, cup));
        g.new_cnn = ggml_concat(ctx, new_pl, new_up, 1);  // [d, 6]
        ggml_set_output(g.new_cnn);
        ggml_build_forward_expand(gf, g.new_cnn);
        u = linear(ctx, u, we.mm("up_embed.out.0.weight"), we.get("up_embed.out.0.bias"));
        u = layer_norm(ctx, u, we.get("up_embed.out.1.weight"), we.get("up_embed.out.1.bias"), 1e-5f);
        u = ggml_scale(ctx, u, xscale);
        for (int j = 0; j < E.n_mel_layers; ++j) {
            const int li = E.n_token_layers + j;
            ggml_tensor *c = ggml_view_3d(ctx, enc_att, 2 * hd, L, H, enc_att->nb[1], enc_att->nb[2], li * enc_att->nb[3]);
            u = conformer(u, c, v.pe_mel, "up_encoders." + std::to_string(j) + ".", L, &g.new_att[li]);
        }
        for (auto *t : g.new_att) {
            ggml_set_output(t);
            ggml_build_forward_expand(gf, t);
        }
        u = layer_norm(ctx, u, we.get("after_norm.weight"), we.get("after_norm.bias"), 1e-5f);
        ggml_tensor *mu = linear(ctx, u, wx.mm("encoder_proj.weight"), wx.get("encoder_proj.bias"));  // [80, Tm]

        // v = A·(spk/‖spk‖) + a; ‖·‖ with eps 1e-12 inside the sqrt
        ggml_tensor *ss = ggml_sum(ctx, ggml_sqr(ctx, spk));
        ggml_tensor *inv = ggml_sqrt(ctx, ggml_scale_bias(ctx, ss, 1.0f, 1e-12f));
        ggml_tensor *spk_n = ggml_div(ctx, spk, ggml_repeat(ctx, inv, spk));
        ggml_tensor *vspk = linear(ctx, spk_n, wx.mm("spk_embed_affine_layer.weight"), wx.get("spk_embed_affine_layer.bias"));  // [80]
        ggml_tensor *spk_t = ggml_repeat(ctx, ggml_reshape_2d(ctx, vspk, kMelBins, 1), mu);  // [80, Tm]
        ggml_tensor *cond = ggml_scale(ctx, mu, 0.0f);                                       // zeros in streaming
        ggml_tensor *rest = ggml_concat(ctx, ggml_concat(ctx, mu, spk_t, 0), cond, 0);      // [240, Tm]
        ggml_build_forward_expand(gf, ggml_cpy(ctx, rest, ggml_view_2d(ctx, v.rest, 3 * kMelBins, Tm, v.rest->nb[1], 0)));
    }

    // One DiT estimator pass for Euler step s over the CFG branches b0..b0+nb-1 (0 =
    // conditional): nb = 2 is batch-2 CFG, both branches in one graph (the batch in ne[2]
    // of the activations, ne[3] of the attention), so every weight is read once per step.
    std::unique_ptr<DitGraph> build_dit(Variant &v, int s, int b0, int nb) {
        const DitDims &D = m.dit_dims();
        const GgufWeights &wf = m.flow();
        const int h = D.hidden, dh = D.head_dim, Hd = D.n_heads;
        const int L = m.prompt().att_len;
        const int Tm = v.Tm;
        auto g = std::make_unique<DitGraph>(static_cast<size_t>(D.depth) * 160 + 128);
        ggml_context *ctx = g->ctx;
        g->x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, kMelBins, Tm);
        ggml_set_input(g->x);
        g->cnn_in = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 2 * h, 2, D.depth, nb);
        ggml_set_input(g->cnn_in);
        ggml_tensor *est_att = voice->est_att_cache();
        ggml_tensor *xb = g->x;  // the branches share x (docs/minicpmo45.md §4.5)
        if (nb > 1) xb = ggml_repeat(ctx, ggml_reshape_3d(ctx, g->x, kMelBins, Tm, 1), ggml_new_tensor_3d(ctx, GGML_TYPE_F32, kMelBins, Tm, nb));
        ggml_tensor *rest = ggml_view_3d(ctx, v.rest, 3 * kMelBins, Tm, nb, v.rest->nb[1], v.rest->nb[2], static_cast<size_t>(b0) * v.rest->nb[2]);
        ggml_tensor *xc = ggml_concat(ctx, xb, rest, 0);  // [320, Tm, nb]
        ggml_tensor *hx = linear(ctx, xc, wf.mm("estimator.in_proj.weight"), wf.get("estimator.in_proj.bias"));  // [h, Tm, nb]
        for (int blk = 0; blk < D.depth; ++blk) {
            const std::string p = "estimator.blocks." + std::to_string(blk) + ".";
            const int slot = s * D.depth + blk;
            ggml_tensor *mod = ggml_view_1d(ctx, ada[s], 9 * h, static_cast<size_t>(blk) * ada[s]->nb[1]);
            const size_t off = static_cast<size_t>(slot) * Hd * est_att->nb[2] + static_cast<size_t>(b0) * est_att->nb[3];
            ggml_tensor *att = ggml_view_4d(ctx, est_att, 2 * dh, L, Hd, nb, est_att->nb[1], est_att->nb[2], est_att->nb[3], off);
            ggml_tensor *cnn = ggml_view_3d(ctx, g->cnn_in, 2 * h, 2, nb, g->cnn_in->nb[1], g->cnn_in->nb[3],
                                            static_cast<size_t>(blk) * g->cnn_in->nb[2]);
            ggml_tensor *vtc = nullptr, *kcc = nullptr;
            if (!fused_attn) {
                vtc = ggml_view_4d(ctx, vt[slot], vt[slot]->ne[0], dh, Hd, nb, vt[slot]->nb[1], vt[slot]->nb[2], vt[slot]->nb[3],
                                   static_cast<size_t>(b0) * vt[slot]->nb[3]);
                kcc = ggml_view_4d(ctx, kc[slot], dh, kc[slot]->ne[1], Hd, nb, kc[slot]->nb[1], kc[slot]->nb[2], kc[slot]->nb[3],
                                   static_cast<size_t>(b0) * kc[slot]->nb[3]);
            }
            ggml_tensor *nc = nullptr;
            hx = blocks::dit_block(ctx, wf, p, hx, mod, att, cnn, Hd, dh, &nc, blocks::kDitMaxKeys, nullptr, cpu, vtc, kcc,
                                   fused_attn);
            ggml_set_output(nc);
            ggml_build_forward_expand(g->gf, nc);
            g->new_cnn.push_back(nc);  // [2h, 2, nb]
        }
        ggml_tensor *fshift = ggml_view_1d(ctx, fin[s], h, 0), *fscale = ggml_view_1d(ctx, fin[s], h, h * sizeof(float));
        ggml_tensor *nf = ggml_norm(ctx, hx, 1e-6f);
        nf = ggml_add(ctx, ggml_add(ctx, nf, ggml_mul(ctx, nf, fscale)), fshift);
        g->f = linear(ctx, nf, wf.mm("estimator.final_layer.linear.weight"), wf.get("estimator.final_layer.linear.bias"));  // [80, Tm, nb]
        ggml_set_output(g->f);
        ggml_build_forward_expand(g->gf, g->f);
        return g;
    }
};

void Token2MelState::reset(const Voice &v) {
    conf_cnn = v.conf_cnn;
    conf_att = v.conf_att;
    est_cnn = v.est_cnn;
    rng.seed(42);
}

void Token2Mel::set_voice(std::shared_ptr<const Voice> v) {
    Impl &I = *impl_;
    if (!v) throw_usage("t2w: set_voice: no voice");
    if (v == I.voice) return;
    const PromptCacheInfo &a = v->info, &b = I.m.prompt();
    if (a.att_len != b.att_len || a.n_timesteps != b.n_timesteps) {
        throw_usage("t2w: voice " + v->name + " (" + v->path + ") has L=" + std::to_string(a.att_len) + ", " +
                    std::to_string(a.n_timesteps) + " steps; the model's graphs were built for L=" +
                    std::to_string(b.att_len) + ", " + std::to_string(b.n_timesteps));
    }
    I.voice = std::move(v);
    ggml_backend_tensor_set(I.spk, I.voice->spk.data(), 0, I.voice->spk.size() * sizeof(float));
    I.fill_vt_cache();
    // A DiT graph reads the cache tensor itself only when keys exceed the cap (T + L >
    // kDitMaxKeys; never at the model's L = 302): such graphs name the old voice's tensor.
    if (b.att_len + 2 * (kWindowTokens + 3) > blocks::kDitMaxKeys) I.vars.clear();
}

const std::shared_ptr<const Voice> &Token2Mel::voice() const { return impl_->voice; }

Token2Mel::Token2Mel(const T2wModel &model, const T2wConfig &cfg) {
    steps_ = cfg.flow_steps == 0 ? model.prompt().n_timesteps : cfg.flow_steps;
    if (steps_ != model.prompt().n_timesteps) {
        throw_setting("flow-steps", std::to_string(cfg.flow_steps) + " does not match the prompt cache (" +
                    model.prompt_file() + " has n_timesteps " + std::to_string(model.prompt().n_timesteps) +
                    "; its per-step DiT caches exist for exactly that many steps: build one for " +
                    std::to_string(cfg.flow_steps) + " with `rtf t2w-prompt --steps " + std::to_string(cfg.flow_steps) + "`)");
    }
    impl_ = std::make_unique<Impl>(model, cfg, steps_);
}

Token2Mel::~Token2Mel() = default;

int Token2Mel::lanes() const { return static_cast<int>(impl_->lanes.size()); }

bool Token2Mel::cfg_batched() const { return impl_->batch; }

bool Token2Mel::fused_attention() const { return impl_->fused_attn; }

bool cfg_batch_enabled(int threads_t2m, bool cpu) {
    const char *e = std::getenv("RTF_T2W_CFG_BATCH");
    if (e && std::strcmp(e, "1") == 0) return true;
    if (e && std::strcmp(e, "0") == 0) return false;
    return threads_t2m < 2 || !cpu;
}

int64_t Token2Mel::graphs_built() const { return impl_->graphs_built; }

void Token2Mel::check_window(int window, bool last) {
    const int lo = last ? 1 : kMinFirstWindow;
    if (window < lo || window > kWindowTokens) {
        throw_usage("t2w: a " + std::string(last ? "last" : "non-last") + " window's graph holds " + std::to_string(lo) + ".." +
                    std::to_string(kWindowTokens) + " tokens, got " + std::to_string(window));
    }
}

void Token2Mel::prepare(int window, bool last, bool compute) {
    check_window(window, last);
    impl_->variant(window, last);
    if (!compute) return;
    // One throw-away run on a copy of the prompt state: pays the first-touch costs (page
    // faults of the activation buffers, thread start-up) before the first real window.
    Token2MelState scratch;
    scratch.reset(*impl_->voice);
    PartTimes tm;
    run(std::vector<int32_t>(static_cast<size_t>(window), kSilenceToken), last, scratch, tm, window);
}

std::vector<float> Token2Mel::run(const std::vector<int32_t> &tokens_in, bool last, Token2MelState &st, PartTimes &tm,
                                  int window) {
    const auto t_start = clock_type::now();
    Impl &I = *impl_;
    const T2wModel &m = I.m;
    const EncoderDims &E = m.enc_dims();
    const DitDims &D = m.dit_dims();
    const int n_in = static_cast<int>(tokens_in.size());
    check_window(window, last);
    if (n_in < 1 || n_in > window) {
        throw_usage("t2w: a " + std::to_string(window) + "-token window holds 1.." + std::to_string(window) + " tokens, got " +
                    std::to_string(n_in));
    }
    for (int32_t t : tokens_in) {
        if (t < 0 || t >= E.vocab) {
            throw_usage("t2w: token id " + std::to_string(t) + " out of range (audio codes are 0.." +
                        std::to_string(E.vocab - 1) + ")");
        }
    }
    std::vector<int32_t> tokens = tokens_in;
    tokens.resize(static_cast<size_t>(window), kSilenceToken);
    Variant &v = I.variant(window, last);
    const int hd = E.head_dim, H = E.n_heads;
    const int L = m.prompt().att_len;
    const int Tm = v.Tm;
    const int NL = E.n_token_layers + E.n_mel_layers;
    const int N = I.N, B = I.B, h = D.hidden;
    tm = PartTimes{};

    std::vector<float> x(static_cast<size_t>(kMelBins) * Tm);
    {
        std::normal_distribution<float> dist(0.0f, 1.0f);  // fresh per chunk, shared generator (reference)
        const float temp = I.voice->info.temperature;
        for (auto &val : x) val = temp * dist(st.rng);
    }

    // ---------------- encoder (lane 0)
    Lane &ln0 = I.lanes[0];
    EncGraph &eg = *v.enc;
    upload(eg.tok, tokens.data(), 0, tokens.size() * sizeof(int32_t), tm);
    upload(eg.enc_cnn, st.conf_cnn.data(), 0, st.conf_cnn.size() * sizeof(float), tm);
    upload(eg.enc_att, st.conf_att.data(), 0, st.conf_att.size() * sizeof(float), tm);
    auto t0 = clock_type::now();
    if (compute_graph(ln0.backend, eg.gf, "encoder") != GGML_STATUS_SUCCESS) {
        throw_runtime("t2w: token2mel encoder graph compute failed on " + std::string(ggml_backend_name(ln0.backend)));
    }
    tm.compute_ms += ms_since(t0);
    download(eg.new_cnn, st.conf_cnn.data(), 0, st.conf_cnn.size() * sizeof(float), tm);
    // conformer attention caches (docs/minicpmo45.md §4.7): token-rate layers write [c ; c],
    // mel-rate layers [old ; new]; the runner keeps the time slice [Δ, Δ+L) of each.
    std::vector<float> buf;
    const size_t row = 2 * hd;
    for (int li = 0; li < NL; ++li) {
        const bool tok_layer = li < E.n_token_layers;
        const int S = tok_layer ? v.S1 : v.S2;
        buf.resize(row * S * H);
        download(eg.new_att[li], buf.data(), 0, buf.size() * sizeof(float), tm);
        for (int hh = 0; hh < H; ++hh) {
            for (int tau = 0; tau < L; ++tau) {
                const int src = tok_layer ? (Tm + tau) % S : Tm + tau;
                const float *from = buf.data() + row * (src + static_cast<size_t>(S) * hh);
                float *to = st.conf_att.data() + row * (tau + static_cast<size_t>(L) * (hh + static_cast<size_t>(H) * li));
                std::copy(from, from + row, to);
            }
        }
    }

    // ---------------- flow matching: per Euler step, one DiT pass over both CFG branches
    // (batch-2 CFG), or one per branch on its lane
    const size_t slot_sz = static_cast<size_t>(2 * h) * 2;
    const size_t n_slots = static_cast<size_t>(D.depth) * N;
    const size_t blk_bytes = slot_sz * sizeof(float);
    std::vector<float> f(x.size() * B);  // branch b at f + b·|x|
    // Each Euler step's copies, per group: two groups may run at once on two lanes, so each
    // counts its own and the window's figures sum them after the loop.
    PartTimes copies[2];
    const bool two_lanes = I.G == 2 && I.lanes.size() == 2;
    auto pass = [&](int s, int gi, Lane &ln) {
        DitGraph &g = *v.dit[gi][s];
        const int b0 = gi * I.per_group, nb = I.per_group;
        PartTimes &c = copies[gi];
        upload(g.x, x.data(), 0, x.size() * sizeof(float), c);
        for (int j = 0; j < nb; ++j) {
            const float *cnn = st.est_cnn.data() + ((b0 + j) * n_slots + static_cast<size_t>(s) * D.depth) * slot_sz;
            upload(g.cnn_in, cnn, j * D.depth * blk_bytes, D.depth * blk_bytes, c);
        }
        if (compute_graph(ln.backend, g.gf, "dit") != GGML_STATUS_SUCCESS) {
            throw_runtime("t2w: token2mel DiT graph compute failed on " + std::string(ggml_backend_name(ln.backend)));
        }
        download(g.f, f.data() + b0 * x.size(), 0, nb * x.size() * sizeof(float), c);
        for (int blk = 0; blk < D.depth; ++blk) {
            for (int j = 0; j < nb; ++j) {
                float *cnn = st.est_cnn.data() + ((b0 + j) * n_slots + static_cast<size_t>(s) * D.depth + blk) * slot_sz;
                download(g.new_cnn[blk], cnn, j * blk_bytes, blk_bytes, c);
            }
        }
    };
    t0 = clock_type::now();
    for (int s = 0; s < N; ++s) {
        if (two_lanes) {
            std::exception_ptr err;
            std::thread th([&] {
                try {
                    pass(s, 1, I.lanes[1]);
                } catch (...) {
                    err = std::current_exception();
                }
            });
            try {
                pass(s, 0, ln0);
            } catch (...) {
                th.join();
                throw;
            }
            th.join();
            if (err) std::rethrow_exception(err);
        } else {
            for (int gi = 0; gi < I.G; ++gi) pass(s, gi, ln0);
        }
        // x += dt·(1.7·f_cond − 0.7·f_uncond), the same float ops the graph used to run
        const float dt = I.t_span[s + 1] - I.t_span[s];
        blocks::euler_cfg_step(x.data(), f.data(), B == 2 ? f.data() + x.size() : nullptr, x.size(), dt, kCfgRate);
    }
    // The steps' wall time less the copies on its path is compute (group 1's copies on its
    // own lane overlap group 0's work); every group's copies count as copies.
    double copy_path_ms = copies[0].upload_ms + copies[0].download_ms;
    if (!two_lanes) copy_path_ms += copies[1].upload_ms + copies[1].download_ms;
    tm.compute_ms += ms_since(t0) - copy_path_ms;
    for (const PartTimes &c : copies) {
        tm.upload_ms += c.upload_ms;
        tm.download_ms += c.download_ms;
        tm.upload_bytes += c.upload_bytes;
        tm.download_bytes += c.download_bytes;
    }

    // [80][Tm] channel-fastest -> [80][T] time-fastest, cropped to 2·n frames
    const int T = std::min(Tm, E.up_rate * n_in);
    std::vector<float> mel(static_cast<size_t>(kMelBins) * T);
    for (int t = 0; t < T; ++t) {
        for (int c = 0; c < kMelBins; ++c) mel[static_cast<size_t>(c) * T + t] = x[static_cast<size_t>(t) * kMelBins + c];
    }
    tm.total_ms = ms_since(t_start);
    return mel;
}

}  // namespace rtf::t2w
