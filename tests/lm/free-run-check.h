#pragma once
// The rule for comparing a free-running TTS decode with the reference's, shared by the
// simplex and duplex golden tests.
//
// Free-running, each step's input is the previous step's code, so once one code differs the
// two runs decode different sequences and nothing after it is comparable. Whether a code may
// differ depends on z (the hidden state the head and the sampler see): a z that is bit-exact
// gives bit-exact logits and the same draw, so a different code there is a bug; a z that is
// off by even one ulp (another CPU's kernel path: AMX/AVX-512 accumulation order) may flip a
// draw whose top-2 probabilities are closer than that error moves them, which is correct.
// So:
//   - z is compared on every comparable step, the diverging step included, within the
//     teacher-forced tolerance (a larger error is a bug whatever the codes do);
//   - code agreement is required only while z has been bit-exact on every step so far;
//   - with z inexact, the agreement is a figure to print, not an assertion.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

namespace rtf::test {

struct FreeRunStep {
    const float *z_ours = nullptr;
    const float *z_gold = nullptr;
    int32_t code_ours = 0;
    int32_t code_gold = 0;
};

struct FreeRunVerdict {
    size_t compared = 0;    // steps whose z was compared (up to and including the first difference)
    size_t agreeing = 0;    // steps agreeing before the first differing code
    size_t first_diff = 0;  // index of the first differing code, or the steps compared if none
    bool z_exact = true;    // z bit-exact on every compared step
    float max_dz = 0;       // max |z_ours - z_gold| over the compared steps
    std::string failure;    // empty when the run is consistent with the rule above
};

// `ours` and `gold` steps are aligned by index; `n_ours` < `n_gold` (a run that stopped early)
// or more is a failure while z was exact. `d` = z's width, `z_tol` = the teacher-forced tolerance.
template <class GetStep>
FreeRunVerdict judge_free_run(size_t n_ours, size_t n_gold, size_t d, float z_tol, GetStep step) {
    FreeRunVerdict v;
    const size_t n = std::min(n_ours, n_gold);
    v.first_diff = n;
    for (size_t i = 0; i < n; ++i) {
        const FreeRunStep s = step(i);
        float dz = 0;
        for (size_t k = 0; k < d; ++k) dz = std::max(dz, std::fabs(s.z_ours[k] - s.z_gold[k]));
        v.max_dz = std::max(v.max_dz, dz);
        v.z_exact = v.z_exact && std::memcmp(s.z_ours, s.z_gold, d * sizeof(float)) == 0;
        ++v.compared;
        if (!(dz <= z_tol) && v.failure.empty())
            v.failure = "step " + std::to_string(i) + ": max|dz| " + std::to_string(dz) + " above the tolerance " +
                        std::to_string(z_tol);
        if (s.code_ours != s.code_gold) {
            v.first_diff = i;
            if (v.z_exact && v.failure.empty())
                v.failure = "step " + std::to_string(i) + ": code " + std::to_string(s.code_ours) + " vs reference " +
                            std::to_string(s.code_gold) + " while z has been bit-exact on every step";
            return v;
        }
        ++v.agreeing;
    }
    if (n_ours != n_gold && v.z_exact && v.failure.empty())
        v.failure = "the run made " + std::to_string(n_ours) + " steps where the reference made " +
                    std::to_string(n_gold) + ", with z bit-exact on every step";
    return v;
}

}  // namespace rtf::test
