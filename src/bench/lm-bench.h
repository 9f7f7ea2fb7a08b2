#pragma once
// LM stage decode benchmark: the LLM or the TTS engine alone, decoding a fixed number of
// tokens the way llama-bench's `tg` test does, optionally interleaved with llama.cpp's own
// `llama-bench` on the very GGUF the engine runs and the same knobs.
//
// Why: both stages run on upstream libllama, so llama-bench is the honest upper bound for
// their decode speed. Whatever our stage adds on top (hidden-state copies, samplers, the
// condition rows, chunk packaging) shows up as ratio < 1. The target is ≥ 0.97.
//
//   LmBenchConfig c;  c.stage = "llm";  c.model_path = kit.llm;  c.llama_bench = "/path/llama-bench";
//   LmBenchResult r = run_lm_bench(c, [](const std::string &line) { std::cerr << line << "\n"; });
//   r.to_json();   // every run, medians, ratio
//
// What is timed (per run, after one untimed warm-up run of each side):
//   - ours, stage rate: tokens / wall time of the decode loop (everything the stage does per
//     token: llama_decode, hidden-row copy, sampling, packaging); prefill excluded.
//   - ours, decode rate: tokens / time inside llama_decode only (the engine's own timers).
//   - llama-bench: its `avg_ts` for `-p 0 -n N -r 1` (which also excludes the load and runs
//     its own warm-up), as a separate process.
// The memory floor: a decoded token reads every weight once (and the KV so far), so
// tokens/s cannot exceed read bandwidth / those bytes; `of_floor` says how close the stage is.
// The order alternates per run (A B, B A, ...) so a drift in machine load hits both sides.
// TTS: the engine is fed one synthetic LLM step (seeded random ids and hidden rows) with
// EOS masked until exactly N codes, so the work size is fixed; llama-bench runs the derived
// plain-llama file of the TTS transformer (derived-tts-model.h), i.e. the same kernels.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/lm/placement.h"

namespace rtf::bench {

struct LmBenchConfig {
    std::string stage = "llm";      // "llm" | "tts"
    std::string model_path;         // LLM GGUF, or TTS GGUF (required)
    std::string projector_path;     // TTS only; "" = the TTS engine's default
    lm::ModelPlacement placement;   // threads, device, flash attention, KV type, mmap, cpus, poll
    int n_gen = 128;                // tokens (LLM) / codes (TTS) per run, like llama-bench -n
    int runs = 3;                   // measured runs per side (>= 1; >= 3 for a median worth citing)
    uint32_t seed = 42;
    std::string prompt = "Tell me a long story about a lighthouse keeper and the sea.";
    std::string llama_bench;        // path of llama-bench; "" = measure ours only
    // Measure the read bandwidth (limits.h, `threads` threads) and state the memory floor of
    // the measured file: tokens/s <= bandwidth / bytes read per decoded token (model-floors.h).
    bool memory_floor = true;
    void validate() const;          // throws rtf::Error(Usage) naming the field
    nlohmann::json to_json() const;
};

struct LmBenchRun {
    int n = 0;                      // tokens/codes decoded in this run
    double stage_tps = 0;           // ours: n / wall of the decode loop
    double decode_tps = 0;          // ours: n / time inside llama_decode
    double llama_bench_tps = 0;     // llama-bench avg_ts (0 when not run)
};

struct LmBenchResult {
    LmBenchConfig config;
    std::string measured_file;      // the GGUF llama-bench ran (TTS: the derived file)
    std::vector<std::string> llama_bench_args;  // the argument list it ran with
    std::vector<LmBenchRun> runs;
    double median_stage_tps = 0, median_decode_tps = 0, median_llama_bench_tps = 0;
    double ratio = 0;               // median_stage_tps / median_llama_bench_tps (0 without llama-bench)
    double load_ms = 0;
    // memory_floor: bytes per decoded token of measured_file (KV at the middle of a run), the
    // read bandwidth measured, and the tokens/s they allow; stage_tps / floor_tps.
    double floor_bytes_per_token = 0, bandwidth_gib_s = 0, floor_tps = 0, of_floor = 0;
    nlohmann::json to_json() const;
};

// Runs the benchmark. `progress` gets one line per finished run. Throws rtf::Error(Usage)
// for bad config, (Setup) for a missing/unloadable file or a llama-bench that fails or whose
// output cannot be parsed (its command line and the tail of its output are in the message).
LmBenchResult run_lm_bench(const LmBenchConfig &cfg, const std::function<void(const std::string &)> &progress = {});

// The llama-bench argument list equivalent to `pl` (exposed for tests): -m, -p 0, -n, -r 1,
// -o json, -t, -fa, -ctk/-ctv, -mmp, -ngl, -dev, --poll, -C (cpu mask) as applicable.
std::vector<std::string> llama_bench_args(const std::string &model, const lm::ModelPlacement &pl, int n_gen);

// Parses llama-bench `-o json` output: the avg_ts of its (first) tg result. Throws Setup.
double parse_llama_bench_tps(const std::string &json_text);

}  // namespace rtf::bench
