#pragma once
// Synthetic stages: the real pipeline machinery with made-up work, for `rtf simulate`,
// tests and benchmarks ("what if the vocoder got twice as fast?" before writing a line).
//
// A SyntheticStage costs `cost_ms` per item, either
//   wait   it sleeps on the run's clock (a stage on an accelerator: the CPU is free), or
//   busy   it spins until its thread has used `cost_ms` of CPU time (CLOCK_THREAD_CPUTIME_ID),
//          so busy stages sharing too few cores slow each other down, as real ones do.
//          On a virtual clock a busy cost is a sleep (virtual time has no CPU).
// As stage 0 it emits `n_items` items, one per cost; otherwise one output per input. A
// stage with audio_ms > 0 stamps that duration on its outputs (the last stage's chunks).
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "pipeline/stage.h"

namespace rtf::pipe {

enum class CostType { wait, busy };
const char *to_string(CostType t) noexcept;

struct SyntheticSpec {
    std::string name;
    double cost_ms = 0;             // per item, >= 0
    CostType type = CostType::wait;
    std::vector<int> cpus;          // binding (empty: none)
    int n_items = 0;                // source only: items to emit
    double audio_ms = 0;            // stamped on outputs when > 0
};

class SyntheticStage final : public Stage {
public:
    explicit SyntheticStage(const SyntheticSpec &s);
    void begin(StageContext &ctx) override { ctx_ = &ctx; }
    void process(Item &&in, Emitter &out) override;

private:
    void work();
    SyntheticSpec s_;
    StageContext *ctx_ = nullptr;
};

// Spins until the calling thread has used `ms` of CPU time.
void burn_cpu_ms(double ms);

// The three-stage speak path with synthetic costs, as `rtf simulate` runs it.
struct SimulateConfig {
    std::vector<SyntheticSpec> stages;   // llm, tts, t2w by default
    double chunk_ms = 1000;              // audio per chunk
    int n_chunks = 20;

    static SimulateConfig defaults();    // llm=100ms, tts=300ms, t2w=300ms, wait, 20 x 1000 ms
    // Throws rtf::Error(Usage) naming the bad value.
    void validate() const;
    nlohmann::json to_json() const;
    // Stage objects for run_pipeline (source emits n_chunks, last stamps chunk_ms).
    std::vector<std::unique_ptr<SyntheticStage>> make_stages() const;
};

// "--cost": "llm=100ms,tts=300ms" -> sets cost_ms of the named stages (others unchanged).
// Unknown stage names and malformed durations throw rtf::Error(Usage) naming `what`,
// the value and the known stage names.
void apply_costs(SimulateConfig &cfg, const std::string &text, const std::string &what);
// "--cost-type": "wait" | "busy" (all stages) or "t2w=busy,llm=wait".
void apply_cost_types(SimulateConfig &cfg, const std::string &text, const std::string &what);
// "--cpus": "llm=0,t2w=1-3,5": a bare item continues the previous stage's CPU list.
void apply_cpus(SimulateConfig &cfg, const std::string &text, const std::string &what);

}  // namespace rtf::pipe
