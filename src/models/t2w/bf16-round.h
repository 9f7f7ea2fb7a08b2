#pragma once
// F32 -> BF16 rounding for the bf16 compute types (internal to the t2w engine): round to
// nearest even, NaN kept NaN (quiet bit set), denormals kept — bit for bit what ggml's
// GGML_FP32_TO_BF16 (and so its F32 -> BF16 copy) gives. ggml's row conversion is a scalar
// loop (ggml_cpu_fp32_to_bf16); this one runs 16 lanes at a time with AVX-512F, so the bf16
// GEMM can round its activations itself instead of a ggml copy node (7 % of a bf16
// token2mel's node time, docs/measurements.md §14).
#include <cstdint>
#include <cstring>

namespace rtf::t2w {

inline uint16_t f32_to_bf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 64);
    return static_cast<uint16_t>((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

// y[i] = f32_to_bf16(x[i]) for i < n.
void round_to_bf16(const float *x, uint16_t *y, int64_t n);

}  // namespace rtf::t2w
