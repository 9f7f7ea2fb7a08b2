#include "models/apm/apm-model.h"

#include <cstring>
#include <map>

#include <ggml-cpu.h>
#include <gguf.h>

#include "core/error.h"
#include "models/apm/log-mel.h"
#include "models/gguf/layout-check.h"
#include "models/gguf/mapped-gguf.h"

namespace rtf::apm {

ApmModel::ApmModel(const std::string &path) : path_(path) {
    gguf::require_layout(path, gguf::Role::apm);
    gguf::MappedGguf f(path);
    const auto &h = f.header();
    hp_.n_layer = h.get_int("encoder_layers");
    hp_.d = h.get_int("d_model");
    hp_.n_head = h.get_int("encoder_attention_heads");
    hp_.n_mel = h.find_int("n_mel").value_or(80);
    hp_.n_ctx = h.find_int("max_source_positions").value_or(1500);
    if (hp_.n_head <= 0 || hp_.d % hp_.n_head != 0)
        throw_usage(path + ": encoder_attention_heads " + std::to_string(hp_.n_head) + " does not divide d_model " +
                    std::to_string(hp_.d));

    // The filter bank: an f32 array of n_mel x 201 (the layout check verified type and length).
    {
        const gguf_context *g = h.ctx();
        const int64_t id = gguf_find_key(g, "filters");
        const auto n = static_cast<size_t>(gguf_get_arr_n(g, id));
        if (n != static_cast<size_t>(hp_.n_mel) * kFftBins)
            throw_usage(path + ": metadata key 'filters' has " + std::to_string(n) + " values, expected n_mel " +
                        std::to_string(hp_.n_mel) + " x " + std::to_string(kFftBins));
        filters_.resize(n);
        std::memcpy(filters_.data(), gguf_get_arr_data(g, id), n * sizeof(float));
    }

    // Tensors: a metadata context for the ones the graph uses, then one host buffer.
    std::vector<std::string> names;
    for (const auto &t : h.tensors()) names.push_back(t.name);
    ggml_init_params ip{};
    ip.mem_size = (names.size() + 1) * ggml_tensor_overhead();
    ip.no_alloc = true;
    ctx_ = ggml_init(ip);
    if (!ctx_) throw_setup(path + ": cannot create the weight context");
    std::map<std::string, ggml_tensor *> by_name;
    for (const auto &t : h.tensors()) {
        ggml_tensor *x = ggml_new_tensor(ctx_, t.type, gguf::shape_dims(t.ne), t.ne.data());
        ggml_set_name(x, t.name.c_str());
        by_name[t.name] = x;
    }
    buf_ = ggml_backend_alloc_ctx_tensors_from_buft(ctx_, ggml_backend_cpu_buffer_type());
    if (!buf_) throw_setup(path + ": cannot allocate the audio encoder's weights");
    for (auto &[name, x] : by_name) {
        const auto m = f.require(name, {});
        ggml_backend_tensor_set(x, m.data, 0, m.nbytes);
    }
    auto get = [&](const std::string &name) { return by_name.at(name); };  // presence checked by the layout
    w_.conv1_w = get("encoder.conv1.weight");
    w_.conv1_b = get("encoder.conv1.bias");
    w_.conv2_w = get("encoder.conv2.weight");
    w_.conv2_b = get("encoder.conv2.bias");
    w_.pos = get("encoder.positional_embedding");
    for (int64_t i = 0; i < hp_.n_layer; ++i) {
        const std::string p = "encoder.blocks." + std::to_string(i) + ".";
        ApmLayer l;
        l.attn_ln_w = get(p + "attn_ln.weight");
        l.attn_ln_b = get(p + "attn_ln.bias");
        l.q_w = get(p + "attn.query.weight");
        l.q_b = get(p + "attn.query.bias");
        l.k_w = get(p + "attn.key.weight");
        l.v_w = get(p + "attn.value.weight");
        l.v_b = get(p + "attn.value.bias");
        l.o_w = get(p + "attn.out.weight");
        l.o_b = get(p + "attn.out.bias");
        l.mlp_ln_w = get(p + "mlp_ln.weight");
        l.mlp_ln_b = get(p + "mlp_ln.bias");
        l.fc1_w = get(p + "mlp.0.weight");
        l.fc1_b = get(p + "mlp.0.bias");
        l.fc2_w = get(p + "mlp.2.weight");
        l.fc2_b = get(p + "mlp.2.bias");
        w_.layers.push_back(l);
    }
    w_.ln_post_w = get("encoder.ln_post.weight");
    w_.ln_post_b = get("encoder.ln_post.bias");
    w_.proj1_w = get("audio_projector.linear1.weight");
    w_.proj1_b = get("audio_projector.linear1.bias");
    w_.proj2_w = get("audio_projector.linear2.weight");
    w_.proj2_b = get("audio_projector.linear2.bias");
    hp_.n_ff = w_.layers.empty() ? 0 : w_.layers[0].fc1_w->ne[1];
    hp_.n_proj = w_.proj1_w->ne[1];
    hp_.n_out = w_.proj2_w->ne[1];
}

ApmModel::~ApmModel() {
    if (buf_) ggml_backend_buffer_free(buf_);
    if (ctx_) ggml_free(ctx_);
}

size_t ApmModel::weight_bytes() const { return buf_ ? ggml_backend_buffer_get_size(buf_) : 0; }

}  // namespace rtf::apm
