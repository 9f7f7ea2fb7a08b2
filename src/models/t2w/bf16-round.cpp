#include "models/t2w/bf16-round.h"

#include "models/t2w/packed-gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RTF_BF16_ROUND_X86 1
#else
#define RTF_BF16_ROUND_X86 0
#endif

namespace rtf::t2w {

namespace {
#if RTF_BF16_ROUND_X86
// GCC 12 warns on its own _mm512_undefined_* inside the shift / convert intrinsics
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) int64_t round_avx512(const float *x, uint16_t *y, int64_t n) {
    const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff), abs = _mm512_set1_epi32(0x7fffffff),
                  inf = _mm512_set1_epi32(0x7f800000), quiet = _mm512_set1_epi32(64);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i u = _mm512_loadu_si512(x + i);
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
        __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, bias)), 16);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
        r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), quiet);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(y + i), _mm512_cvtepi32_epi16(r));
    }
    return i;
}
#pragma GCC diagnostic pop
#endif
}  // namespace

void round_to_bf16(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
#if RTF_BF16_ROUND_X86
    if (gemm::cpu_has_avx512f()) i = round_avx512(x, y, n);
#endif
    for (; i < n; ++i) y[i] = f32_to_bf16(x[i]);
}

}  // namespace rtf::t2w
