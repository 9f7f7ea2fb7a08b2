#pragma once
// `rtf tune`: the loop of docs/method.md as one function — top-down, one variable at a time,
// measured with the interleaved A/B protocol, keeping only verified wins.
//
//   TuneConfig tc;                         // runs 5 per side, noise 0.03, no budget limit
//   auto cands = speak_candidates(base, 2);   // or hand-made ones (tests, mock workload)
//   auto r = tune(find_workload("speak"), base, cands, tc, [](const std::string &l) { ... });
//   write r.best_knobs as tuned.json; to_json(r) for the report
//
// The loop. Candidates are grouped by layer, from the top (docs/method.md §5): 0 placement
// (devices, CPU sets, threads per stage), 1 types (KV cache, Token2Wav compute types),
// 2 pipeline (schedule, queue depths), 3 runtime parameters (flash attention, polling),
// 4 operators. Layer by layer, each candidate (one knob change) is measured against the
// current best as an A/B pair (run_ab: warm-ups, then A B A B ...), in the order of its
// stage's share of the current best's time (the leverage: a change to the bottleneck first).
// A candidate is kept only when B is VALID (every run's quality gates passed), its median
// objective (RTF by default; or the listener's gapless_start_ms, or first_audio_ms: lower is
// better for each) beats A's by more than the objective's noise floor, and — when both
// sides have enough runs for the Mann-Whitney U test — the difference is significant. A kept change becomes the new
// best, and the next candidates are measured against it (the bottleneck is re-located from
// its stage shares). A layer is finished before the next one is tried, so a knob two layers
// down is never tried before a helpful one above it.
// Candidates that change the math (types, flow steps, CFG) are tried only with
// `allow_math` (an explicit opt-in) and are then reported as "fidelity not verified" when
// kept: this tuner checks the quality gates, not the SNR against the baseline's output.
// Stops at the target RTF, at the budget (each trial's cost is estimated from the ones
// before; a trial that does not fit is skipped and says so), or when the candidates run out.
// Errors: a trial whose workload throws (bad knob value) is recorded as "failed", not fatal.
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/protocol.h"
#include "bench/workload.h"

namespace rtf::tune {

// The protocol's vocabulary (bench/protocol.h, bench/workload.h), used as it is.
using bench::Knobs;
using bench::ProtocolConfig;
using bench::WorkloadInfo;


inline constexpr const char *kTuneLayers[] = {"placement", "types", "pipeline", "runtime", "operators"};
inline constexpr int kTuneLayerCount = 5;

struct TuneCandidate {
    int layer = 0;               // 0..4 (kTuneLayers)
    std::string knob, value;     // one knob change
    std::string stage;           // the stage it acts on ("llm" | "tts" | "t2w"), "" = all
    bool changes_math = false;
    // Other knob values changed together with it (KnobFacts::tune_with): one trial for a
    // change that means nothing alone (a window ramp needs a short first window).
    std::vector<std::pair<std::string, std::string>> with;
    // "knob=value", then " + knob=value" for each of `with`.
    std::string label() const;
    // "LAYER:KEY=VALUE[+KEY=VALUE...][:STAGE]" (LAYER = index or name); throws
    // rtf::Error(Usage) naming `what`.
    static TuneCandidate parse(const std::string &text, const std::string &what);
};

// What a trial compares: RTF (the default), the listener's gapless start, or the first audio.
const std::vector<std::string> &tune_objectives();

struct TuneConfig {
    ProtocolConfig pc;           // runs per side (>= 3), warm-up, noise floor
    double budget_s = std::numeric_limits<double>::infinity();
    double target_rtf = 0;       // stop when the best median RTF is <= this; 0 = never
    bool allow_math = false;     // try candidates that change the math
    std::string objective = "rtf";   // tune_objectives(); lower is better
    double objective_noise_ms = 100;  // noise floor of the ms objectives (pc.noise is RTF's)
    // After the descent, one more interleaved A/B of the starting knobs against the tuned ones
    // (cfg.pc's runs): each kept change passed one pair at alpha 0.05, and a dozen trials make
    // a lucky pair likely, so the changes are kept only if this pair also shows them beyond the
    // noise (and significant, when a test is possible); otherwise they are dropped, and said so.
    bool confirm = true;
    double noise() const { return objective == "rtf" ? pc.noise : objective_noise_ms; }
    void validate() const;
};

struct TuneTrial {
    int index = 0;
    TuneCandidate cand;
    double a_rtf = std::numeric_limits<double>::quiet_NaN(), b_rtf = std::numeric_limits<double>::quiet_NaN();
    // The objective's medians (= the RTFs when it is rtf) and their difference.
    double a_value = std::numeric_limits<double>::quiet_NaN(), b_value = std::numeric_limits<double>::quiet_NaN();
    double delta = std::numeric_limits<double>::quiet_NaN();   // b_value - a_value
    double wall_s = 0;
    // "kept" | "within noise" | "slower" | "failed gate" | "failed" | "not significant" |
    // "skipped (budget)" | "skipped (changes the math)" | "skipped (target reached)"
    std::string verdict;
    std::string reason;
};

struct TuneResult {
    Knobs base;                  // the starting knobs
    Knobs best;                  // base + every kept change
    Knobs changes;               // the kept changes alone (what tuned.json holds)
    // Absolute RTFs measured minutes apart drift on a shared machine (35 % seen on the CI
    // box), so the descent is the chain of in-pair ratios: each kept step's B/A from the
    // same interleaved pair, and their product as the gain over the baseline.
    std::string objective = "rtf";
    double base_rtf = std::numeric_limits<double>::quiet_NaN();  // the first pair's A side
    double best_rtf = std::numeric_limits<double>::quiet_NaN();  // the last pair's side holding the best
    double base_value = std::numeric_limits<double>::quiet_NaN(), best_value = base_value;  // the same, objective
    double gain = 1.0;                                         // product of the kept steps' B/A (objective)
    double rtf_gain = 1.0;                                     // the same steps' RTF ratios
    struct Step {
        std::string step;   // "baseline" or the kept change
        double a_value, b_value, ratio, cumulative;  // the objective
        double a_rtf, b_rtf;
    };
    std::vector<Step> descent;
    std::vector<TuneTrial> trials;
    // The confirmation pair (TuneConfig::confirm): verdict "confirmed" | "not confirmed" (the
    // kept changes dropped: `changes` empty, `best` = `base`, `unconfirmed` holds them) |
    // "skipped (budget)" (the changes stay, unconfirmed) | "" (nothing kept, or confirm off).
    struct Confirmation {
        std::string verdict, reason;
        double a_value = std::numeric_limits<double>::quiet_NaN(), b_value = a_value;  // objective medians
        double a_rtf = a_value, b_rtf = a_value;
        double wall_s = 0;
    } confirmation;
    Knobs unconfirmed;
    std::string stop_reason;
    bool fidelity_unverified = false;  // a kept change changes the math
    double wall_s = 0;
};

using TuneProgress = std::function<void(const std::string &line)>;

TuneResult tune(const WorkloadInfo &info, const Knobs &base, std::vector<TuneCandidate> candidates, const TuneConfig &cfg,
                const TuneProgress &progress = {});

// The speak path's candidates on a machine with `n_cpus` CPUs: every knob whose row in the
// speak knob table has a tuner layer, with its candidate values (KnobFacts; today placement:
// threads per stage and CPU sets; types: LM weights and KV caches, Token2Wav compute types;
// pipeline: schedule and queue depths; runtime: flash attention), layer by layer in table
// order. Values equal to `base`'s, and values this build cannot run, are left out. `family`
// (the kit's, speak/kit.h): a family other than minicpmo45 gets only the knobs its stages read
// (speak::family_reads_knob: the gen stage's threads and CPUs, the decoder's, d1, the chunk
// sizes family-first-frames / family-frames); minicpmo45 gets none of the family-* knobs.
std::vector<TuneCandidate> speak_candidates(const Knobs &base, int n_cpus, const std::string &family = "minicpmo45");

nlohmann::json to_json(const TuneResult &r);
// tuned.json: {"knob": "value", ...} of the kept changes (rtf speak/bench/demo --config).
nlohmann::json tuned_config(const TuneResult &r);

}  // namespace rtf::tune
