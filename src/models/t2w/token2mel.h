#pragma once
// Token2Mel: one streaming window of audio codes -> 80-bin mel at 50 Hz: the
// UpsampleConformerEncoderV2 (chunk mode, with the conformer caches) + flow matching
// (Euler over t_i = 1 - cos(πi/2N), CFG rate 0.7, DiT estimator with the prompt-derived
// attention cache). Spec: minicpmo45-speak-path.md §3.3-3.7.
//
// Execution plan (why it looks like this: docs in token2mel.cpp, "Execution plan"):
//   - ggml graphs are built and allocated once per window shape (non-last: 28 tokens ->
//     50 frames, last: 31 -> 56, a shorter first window n -> 2(n-3)) and reused: one encoder graph and one DiT graph per
//     (Euler step, CFG branch); the Euler update itself runs on the host.
//   - Everything that does not depend on the window (time-step embeddings and all adaLN
//     modulations per step, the relative-position tables) is computed once at
//     construction and kept resident; the DiT prompt attention cache's K and V^T
//     are copied once into per-stream buffers with room in front for the current frames
//     (~190 MiB at full shape), so no DiT pass concatenates or transposes the cache.
//   - With CFG, the two branches run either as one batch-2 graph per Euler step ("batch-2
//     CFG": the branch is a batch dimension, ne[2] of the activations, so every DiT weight is
//     read once per step and each product has 2x the tokens), split over threads_t2m ggml
//     threads, or ("lanes") as one graph per (step, branch), the two branches as two
//     independent computations on two threads (threads_t2m/2 ggml threads each) joined once
//     per Euler step. Default: batch-2 with 1 thread or a non-CPU device, lanes with >= 2
//     CPU threads (a batch graph pays one thread barrier per node, which costs a time
//     slice whenever the cores are shared: token2mel.cpp, "Execution plan").
//     RTF_T2W_CFG_BATCH=1 / =0 forces batch-2 / lanes. Both give the same numbers.
//
// RTF_T2W_DEBUG_MEM=1 prints the graph activation buffer sizes when a shape is built.
// Not thread-safe: one Token2Mel per stream (it owns backends, graphs and allocators).
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "models/t2w/t2w-config.h"
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-timing.h"

namespace rtf::t2w {

// Whether a Token2Mel with CFG runs batch-2 CFG: RTF_T2W_CFG_BATCH=1 yes, =0 no (the
// lanes), else yes when threads_t2m < 2 or the device is not the CPU. Read when a Token2Mel
// is constructed; `rtf t2w --help` names it.
bool cfg_batch_enabled(int threads_t2m, bool cpu);

// Per-stream token2mel state (docs/minicpmo45.md §4.7); starts as the prompt cache.
struct Token2MelState {
    std::vector<float> conf_cnn;  // [d, 6]
    std::vector<float> conf_att;  // [2hd, L, H, n_layers]
    std::vector<float> est_cnn;   // [2h, 2, depth·N, 2]
    std::mt19937 rng{42};         // noise generator: seeded once, never reset (reference behaviour)
    void reset(const Voice &v);
};

class Token2Mel {
public:
    Token2Mel(const T2wModel &model, const T2wConfig &cfg);
    ~Token2Mel();
    Token2Mel(const Token2Mel &) = delete;
    Token2Mel &operator=(const Token2Mel &) = delete;

    // `tokens`: 1..`window` codes (padded to `window` with 4218 inside). `window`: the
    // graph's length in tokens, its last 3 being look-ahead: 28 (the reference), or
    // kMinFirstWindow..28 for a shorter non-last first window (T1 = window - 3 tokens of
    // output; the caches advance by its own Δ = 2·T1, docs/minicpmo45.md §4.7 in general form).
    // Returns mel [80][T] (time fastest), T = min(2·T1 or 56, 2·n). Throws
    // rtf::Error(Usage) for out-of-range codes or window. Timing: upload/download =
    // host<->backend copies on the calling thread, compute = the rest of the graph phase
    // (both branches, the host Euler update included).
    std::vector<float> run(const std::vector<int32_t> &tokens, bool last, Token2MelState &st, PartTimes &tm,
                           int window = kWindowTokens);

    // Builds and allocates the graphs of one window shape now (run() builds a missing one
    // on first use); `compute` also runs it once on a scratch state (first-touch costs).
    void prepare(int window, bool last, bool compute = false);
    // Graphs built so far (encoder + DiT per step and branch, per window shape).
    int64_t graphs_built() const;

    int steps() const { return steps_; }
    // The voice whose prompt state the resident caches hold: the model's default at
    // construction. set_voice() re-uploads the speaker vector and refills the DiT attention
    // caches (no graph is rebuilt); a stream's state must be reset to the new voice after it.
    // Throws rtf::Error(Usage) for a voice of other shapes (voice.h).
    void set_voice(std::shared_ptr<const Voice> v);
    const std::shared_ptr<const Voice> &voice() const;
    // Number of parallel CFG-branch lanes in use (1 or 2; 1 when batched).
    int lanes() const;
    // Both CFG branches run as one batch-2 graph per Euler step (CFG on and
    // cfg_batch_enabled(...) when this Token2Mel was built).
    bool cfg_batched() const;
    // The DiT's attention runs as the fused CPU op (dit-attention.h), not as ggml's graph.
    bool fused_attention() const;

    // Throws rtf::Error(Usage) unless `window` is a valid graph length for `last`.
    static void check_window(int window, bool last);

    struct Impl;

private:
    int steps_ = 0;
    std::unique_ptr<Impl> impl_;
};

}  // namespace rtf::t2w
