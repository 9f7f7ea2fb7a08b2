#include "models/lm/condition.h"

#include <cmath>

#include <algorithm>
#include <cstring>

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include "core/error.h"
#include "models/lm/tts-weights.h"

namespace rtf::lm {

bool is_valid_text_token(int32_t id) {
    switch (id) {
        case 151667: case 151668: case 151704: case 151705: case 151706:
        case 151717: case 151718: case 151721: case 271:
            return false;
        default:
            return id >= 0 && id < 150000;
    }
}

void filter_valid(std::span<const int32_t> ids, std::span<const float> hidden, int n_llm,
                  std::vector<int32_t> &out_ids, std::vector<float> &out_hidden) {
    out_ids.clear();
    out_hidden.clear();
    const bool has_h = !hidden.empty();
    if (has_h && hidden.size() != ids.size() * static_cast<size_t>(n_llm))
        throw_usage("LLM step carries " + std::to_string(hidden.size()) + " hidden values for " + std::to_string(ids.size()) +
                    " tokens; expected tokens x " + std::to_string(n_llm));
    for (size_t i = 0; i < ids.size(); ++i) {
        if (!is_valid_text_token(ids[i])) continue;
        out_ids.push_back(ids[i]);
        if (has_h) out_hidden.insert(out_hidden.end(), hidden.begin() + static_cast<std::ptrdiff_t>(i * static_cast<size_t>(n_llm)),
                                     hidden.begin() + static_cast<std::ptrdiff_t>((i + 1) * static_cast<size_t>(n_llm)));
    }
}

struct ConditionBuilder::Impl {
    const TtsWeights &w;
    ggml_backend_t cpu = nullptr;
    ggml_context *ctx_w = nullptr;
    ggml_backend_buffer_t buf_w = nullptr;
    ggml_gallocr_t galloc = nullptr;
    ggml_tensor *w1 = nullptr, *b1 = nullptr, *w2 = nullptr, *b2 = nullptr;
    std::vector<char> meta;  // graph context memory, reused

    ConditionNorm norm;
    Impl(const TtsWeights &wt, ConditionNorm nm) : w(wt), norm(nm) {}
    ~Impl() {
        if (galloc) ggml_gallocr_free(galloc);
        if (buf_w) ggml_backend_buffer_free(buf_w);
        if (ctx_w) ggml_free(ctx_w);
        if (cpu) ggml_backend_free(cpu);
    }
};

ConditionBuilder::ConditionBuilder(const TtsWeights &w, int n_threads, ConditionNorm norm)
    : p_(std::make_unique<Impl>(w, norm)) {
    const auto &d = w.dims();
    p_->cpu = ggml_backend_cpu_init();
    if (!p_->cpu) throw_setup("tts: cannot initialise the ggml CPU backend for the condition projector");
    ggml_backend_cpu_set_n_threads(p_->cpu, std::max(1, n_threads));
    p_->ctx_w = ggml_init({4 * ggml_tensor_overhead(), nullptr, /*no_alloc=*/true});
    p_->w1 = ggml_new_tensor_2d(p_->ctx_w, GGML_TYPE_F32, d.n_llm, d.n_proj);
    p_->b1 = ggml_new_tensor_1d(p_->ctx_w, GGML_TYPE_F32, d.n_proj);
    p_->w2 = ggml_new_tensor_2d(p_->ctx_w, GGML_TYPE_F32, d.n_proj, d.n_embd);
    p_->b2 = ggml_new_tensor_1d(p_->ctx_w, GGML_TYPE_F32, d.n_embd);
    p_->buf_w = ggml_backend_alloc_ctx_tensors(p_->ctx_w, p_->cpu);
    if (!p_->buf_w) throw_setup("tts: cannot allocate the condition projector weights");
    ggml_backend_tensor_set(p_->w1, w.w1(), 0, ggml_nbytes(p_->w1));
    ggml_backend_tensor_set(p_->b1, w.b1(), 0, ggml_nbytes(p_->b1));
    ggml_backend_tensor_set(p_->w2, w.w2(), 0, ggml_nbytes(p_->w2));
    ggml_backend_tensor_set(p_->b2, w.b2(), 0, ggml_nbytes(p_->b2));
    p_->galloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(p_->cpu));
    p_->meta.resize(32 * ggml_tensor_overhead() + ggml_graph_overhead());
}

ConditionBuilder::~ConditionBuilder() = default;

void ConditionBuilder::rows(std::span<const int32_t> ids, std::span<const float> hidden, std::vector<float> &out) {
    const auto &d = p_->w.dims();
    const size_t n = ids.size();
    out.assign(n * static_cast<size_t>(d.n_embd), 0.0f);
    for (size_t i = 0; i < n; ++i) p_->w.text_row(ids[i], out.data() + i * static_cast<size_t>(d.n_embd));
    if (hidden.empty() || n == 0) return;
    if (hidden.size() != n * static_cast<size_t>(d.n_llm))
        throw_usage("condition: " + std::to_string(hidden.size()) + " hidden values for " + std::to_string(n) +
                    " tokens; the projector takes " + std::to_string(d.n_llm) + " per token");

    ggml_context *ctx = ggml_init({p_->meta.size(), p_->meta.data(), /*no_alloc=*/true});
    ggml_tensor *h = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, d.n_llm, static_cast<int64_t>(n));
    ggml_set_input(h);
    ggml_tensor *eps = nullptr;
    ggml_tensor *x = ggml_add(ctx, ggml_mul_mat(ctx, p_->w1, h), p_->b1);
    x = ggml_relu(ctx, x);
    x = ggml_add(ctx, ggml_mul_mat(ctx, p_->w2, x), p_->b2);
    const bool host_norm = p_->norm == ConditionNorm::HostSequential;
    ggml_tensor *q = x;
    if (!host_norm) {
        eps = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, 1);
        ggml_set_input(eps);
        ggml_tensor *ss = ggml_sum_rows(ctx, ggml_sqr(ctx, x));
        ggml_tensor *den = ggml_sqrt(ctx, ggml_add(ctx, ss, ggml_repeat(ctx, ggml_reshape_2d(ctx, eps, 1, 1), ss)));
        q = ggml_cont(ctx, ggml_div(ctx, x, ggml_repeat(ctx, den, x)));
    }
    ggml_set_output(q);
    ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, q);
    if (!ggml_gallocr_alloc_graph(p_->galloc, gf)) {
        ggml_free(ctx);
        throw_runtime("tts: cannot allocate the condition graph for " + std::to_string(n) + " tokens");
    }
    const float e = 1e-8f;
    ggml_backend_tensor_set(h, hidden.data(), 0, ggml_nbytes(h));
    if (eps) ggml_backend_tensor_set(eps, &e, 0, sizeof e);
    if (ggml_backend_graph_compute(p_->cpu, gf) != GGML_STATUS_SUCCESS) {
        ggml_free(ctx);
        throw_runtime("tts: the condition graph failed to compute");
    }
    std::vector<float> qv(n * static_cast<size_t>(d.n_embd));
    ggml_backend_tensor_get(q, qv.data(), 0, qv.size() * sizeof(float));
    ggml_free(ctx);
    if (host_norm) {
        // The duplex reference's order exactly (this file is compiled without FMA contraction).
        const size_t de = static_cast<size_t>(d.n_embd);
        for (size_t t = 0; t < n; ++t) {
            float *v = qv.data() + t * de;
            float ss = 0.0f;
            for (size_t i = 0; i < de; ++i) {
                const float sq = v[i] * v[i];
                ss = ss + sq;
            }
            const float norm = std::sqrt(ss + e);
            const float inv = 1.0f / norm;
            for (size_t i = 0; i < de; ++i) v[i] = v[i] * inv;
        }
    }
    for (size_t i = 0; i < qv.size(); ++i) out[i] = out[i] + qv[i];
}

}  // namespace rtf::lm
