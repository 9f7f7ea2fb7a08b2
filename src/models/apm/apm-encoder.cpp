#include "models/apm/apm-encoder.h"

#include <algorithm>

#include <chrono>
#include <cstring>
#include <string>

#include <ggml-cpu.h>

#include "core/error.h"
#include "models/apm/apm-blocks.h"

namespace rtf::apm {

namespace {

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

constexpr size_t kMaxNodes = 8192;  // ~40 nodes per block; 24 blocks need ~1000

}  // namespace

void ApmConfig::validate() const {
    if (n_threads < 1 || n_threads > 512)
        throw_usage("apm threads: " + std::to_string(n_threads) + " is out of range (1..512)");
    const auto &wt = apm_weight_types();
    if (std::find(wt.begin(), wt.end(), weight_type) == wt.end())
        throw_setting("apm-weight-type", "'" + weight_type + "': use file, f16, bf16, q8_0 or q4_0");
    if (kv_type != GGML_TYPE_F16 && kv_type != GGML_TYPE_F32)
        throw_usage(std::string("apm KV cache type: ") + ggml_type_name(kv_type) + " is not supported (f16, f32)");
}

ApmEncoder::ApmEncoder(const ApmModel &model, const ApmConfig &cfg)
    : model_(model), cfg_(cfg), mel_(model.filters(), model.hparams().n_mel) {
    cfg_.validate();
    const auto &hp = model_.hparams();
    backend_ = ggml_backend_cpu_init();
    if (!backend_) throw_setup("apm: cannot initialise ggml's CPU backend");
    ggml_backend_cpu_set_n_threads(backend_, cfg_.n_threads);

    ggml_init_params ip{};
    ip.mem_size = static_cast<size_t>(2 * hp.n_layer + 1) * ggml_tensor_overhead();
    ip.no_alloc = true;
    cache_ctx_ = ggml_init(ip);
    for (int64_t i = 0; i < hp.n_layer; ++i) {
        LayerCache c;
        c.k = ggml_new_tensor_2d(cache_ctx_, cfg_.kv_type, hp.d, hp.n_ctx);
        c.v = ggml_new_tensor_2d(cache_ctx_, cfg_.kv_type, hp.n_ctx, hp.d);
        caches_.push_back(c);
    }
    cache_buf_ = ggml_backend_alloc_ctx_tensors(cache_ctx_, backend_);
    if (!cache_buf_) throw_setup("apm: cannot allocate the KV cache (" + std::to_string(hp.n_layer) + " layers x " +
                                 std::to_string(hp.n_ctx) + " tokens)");
    ggml_backend_buffer_clear(cache_buf_, 0);
    alloc_ = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend_));
    meta_.resize(kMaxNodes * ggml_tensor_overhead() + ggml_graph_overhead_custom(kMaxNodes, false));
}

ApmEncoder::~ApmEncoder() {
    if (alloc_) ggml_gallocr_free(alloc_);
    if (cache_buf_) ggml_backend_buffer_free(cache_buf_);
    if (cache_ctx_) ggml_free(cache_ctx_);
    if (backend_) ggml_backend_free(backend_);
}

size_t ApmEncoder::cache_bytes() const { return cache_buf_ ? ggml_backend_buffer_get_size(cache_buf_) : 0; }
size_t ApmEncoder::compute_bytes() const { return alloc_ ? ggml_gallocr_get_buffer_size(alloc_, 0) : 0; }

ApmOutput ApmEncoder::encode_pcm(const std::vector<float> &samples_16k) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<float> padded = pad_to_100ms(samples_16k);
    const Mel mel = mel_.compute(padded.data(), padded.size());
    const auto t1 = std::chrono::steady_clock::now();
    ApmOutput out = encode(mel);
    out.mel_ms = ms_between(t0, t1);
    return out;
}

ApmOutput ApmEncoder::encode(const Mel &mel) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto &hp = model_.hparams();
    if (mel.n_mel != hp.n_mel)
        throw_usage("apm: the mel input has " + std::to_string(mel.n_mel) + " bins, the model takes " + std::to_string(hp.n_mel));
    const int64_t T = (mel.n_frames + 1) / 2;  // conv2: k 3, stride 2, pad 1
    if (T < 5)
        throw_usage("apm: a chunk of " + std::to_string(mel.n_frames) +
                    " mel frames is too short (at least 9: 100 ms gives the 5 tokens one embedding pools)");
    if (T > hp.n_ctx)
        throw_usage("apm: a chunk of " + std::to_string(T) + " tokens does not fit the " + std::to_string(hp.n_ctx) +
                    "-token context (" + std::to_string(hp.n_ctx / 50) + " s)");

    ApmOutput out;
    if (!cfg_.streaming) n_past_ = 0;
    if (n_past_ + T > hp.n_ctx) {
        n_past_ = 0;
        out.cache_reset = true;
    }

    ggml_init_params ip{};
    ip.mem_size = meta_.size();
    ip.mem_buffer = meta_.data();
    ip.no_alloc = true;
    ggml_context *ctx = ggml_init(ip);
    ggml_cgraph *gf = ggml_new_graph_custom(ctx, kMaxNodes, false);
    ggml_tensor *in = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, mel.n_frames, mel.n_mel);
    ggml_set_input(in);
    const auto &w = model_.weights();
    ggml_tensor *x = add_positions(ctx, conv_front(ctx, in, w), w.pos, n_past_);
    for (size_t i = 0; i < w.layers.size(); ++i)
        x = encoder_layer(ctx, gf, x, w.layers[i], caches_[i], n_past_, hp.n_head, hp.eps);
    ggml_tensor *y = project_pool(ctx, x, w, hp.eps);
    ggml_set_output(y);
    ggml_build_forward_expand(gf, y);
    if (!ggml_gallocr_alloc_graph(alloc_, gf)) {
        ggml_free(ctx);
        throw_runtime("apm: cannot allocate the encoder graph (" + std::to_string(T) + " tokens)");
    }
    ggml_backend_tensor_set(in, mel.data.data(), 0, mel.data.size() * sizeof(float));
    const ggml_status st = ggml_backend_graph_compute(backend_, gf);
    if (st != GGML_STATUS_SUCCESS) {
        ggml_free(ctx);
        throw_runtime("apm: the encoder graph failed (ggml status " + std::to_string(static_cast<int>(st)) + ")");
    }
    out.n_embd = y->ne[0];
    out.n_rows = y->ne[1];
    out.data.resize(static_cast<size_t>(out.n_embd * out.n_rows));
    ggml_backend_tensor_get(y, out.data.data(), 0, out.data.size() * sizeof(float));
    ggml_free(ctx);

    out.n_mel_frames = mel.n_frames;
    out.n_tokens = T;
    out.n_past = n_past_;
    n_past_ += T;
    out.graph_ms = ms_between(t0, std::chrono::steady_clock::now());
    return out;
}

}  // namespace rtf::apm
