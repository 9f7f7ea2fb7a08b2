#pragma once
// Audio-code sampling of MiniCPM-o 4.5's TTS, reproducing the reference runtime's
// arithmetic exactly (docs/minicpmo45.md §3.8; golden/minicpmo45-tts README criterion 5).
//
// Both variants start from logits l_r = sum_j z_j * H[j][r] over the final-norm hidden z
// and head_code H in its transposed storage ([n_embd][n_codes] row-major). The sums,
// softmax and cumulative sums are float32 and strictly sequential (this file is compiled
// without FMA contraction): one golden step lies 6.6e-7 from a cumulative boundary, so a
// different summation order picks a different code.
//
// Thread-safety: the free functions are pure; a CodeRng is used by one thread at a time.
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace rtf::lm {

// The uniform draw of the reference: std::uniform_real_distribution<float>(0,1) on
// std::mt19937(seed) (libstdc++'s generate_canonical with one 32-bit draw), written out so
// that it does not depend on the standard library in use.
class CodeRng {
public:
    explicit CodeRng(uint32_t seed) : gen_(seed) {}
    float uniform();
    void reseed(uint32_t seed) { gen_.seed(seed); }

private:
    std::mt19937 gen_;
};

// l_r = sum_j z_j * head[j * n_codes + r], sequential in j, float32, for r in [0, n_codes).
void code_logits(std::span<const float> z, const float *head, int n_codes, std::span<float> out);

// Variant S (simplex). `history` = codes emitted so far in this turn (oldest first);
// `first_of_turn` disables the presence penalty. Returns the code in [0, n_codes); the last
// class is EOS. `logits` is modified (temperature and penalty applied).
int sample_simplex(std::span<float> logits, std::span<const int32_t> history, bool first_of_turn, float u);

// Variant D (duplex), docs/minicpmo45.md §3.8, in the reference's order:
//   1. l /= 0.8;
//   2. if t > 0: with c_r = count of r in the last 16 of `call_codes` (this call's codes only,
//      not the turn's), alpha = powf(1.05, c_r); l_r *= alpha if l_r < 0 else l_r /= alpha;
//   3. `forbid_eos` (t < min_new): l_EOS = -inf — a non-final duplex call thus never stops early;
//   4. softmax (max-subtracted exp, sequential float32 sum, divide);
//   5. sort descending (stable: equal probabilities keep index order; the reference's
//      std::sort may order them differently, which only happens among probabilities that
//      underflowed to 0) and keep while kept < 3 or (cumulative < 0.85 and kept < 25);
//   6. renormalise the kept ones by their sequential sum; the first with cumulative >= u
//      (else the last kept).
// `logits` is modified (steps 1-4 leave the full softmax in it). `kept`, if given, receives
// the kept indices and renormalised probabilities in sorted order (golden checks, traces).
struct DuplexKept {
    std::vector<int32_t> idx;
    std::vector<float> p;
};
int sample_duplex(std::span<float> logits, std::span<const int32_t> call_codes, int t, bool forbid_eos, float u,
                  DuplexKept *kept = nullptr);

// Index of the largest logit (the first one on ties): used instead of sampling when the
// LLM's temperature is <= 0 (greedy mode).
int argmax_code(std::span<const float> logits);

// Spec §2.8 constants.
inline constexpr float kCodeTemperature = 0.8f;
inline constexpr float kSimplexPenalty = 1.05f;
inline constexpr int kSimplexPenaltyWindow = 8;
inline constexpr int kDuplexPenaltyWindow = 16;
inline constexpr float kDuplexTopP = 0.85f;
inline constexpr int kDuplexTopK = 25;
inline constexpr int kDuplexMinKeep = 3;

}  // namespace rtf::lm
