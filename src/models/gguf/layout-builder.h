#pragma once
// Building a FileLayout row by row (the libmtmd families' layout tables: pockettts-layout.cpp,
// qwen3tts-layout.cpp): tensors in the order a twin writes them, with their twin init, and the
// readers their infer_dims use. Header-only helpers; no state beyond the layout being built.
#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "models/gguf/gguf-file.h"
#include "models/gguf/layout.h"

namespace rtf::gguf::build {

using NE = std::array<int64_t, 4>;
inline NE ne1(int64_t a) { return {a, 1, 1, 1}; }
inline NE ne2(int64_t a, int64_t b) { return {a, b, 1, 1}; }
inline NE ne3(int64_t a, int64_t b, int64_t c) { return {a, b, c, 1}; }
inline float inv_sqrt(double n) { return static_cast<float>(1.0 / std::sqrt(n)); }

// A weight matrix at a kit's type; a row that is not whole blocks falls back as llama-quantize
// does (Q4_K -> Q8_0 -> F16).
inline ggml_type matrix_type(WeightType t, int64_t ne0) {
    ggml_type q = t == WeightType::q8_0 ? GGML_TYPE_Q8_0 : t == WeightType::q4_k_m ? GGML_TYPE_Q4_K : GGML_TYPE_F16;
    if (q == GGML_TYPE_Q4_K && ne0 % ggml_blck_size(q) != 0) q = GGML_TYPE_Q8_0;
    if (ne0 % ggml_blck_size(q) != 0) q = GGML_TYPE_F16;
    return q;
}

struct Builder {
    FileLayout L;
    void t(const std::string &name, NE ne, ggml_type type, Init init, bool any = false) {
        TensorSpec s;
        s.name = name;
        s.ne = ne;
        s.type = type;
        s.any_weight_type = any;
        s.init = init;
        L.tensors.push_back(std::move(s));
    }
    void vec(const std::string &name, int64_t n, float value) { t(name, ne1(n), GGML_TYPE_F32, init_const(value)); }
    void vecn(const std::string &name, int64_t n, float mean, float std) {
        Init i;
        i.mean = mean;
        i.std = std;
        t(name, ne1(n), GGML_TYPE_F32, i);
    }
    // [cin, cout] (PyTorch's [out, in]); N(0, 1/cin) unless `std`; `any`: any weight type passes the check.
    void mat(const std::string &name, int64_t cin, int64_t cout, ggml_type type = GGML_TYPE_F16, bool any = false,
             float std = 0.0f) {
        t(name, ne2(cin, cout), type, init_normal(std > 0 ? std : inv_sqrt(static_cast<double>(cin))), any);
    }
    void lin(const std::string &p, int64_t cin, int64_t cout, ggml_type type = GGML_TYPE_F16) {
        mat(p + ".weight", cin, cout, type);
        vec(p + ".bias", cout, 0.0f);
    }
    void ln(const std::string &p, int64_t c) {
        vec(p + ".weight", c, 1.0f);
        vec(p + ".bias", c, 0.0f);
    }
    // ggml [K, A, B]: a conv's [K, IC, OC] or a transposed conv's [K, OC, IC]; N(0, gain^2/fan_in);
    // a zero bias of `n_bias` (0 = none).
    void conv(const std::string &p, int64_t k, int64_t a, int64_t b, double fan_in, ggml_type type, int64_t n_bias,
              float gain = 1.0f) {
        t(p + ".weight", ne3(k, a, b), type, init_normal(gain * inv_sqrt(fan_in)));
        if (n_bias > 0) vec(p + ".bias", n_bias, 0.0f);
    }
    void kv(const std::string &key, KvValue v, bool check_value = false, bool required = true) {
        L.kvs.push_back(KvSpec{key, std::move(v), check_value, required});
    }
};

// infer_dims' readers: an integer key, a tensor's ne[i], or `fallback` when absent.
inline int64_t key_or(const GgufFile &f, const std::string &key, int64_t fallback) {
    return f.find_int(key).value_or(fallback);
}
inline int64_t dim_or(const GgufFile &f, const std::string &tensor, int i, int64_t fallback) {
    const TensorInfo *x = f.find_tensor(tensor);
    return x ? x->ne[static_cast<size_t>(i)] : fallback;
}

}  // namespace rtf::gguf::build
