#include "models/apm/apm-model.h"

#include <algorithm>
#include <cstring>
#include <map>

#include <ggml-cpu.h>
#include <gguf.h>

#include "core/error.h"
#include "models/apm/log-mel.h"
#include "models/gguf/layout-check.h"
#include "models/gguf/mapped-gguf.h"

namespace rtf::apm {

const std::vector<std::string> &apm_weight_types() {
    static const std::vector<std::string> v = {"file", "f16", "bf16", "q8_0", "q4_0"};
    return v;
}

namespace {
// The matrices a weight type converts: every product of the blocks and the projector.
bool is_matrix(const std::string &name) {
    static const char *ends[] = {"attn.query.weight", "attn.key.weight", "attn.value.weight", "attn.out.weight",
                                 "mlp.0.weight",      "mlp.2.weight",    "audio_projector.linear1.weight",
                                 "audio_projector.linear2.weight"};
    for (const char *e : ends) {
        const size_t n = std::strlen(e);
        if (name.size() >= n && name.compare(name.size() - n, n, e) == 0) return true;
    }
    return false;
}

ggml_type type_of(const std::string &wt) {
    if (wt == "f16") return GGML_TYPE_F16;
    if (wt == "bf16") return GGML_TYPE_BF16;
    if (wt == "q8_0") return GGML_TYPE_Q8_0;
    return GGML_TYPE_Q4_0;
}

// `src` (n values of type `from`, F16 or F32) as `to`, row by row.
std::vector<uint8_t> convert(const void *src, ggml_type from, ggml_type to, int64_t n_per_row, int64_t nrows) {
    std::vector<float> f(static_cast<size_t>(n_per_row * nrows));
    if (from == GGML_TYPE_F16) ggml_fp16_to_fp32_row(static_cast<const ggml_fp16_t *>(src), f.data(), static_cast<int64_t>(f.size()));
    else std::memcpy(f.data(), src, f.size() * sizeof(float));
    std::vector<uint8_t> out(ggml_row_size(to, n_per_row) * static_cast<size_t>(nrows));
    if (to == GGML_TYPE_F16) ggml_fp32_to_fp16_row(f.data(), reinterpret_cast<ggml_fp16_t *>(out.data()), static_cast<int64_t>(f.size()));
    else if (to == GGML_TYPE_BF16) ggml_fp32_to_bf16_row(f.data(), reinterpret_cast<ggml_bf16_t *>(out.data()), static_cast<int64_t>(f.size()));
    else ggml_quantize_chunk(to, f.data(), out.data(), 0, nrows, n_per_row, nullptr);
    return out;
}
}  // namespace

ApmModel::ApmModel(const std::string &path, const std::string &weight_type) : path_(path), weight_type_(weight_type) {
    {
        const auto &v = apm_weight_types();
        if (std::find(v.begin(), v.end(), weight_type) == v.end())
            throw_setting("apm-weight-type", "'" + weight_type + "': use file, f16, bf16, q8_0 or q4_0");
    }
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
    std::map<std::string, ggml_type> stored;  // converted tensors: the file's type
    for (const auto &t : h.tensors()) {
        ggml_type type = t.type;
        if (weight_type != "file" && is_matrix(t.name) && (t.type == GGML_TYPE_F16 || t.type == GGML_TYPE_F32)) {
            const ggml_type want = type_of(weight_type);
            if (t.ne[0] % ggml_blck_size(want) == 0 && want != t.type) {
                stored[t.name] = t.type;
                type = want;
            }
        }
        ggml_tensor *x = ggml_new_tensor(ctx_, type, gguf::shape_dims(t.ne), t.ne.data());
        ggml_set_name(x, t.name.c_str());
        by_name[t.name] = x;
    }
    buf_ = ggml_backend_alloc_ctx_tensors_from_buft(ctx_, ggml_backend_cpu_buffer_type());
    if (!buf_) throw_setup(path + ": cannot allocate the audio encoder's weights");
    for (auto &[name, x] : by_name) {
        const auto m = f.require(name, {});
        if (auto it = stored.find(name); it != stored.end()) {
            const auto out = convert(m.data, it->second, x->type, x->ne[0], ggml_nrows(x));
            ggml_backend_tensor_set(x, out.data(), 0, out.size());
        } else {
            ggml_backend_tensor_set(x, m.data, 0, m.nbytes);
        }
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
