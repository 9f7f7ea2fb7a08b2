#include "models/gguf/layout.h"

#include "core/error.h"

namespace rtf::gguf {

const char *role_name(Role r) noexcept {
    switch (r) {
        case Role::llm: return "llm";
        case Role::tts: return "tts";
        case Role::projector: return "projector";
        case Role::encoder: return "encoder";
        case Role::flow_matching: return "flow_matching";
        case Role::flow_extra: return "flow_extra";
        case Role::hifigan2: return "hifigan2";
        case Role::prompt_cache: return "prompt_cache";
        case Role::apm: return "apm";
        case Role::vpm: return "vpm";
        case Role::backbone: return "backbone";
        case Role::mmproj: return "mmproj";
    }
    return "?";
}

Role parse_role(const std::string &text, const std::string &what) {
    for (Role r : all_roles)
        if (text == role_name(r)) return r;
    for (Role r : mtmd_family_roles)
        if (text == role_name(r)) return r;
    std::string allowed;
    for (Role r : all_roles) allowed += std::string(allowed.empty() ? "" : ", ") + role_name(r);
    for (Role r : mtmd_family_roles) allowed += std::string(", ") + role_name(r);
    throw_usage(what + ": unknown file role '" + text + "' (allowed: " + allowed + ")");
}

bool is_token2wav(Role r) noexcept {
    return r == Role::encoder || r == Role::flow_matching || r == Role::flow_extra || r == Role::hifigan2 ||
           r == Role::prompt_cache;
}

const char *weight_type_name(WeightType t) noexcept {
    switch (t) {
        case WeightType::f16: return "f16";
        case WeightType::q8_0: return "q8_0";
        case WeightType::q4_k_m: return "q4_k_m";
    }
    return "?";
}

const char *weight_type_file_tag(WeightType t) noexcept {
    switch (t) {
        case WeightType::f16: return "F16";
        case WeightType::q8_0: return "Q8_0";
        case WeightType::q4_k_m: return "Q4_K_M";
    }
    return "?";
}

WeightType parse_weight_type(const std::string &text, const std::string &what) {
    if (text == "f16" || text == "F16") return WeightType::f16;
    if (text == "q8_0" || text == "Q8_0") return WeightType::q8_0;
    if (text == "q4_k_m" || text == "Q4_K_M") return WeightType::q4_k_m;
    throw_usage(what + ": unknown weight type '" + text + "' (allowed: f16, q8_0, q4_k_m)");
}

uint32_t llama_file_type(WeightType t) noexcept {
    switch (t) {
        case WeightType::f16: return 1;     // LLAMA_FTYPE_MOSTLY_F16
        case WeightType::q8_0: return 7;    // LLAMA_FTYPE_MOSTLY_Q8_0
        case WeightType::q4_k_m: return 15; // LLAMA_FTYPE_MOSTLY_Q4_K_M
    }
    return 1;
}

Init init_normal(float std) {
    Init i;
    i.std = std;
    return i;
}

Init init_const(float value) {
    Init i;
    i.mean = value;
    return i;
}

const TensorSpec *FileLayout::find(const std::string &name) const {
    for (const auto &t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

uint64_t tensor_nbytes(ggml_type type, const std::array<int64_t, 4> &ne) {
    const auto row = static_cast<uint64_t>(ggml_row_size(type, ne[0]));
    return row * static_cast<uint64_t>(ne[1] * ne[2] * ne[3]);
}

uint64_t FileLayout::data_bytes(size_t alignment) const {
    uint64_t total = 0;
    for (const auto &t : tensors) {
        const uint64_t n = tensor_nbytes(t.type, t.ne);
        total += (n + alignment - 1) / alignment * alignment;
    }
    return total;
}

}  // namespace rtf::gguf
