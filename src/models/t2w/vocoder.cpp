#include "models/t2w/vocoder.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "core/error.h"
#include "models/t2w/onednn-conv.h"
#include "models/t2w/packed-conv.h"
#include "models/t2w/packed-gemm.h"
#include "models/t2w/t2w-backend.h"
#include "models/t2w/t2w-dsp.h"
#include "models/t2w/t2w-graph.h"
#include "models/t2w/t2w-op-profile.h"
#include "models/t2w/t2w-ops.h"

namespace rtf::t2w {

using clock_type = std::chrono::steady_clock;
namespace {
constexpr size_t kMaxNodes = 8192;  // the first length's decoder graph; later ones are sized by it
const int kDilations[3] = {1, 3, 5};

// A conv1d of the "tc" layout (+ res when given): oneDNN's bf16 convolution on a kernel
// registered with it at load (onednn-conv.h, a bf16 vocoder), the direct convolution on a
// kernel packed for it (packed-conv.h), both with the residual add fused; else im2col +
// product (ops::conv1d_tc).
ggml_tensor *conv1d_tc(ggml_context *ctx, ggml_tensor *x, ggml_tensor *w, ggml_tensor *b, int stride, int pad, int dilation,
                       ggml_tensor *res = nullptr) {
    if (onednn::is_conv_registered(w)) return onednn::conv1d(ctx, x, w, b, stride, pad, dilation, res);
    if (conv::is_packed(w)) return conv::conv1d(ctx, x, w, b, stride, pad, dilation, res);
    ggml_tensor *y = ops::conv1d_tc(ctx, x, w, b, stride, pad, dilation);
    return res ? ggml_add(ctx, y, res) : y;
}
}  // namespace

// The two graphs of one input length. Their activations live in the Vocoder's two shared
// allocators (one length runs at a time), so a length costs only its graph metadata.
struct Vocoder::Shape {
    explicit Shape(size_t dec_nodes) : dec(dec_nodes) {}
    Graph f0g{256}, dec;
    ggml_tensor *f0_in = nullptr, *f0_out = nullptr;
    ggml_tensor *in = nullptr, *sin_ = nullptr, *re = nullptr, *im = nullptr;
    int64_t F = 0;
};

namespace {
ggml_tensor *resblock(ggml_context *ctx, const GgufWeights &w, const std::string &p, ggml_tensor *x, bool fused) {
    auto act = [&](ggml_tensor *z, ggml_tensor *alpha) { return fused ? ops::snake_fused(ctx, z, alpha) : ops::snake(ctx, z, alpha); };
    for (int m = 0; m < 3; ++m) {
        const std::string ms = std::to_string(m);
        ggml_tensor *w1 = w.mm(p + ".convs1." + ms + ".weight");
        const int k = static_cast<int>(w1->ne[0]);
        const int dil = kDilations[m];
        ggml_tensor *a = act(x, w.get(p + ".activations1." + ms + ".alpha"));
        a = conv1d_tc(ctx, a, w1, w.get(p + ".convs1." + ms + ".bias"), 1, (k * dil - dil) / 2, dil);
        a = act(a, w.get(p + ".activations2." + ms + ".alpha"));
        x = conv1d_tc(ctx, a, w.mm(p + ".convs2." + ms + ".weight"), w.get(p + ".convs2." + ms + ".bias"), 1, (k - 1) / 2, 1, x);
    }
    return x;
}
}  // namespace

Vocoder::Vocoder(const T2wModel &model, const T2wConfig &cfg) : m_(model) {
    cpu_ = ggml_backend_dev_type(m_.device_voc()) == GGML_BACKEND_DEVICE_TYPE_CPU;
    backend_ = make_backend(m_.device_voc(), cfg.threads_voc);
    f0_alloc_ = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend_));
    dec_alloc_ = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend_));
    ggml_tensor *lw = m_.hift().get("m_source.l_linear.weight");
    harm_w_.resize(static_cast<size_t>(lw->ne[0]));
    ggml_backend_tensor_get(lw, harm_w_.data(), 0, harm_w_.size() * sizeof(float));
    ggml_backend_tensor_get(m_.hift().get("m_source.l_linear.bias"), &harm_b_, 0, sizeof(float));
    if (cpu_) {
        // transposed-conv kernels packed once for the GEMM formulation
        const HiftDims &hd = m_.hift_dims();
        // the direct kernels are on when the model packed conv kernels for them (at load:
        // AVX-512F, RTF_T2W_PACKED and RTF_T2W_CONV not "0")
        bool direct = false;
        for (const auto &kv : m_.hift().tensors)
            direct = direct || conv::is_packed(kv.second) || onednn::is_conv_registered(kv.second);
        ggml_init_params ip{ggml_tensor_overhead() * static_cast<size_t>(hd.n_stages + 1), nullptr, true};
        packed_ctx_ = ggml_init(ip);
        std::vector<std::vector<float>> packed;
        for (int s = 0; s < hd.n_stages; ++s) {
            ggml_tensor *w = m_.hift().get("ups." + std::to_string(s) + ".weight");  // [K, Cout, Cin]
            const int K = static_cast<int>(w->ne[0]), Cout = static_cast<int>(w->ne[1]), Cin = static_cast<int>(w->ne[2]);
            std::vector<float> host(static_cast<size_t>(ggml_nelements(w)));
            ggml_backend_tensor_get(w, host.data(), 0, host.size() * sizeof(float));
            packed.push_back(ops::pack_transposed_kernel(host, K, Cout, Cin, hd.up_rates[s]));
            const int64_t rows = static_cast<int64_t>(packed.back().size()) / Cin;
            ups_packed_.push_back(ggml_new_tensor_2d(packed_ctx_, GGML_TYPE_F32, Cin, rows));
            // With the direct kernels on (packed-conv.h), the product runs as the packed GEMM
            // (ggml's F32 mul_mat reached ~1/4 of its rate on these shapes): same size.
            if (direct && rows % gemm::kPanel == 0) {
                std::vector<float> p(packed.back().size());
                gemm::pack(packed.back().data(), rows, Cin, p.data());
                packed.back().swap(p);
                gemm::register_packed(ups_packed_.back());
            }
        }
        packed_buf_ = ggml_backend_alloc_ctx_tensors(packed_ctx_, backend_);
        if (!packed_buf_) throw_runtime("t2w: vocoder: cannot allocate the packed transposed-conv kernels");
        for (size_t s = 0; s < packed.size(); ++s) {
            ggml_backend_tensor_set(ups_packed_[s], packed[s].data(), 0, packed[s].size() * sizeof(float));
        }
    }
}

Vocoder::~Vocoder() {
    shapes_.clear();
    for (const ggml_tensor *t : ups_packed_) gemm::unregister_packed(t);
    if (f0_alloc_) ggml_gallocr_free(f0_alloc_);
    if (dec_alloc_) ggml_gallocr_free(dec_alloc_);
    if (packed_buf_) ggml_backend_buffer_free(packed_buf_);
    if (packed_ctx_) ggml_free(packed_ctx_);
    if (backend_) ggml_backend_free(backend_);
}

void Vocoder::prepare(const std::vector<int> &lengths) {
    if (lengths.empty()) return;
    // The longest first: the shared allocators reserve its (largest) buffers once, and the
    // shorter lengths then fit without a reallocation.
    const int longest = *std::max_element(lengths.begin(), lengths.end());
    Shape &big = shape(longest);
    if (!ggml_gallocr_reserve(f0_alloc_, big.f0g.gf) || !ggml_gallocr_reserve(dec_alloc_, big.dec.gf)) {
        throw_runtime("t2w: vocoder: cannot allocate the graphs of " + std::to_string(longest) + " mel frames");
    }
    bound_f0_ = bound_dec_ = nullptr;
    for (int T : lengths) shape(T);
}

Vocoder::Shape &Vocoder::shape(int T) {
    auto it = shapes_.find(T);
    if (it != shapes_.end()) return *it->second;
    if (T < 2) throw_runtime("t2w: vocoder needs at least 2 mel frames, got " + std::to_string(T));
    const GgufWeights &w = m_.hift();
    const HiftDims &hd = m_.hift_dims();
    auto sh = std::make_unique<Shape>(dec_nodes_);
    {  // graph 1: F0 predictor
        ggml_context *ctx = sh->f0g.ctx;
        sh->f0_in = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, T, kMelBins);
        ggml_set_input(sh->f0_in);
        ggml_tensor *x = sh->f0_in;
        for (int i = 0; i < hd.f0_layers; ++i) {
            const std::string p = "f0_predictor.condnet." + std::to_string(2 * i);
            x = ggml_elu(ctx, conv1d_tc(ctx, x, w.mm(p + ".weight"), w.get(p + ".bias"), 1, 1, 1));
        }
        x = ggml_cont(ctx, ggml_transpose(ctx, x));                        // [C, T]
        x = ggml_mul_mat(ctx, w.get("f0_predictor.classifier.weight"), x);  // [1, T]
        x = ggml_abs(ctx, ggml_add(ctx, x, w.get("f0_predictor.classifier.bias")));
        ggml_set_output(x);
        ggml_build_forward_expand(sh->f0g.gf, x);
        sh->f0_out = x;
    }
    {  // graph 2: decoder
        ggml_context *ctx = sh->dec.ctx;
        const int64_t F = static_cast<int64_t>(T) * kSamplesPerFrame / dsp::kHop + 1;
        sh->F = F;
        sh->in = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, T, kMelBins);
        ggml_set_input(sh->in);
        sh->sin_ = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, F, 2 * dsp::kBins);
        ggml_set_input(sh->sin_);
        ggml_tensor *x = conv1d_tc(ctx, sh->in, w.mm("conv_pre.weight"), w.get("conv_pre.bias"), 1, hd.conv_pre_k / 2, 1);
        for (int s = 0; s < hd.n_stages; ++s) {
            const std::string ss = std::to_string(s);
            x = ggml_leaky_relu(ctx, x, 0.1f, false);
            const int k = hd.up_kernels[s], r = hd.up_rates[s];
            ggml_tensor *uw = w.get("ups." + ss + ".weight"), *ub = w.get("ups." + ss + ".bias");
            x = cpu_ ? ops::conv_transpose1d_tc_packed(ctx, x, ups_packed_[s], k, static_cast<int>(uw->ne[1]), r, (k - r) / 2, ub)
                     : ops::conv_transpose1d_tc(ctx, x, uw, ub, r, (k - r) / 2);
            if (s == hd.n_stages - 1) x = ggml_pad_reflect_1d(ctx, x, 1, 0);
            int stride = 1;
            for (int j = s + 1; j < hd.n_stages; ++j) stride *= hd.up_rates[j];
            ggml_tensor *si = conv1d_tc(ctx, sh->sin_, w.mm("source_downs." + ss + ".weight"), w.get("source_downs." + ss + ".bias"),
                                        stride, s < hd.n_stages - 1 ? stride / 2 : 0, 1);
            si = resblock(ctx, w, "source_resblocks." + ss, si, cpu_);
            x = ggml_add(ctx, x, si);
            ggml_tensor *acc = nullptr;
            for (int j = 0; j < 3; ++j) {
                ggml_tensor *y = resblock(ctx, w, "resblocks." + std::to_string(3 * s + j), x, cpu_);
                acc = acc ? ggml_add(ctx, acc, y) : y;
            }
            x = ggml_scale(ctx, acc, 1.0f / 3.0f);
        }
        x = ggml_leaky_relu(ctx, x, 0.01f, false);
        ggml_tensor *y = conv1d_tc(ctx, x, w.mm("conv_post.weight"), w.get("conv_post.bias"), 1, hd.conv_post_k / 2, 1);  // [F, 18]
        if (y->ne[0] != F) {
            throw_runtime("t2w: vocoder length mismatch: decoder " + std::to_string(y->ne[0]) + " frames vs source STFT " +
                          std::to_string(F));
        }
        ggml_tensor *mag = ggml_clamp(ctx, ggml_exp(ctx, ggml_view_2d(ctx, y, F, dsp::kBins, y->nb[1], 0)), -1e30f, 1e2f);
        ggml_tensor *ph = ggml_sin(ctx, ggml_cont(ctx, ggml_view_2d(ctx, y, F, dsp::kBins, y->nb[1], dsp::kBins * y->nb[1])));
        sh->re = ggml_mul(ctx, mag, ggml_cos(ctx, ph));
        sh->im = ggml_mul(ctx, mag, ggml_sin(ctx, ph));
        ggml_set_output(sh->re);
        ggml_set_output(sh->im);
        ggml_build_forward_expand(sh->dec.gf, sh->re);
        ggml_build_forward_expand(sh->dec.gf, sh->im);
    }
    // Every length has the same topology: size the next ones' metadata by this one's
    // tensor count (a few hundred KiB each instead of 8192 tensors' worth, ~3.5 MiB).
    dec_nodes_ = ggml_used_mem(sh->dec.ctx) / ggml_tensor_overhead() + 64;
    ++graphs_built_;
    return *shapes_.emplace(T, std::move(sh)).first->second;
}

std::vector<float> Vocoder::f0(const std::vector<float> &mel, int T, PartTimes &tm) {
    Shape &sh = shape(T);
    if (bound_f0_ != &sh) {  // another length used the shared buffer since: re-place (no allocation)
        sh.f0g.bind(f0_alloc_, "vocoder f0");
        bound_f0_ = &sh;
    }
    upload(sh.f0_in, mel.data(), 0, mel.size() * sizeof(float), tm);
    const auto t0 = clock_type::now();
    if (compute_graph(backend_, sh.f0g.gf, "vocoder-f0") != GGML_STATUS_SUCCESS) throw_runtime("t2w: vocoder f0 graph compute failed");
    tm.compute_ms += ms_since(t0);
    std::vector<float> f(static_cast<size_t>(T));
    download(sh.f0_out, f.data(), 0, f.size() * sizeof(float), tm);
    return f;
}

void Vocoder::run(const std::vector<float> &mel, int T, const std::vector<float> &source_cache,
                  std::vector<float> &wave, std::vector<float> &source, PartTimes &tm) {
    const auto t_start = clock_type::now();
    tm = PartTimes{};
    if (T < 2) throw_runtime("t2w: vocoder needs at least 2 mel frames, got " + std::to_string(T));
    std::vector<float> f0v = f0(mel, T, tm);

    // harmonic source + cache prefix + STFT (host)
    auto t0 = clock_type::now();
    source = dsp::harmonic_source(f0v, harm_w_, harm_b_, kSamplesPerFrame, kSampleRate);
    const size_t tc = std::min(source_cache.size(), source.size());
    std::copy(source_cache.begin(), source_cache.begin() + static_cast<std::ptrdiff_t>(tc), source.begin());
    std::vector<float> spec = dsp::stft16(source);
    const int64_t F = static_cast<int64_t>(source.size()) / dsp::kHop + 1;
    tm.compute_ms += ms_since(t0);

    Shape &sh = shape(T);
    if (bound_dec_ != &sh) {
        sh.dec.bind(dec_alloc_, "vocoder decoder");
        bound_dec_ = &sh;
    }
    if (sh.F != F) throw_runtime("t2w: vocoder: source STFT has " + std::to_string(F) + " frames, expected " + std::to_string(sh.F));
    upload(sh.in, mel.data(), 0, mel.size() * sizeof(float), tm);
    upload(sh.sin_, spec.data(), 0, spec.size() * sizeof(float), tm);
    t0 = clock_type::now();
    if (compute_graph(backend_, sh.dec.gf, "vocoder") != GGML_STATUS_SUCCESS) throw_runtime("t2w: vocoder decoder graph compute failed");
    tm.compute_ms += ms_since(t0);
    std::vector<float> vre(static_cast<size_t>(F * dsp::kBins)), vim(vre.size());
    download(sh.re, vre.data(), 0, vre.size() * sizeof(float), tm);
    download(sh.im, vim.data(), 0, vim.size() * sizeof(float), tm);
    t0 = clock_type::now();
    wave = dsp::istft16(vre.data(), vim.data(), F, 0.99f);
    tm.compute_ms += ms_since(t0);
    tm.total_ms = ms_since(t_start);
}

}  // namespace rtf::t2w
