#pragma once
// What a load-time weight type (ModelPlacement::weight_type) costs in fidelity, priced the way
// llama.cpp's perplexity tool prices a quantization (--kl-divergence): the same inputs are
// teacher-forced through the file's own weights (the reference) and through the converted
// ones, and at every position the distribution the sampler draws from is compared:
// KL(p_ref || p_type) (mean, p99, max, in nats) and whether the most likely token agrees.
//
//   FidelityAccumulator acc;                         // any producer of two distributions
//   acc.add(p_ref, p_type);  ...;  WeightFidelity f = acc.result();
//
//   llm_weight_fidelity(cfg)   the LLM: a raw text (tokenised, no template) decoded in one
//                              teacher-forced pass per side; next-token distribution at the
//                              sampler's temperature over the whole vocabulary, and the SNR of
//                              the final-norm hidden rows (what the TTS conditions on).
//   llm_text_turn_fidelity(c)  the LLM's text-mode user turn, fixed vs echo (below).
//   tts_weight_fidelity(cfg)   the TTS: seeded condition rows, then N codes teacher-forced on
//                              the reference's own argmax; the code distribution the sampler
//                              draws from (logits / kCodeTemperature), and the SNR of z.
//
// The machine profile's lines (machine-profile.h): mean KL <= 0.01 nats and top-1 agreement
// >= 98 %. `rtf lm-fidelity` prints these; TtsGolden.C8 computes the same on the golden's
// own inputs. On twin weights the figures are twin-only evidence.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/lm/placement.h"

namespace rtf::lm {

struct WeightFidelity {
    std::string stage;         // "llm" | "tts"
    std::string weight_type;   // the priced type (a text-turn pricing: the type both sides ran)
    std::string priced;        // what was priced: "weight-type q8_0", "text-turn fixed"
    std::string reference = "file";  // its reference: the file's own weights, or "text-turn echo"
    std::string reference_file, type_file;
    double temperature = 1;    // of the compared distributions
    int positions = 0;         // compared distributions
    double kl_mean = 0, kl_p99 = 0, kl_max = 0;  // nats
    double top1_pct = 0;       // % of positions whose most likely token agrees
    double hidden_snr_db = 0;  // 10 log10(sum ref^2 / sum (ref - type)^2) over every hidden row; inf when equal
    // The profile's lines for a math-changing LM choice.
    static constexpr double kMaxMeanKl = 0.01;
    static constexpr double kMinTop1Pct = 98.0;
    bool passes() const { return kl_mean <= kMaxMeanKl && top1_pct >= kMinTop1Pct; }
    nlohmann::json to_json() const;
};

// Collects per-position pairs of distributions (each sums to 1) and hidden rows.
class FidelityAccumulator {
public:
    void add(const std::vector<double> &p_ref, const std::vector<double> &p_type);
    void add_hidden(const float *ref, const float *type, size_t n);
    // Stats so far (stage, type and files left empty for the caller). Throws Usage when empty.
    WeightFidelity result() const;

private:
    std::vector<double> kls_;
    int64_t top1_ = 0;
    double sig_ = 0, err_ = 0;
};

// softmax(logits / temperature) in double, max-subtracted.
std::vector<double> softmax_at(const float *logits, size_t n, double temperature);

struct LlmFidelityConfig {
    std::string model_path;       // the LLM GGUF (its own weights are the reference)
    ModelPlacement placement;     // weight_type = the type priced (not "file")
    std::string text;             // "" = a built-in English passage
    int max_tokens = 256;         // positions compared, at most
    double temperature = 0.8;     // the LLM sampler's (LlmConfig::temperature)
    void validate() const;        // throws rtf::Error(Usage) naming the field
};
WeightFidelity llm_weight_fidelity(const LlmFidelityConfig &cfg);

// Text mode's user turn (LlmConfig::text_turn, `--text-turn fixed`): the reply (the text)
// teacher-forced after the template with the fixed instruction as the user turn, against
// the same reply after the template with the text itself as the user turn (echo: the
// reference); both through the same weights (placement.weight_type, "file" by default).
// Compared at each reply position: the next-token distribution at the sampler's
// temperature (KL, top-1), and the final-norm hidden row — the row the TTS conditions on —
// as an SNR. The same lines as a weight type (WeightFidelity::passes).
struct LlmTurnFidelityConfig {
    std::string model_path;       // the LLM GGUF
    ModelPlacement placement;     // weight_type: both sides' ("file" = the file's own)
    std::string turn = "fixed";   // the turn priced against echo
    std::string text;             // the reply; "" = the built-in passage
    int max_tokens = 256;         // reply positions compared, at most
    double temperature = 0.8;
    void validate() const;        // throws rtf::Error(Usage) naming the field
};
WeightFidelity llm_text_turn_fidelity(const LlmTurnFidelityConfig &cfg);

struct TtsFidelityConfig {
    std::string model_path;       // the TTS GGUF
    ModelPlacement placement;     // weight_type = the type priced (not "file")
    int condition_rows = 16;      // seeded N(0, 0.5) rows prefilled first
    int n_codes = 200;            // teacher-forced code steps compared
    uint32_t seed = 42;
    void validate() const;
};
WeightFidelity tts_weight_fidelity(const TtsFidelityConfig &cfg);

// The built-in passage llm_weight_fidelity uses when `text` is empty.
const std::string &default_fidelity_text();

}  // namespace rtf::lm
