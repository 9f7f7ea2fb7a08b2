// Overhead of the pipeline machinery and of the profiler.
//
//   BM_Pipeline/<schedule>/<profile>  a 3-stage pipeline of zero-cost synthetic stages
//       (llm -> tts -> t2w -> sink), 2000 chunks per iteration: everything a chunk costs
//       that is not the engines' work (hand-offs, wake-ups, timestamps, records).
//       "per_chunk" is wall time per chunk (the DESIGN goal: < 50 us). Compare /1 with /0
//       for the profiler's share.
//   BM_QueueHandoff  one put + get on an uncontended queue (the floor of a hand-off).
//   BM_ProfileScope/<on>  one RTF_PROFILE_SCOPE with a ThreadProfile installed (1) or not (0).
// On a 2-core machine the 3 stage threads share cores, so per-chunk figures include
// context switches; they are an upper bound for machines with a core per stage.
#include <benchmark/benchmark.h>

#include "pipeline/pipeline.h"
#include "pipeline/queue.h"
#include "pipeline/synthetic.h"
#include "profile/profiler.h"

using namespace rtf;
using namespace rtf::pipe;

static void BM_Pipeline(benchmark::State &state) {
    const auto schedule = static_cast<Schedule>(state.range(0));
    const bool profile = state.range(1) != 0;
    const int n_chunks = 2000;
    SimulateConfig cfg = SimulateConfig::defaults();
    for (auto &s : cfg.stages) s.cost_ms = 0;
    cfg.n_chunks = n_chunks;
    cfg.chunk_ms = 1000;
    PipelineConfig pc;
    pc.schedule = schedule;
    pc.profile = profile;
    for (auto _ : state) {
        auto owned = cfg.make_stages();
        std::vector<Stage *> st;
        for (auto &s : owned) st.push_back(s.get());
        RunResult r = run_pipeline(st, Item{}, nullptr, pc);
        benchmark::DoNotOptimize(r.metrics.rtf);
    }
    state.SetItemsProcessed(state.iterations() * n_chunks);
    state.counters["per_chunk"] =
        benchmark::Counter(static_cast<double>(state.iterations() * n_chunks),
                           benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.SetLabel(std::string(to_string(schedule)) + (profile ? " profile=on" : " profile=off"));
}
BENCHMARK(BM_Pipeline)
    ->ArgsProduct({{static_cast<int>(Schedule::pipelined), static_cast<int>(Schedule::lockstep),
                    static_cast<int>(Schedule::sequential)},
                   {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

static void BM_QueueHandoff(benchmark::State &state) {
    BoundedQueue<Item> q(16);
    Item out;
    for (auto _ : state) {
        (void)q.put(Item{});
        (void)q.get(out);
    }
}
BENCHMARK(BM_QueueHandoff);

static void BM_ProfileScope(benchmark::State &state) {
    prof::ThreadProfile tp;
    tp.clock = &prof::default_clock();
    tp.samples.reserve(1 << 20);
    if (state.range(0)) prof::set_thread_profile(&tp);
    for (auto _ : state) {
        RTF_PROFILE_SCOPE("t2w.vocoder_ms");
        benchmark::ClobberMemory();
        if (tp.samples.size() >= (1u << 20)) tp.samples.clear();  // keep memory bounded
    }
    prof::set_thread_profile(nullptr);
    state.SetLabel(prof::kCompiledIn ? (state.range(0) ? "installed" : "not installed") : "compiled out");
}
BENCHMARK(BM_ProfileScope)->Arg(0)->Arg(1);
