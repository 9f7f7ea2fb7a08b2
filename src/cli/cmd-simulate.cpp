// rtf simulate: the real pipeline machinery with synthetic stages of a given cost per
// chunk — "what if the vocoder got twice as fast?" before writing a line of engine code.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/format.h"
#include "core/parse.h"
#include "core/topology.h"
#include "pipeline/cancel.h"
#include "pipeline/pipeline.h"
#include "pipeline/synthetic.h"
#include "profile/trace.h"

namespace rtf::cli {

namespace {

struct SimulateOptions {
    std::string cost = "llm=100ms,tts=300ms,t2w=300ms";
    std::string cost_type = "wait";
    std::string chunk_ms = "1000";
    std::string chunks = "20";
    std::string schedule = "pipelined";
    std::string d1 = "16", d2 = "16";
    std::string jitter_ms = "0";
    std::string cpus;
    std::string clock = "real";
    bool no_profile = false;
    std::string json_path;
    std::string trace_path;
};

void print_summary(const pipe::SimulateConfig &sim, const pipe::PipelineConfig &pc, const pipe::RunResult &r,
                   bool virtual_clock) {
    const auto &m = r.metrics;
    std::ostringstream o;
    o << "rtf simulate: " << sim.stages.size() << " stages, " << sim.n_chunks << " chunks x " << fmt(sim.chunk_ms, 0)
      << " ms audio, schedule " << pipe::to_string(r.schedule) << " (";
    for (size_t i = 0; i < r.depths.size(); ++i)
        o << (i ? ", " : "") << "D" << i + 1 << "=" << (r.depths[i] == 0 ? std::string("unbounded") : std::to_string(r.depths[i]));
    o << "), " << (virtual_clock ? "virtual" : "real") << " clock"
      << (r.cancelled ? "  [CANCELLED: partial run]" : "") << "\n\n";
    char line[256];
    std::snprintf(line, sizeof line, "  %-6s %10s %5s %10s %10s %10s %10s %10s  %s\n", "stage", "cost/chunk", "type",
                  "busy ms", "rtf_stage", "p50 ms", "p95 ms", "max ms", "cpus bound");
    o << line;
    for (size_t i = 0; i < m.stages.size(); ++i) {
        const auto &s = m.stages[i];
        const auto &sp = sim.stages[i];
        std::snprintf(line, sizeof line, "  %-6s %7s ms %5s %10s %10s %10s %10s %10s  %s\n", s.name.c_str(),
                      fmt(sp.cost_ms, 1).c_str(), pipe::to_string(sp.type), fmt(s.busy_ms, 1).c_str(),
                      fmt(s.rtf_stage).c_str(), fmt(s.item_ms.p50, 2).c_str(), fmt(s.item_ms.p95, 2).c_str(),
                      fmt(s.item_ms.max, 2).c_str(), format_pu_list(r.record.stages[i].cpus_bound).c_str());
        o << line;
    }
    o << "\n  rtf                 " << fmt(m.rtf) << "   (xrt " << fmt(m.xrt, 2) << "x real time)\n"
      << "  rtf_steady          " << fmt(m.rtf_steady) << "\n"
      << "  first_audio_ms      " << fmt(m.first_audio_ms, 1) << "\n"
      << "  bound_overlap       " << fmt(m.bound_overlap) << "   (max stage: the best overlap can do)\n"
      << "  bound_serial        " << fmt(m.bound_serial) << "   (sum of stages: no overlap)\n"
      << "  pipeline_efficiency " << fmt(m.pipeline_efficiency) << "\n"
      << "  starvation          " << m.starvation.count << " gap(s), " << fmt(m.starvation.total_ms, 1)
      << " ms total (jitter buffer " << fmt(pc.jitter_ms, 0) << " ms)\n";
    for (const auto &[name, s] : m.queue_wait)
        o << "  queue_wait." << name << "       p50 " << fmt(s.p50, 2) << " ms, p95 " << fmt(s.p95, 2) << " ms\n";
    std::cout << o.str();
}

int run_simulate(const SimulateOptions &opt) {
    pipe::SimulateConfig sim = pipe::SimulateConfig::defaults();
    pipe::apply_costs(sim, opt.cost, "--cost");
    pipe::apply_cost_types(sim, opt.cost_type, "--cost-type");
    if (!opt.cpus.empty()) pipe::apply_cpus(sim, opt.cpus, "--cpus");
    sim.chunk_ms = parse_duration_ms(opt.chunk_ms, "--chunk-ms");
    if (!(sim.chunk_ms > 0)) throw_usage("--chunk-ms: '" + opt.chunk_ms + "' must be > 0");
    sim.n_chunks = static_cast<int>(parse_int(opt.chunks, "--chunks", 1, 100000));
    sim.validate();

    pipe::PipelineConfig pc;
    pc.schedule = pipe::parse_schedule(opt.schedule, "--schedule");
    pc.depths = {static_cast<int>(parse_int(opt.d1, "--d1", 1, pipe::PipelineConfig::kMaxDepth)),
                 static_cast<int>(parse_int(opt.d2, "--d2", 1, pipe::PipelineConfig::kMaxDepth))};
    pc.jitter_ms = parse_duration_ms(opt.jitter_ms, "--jitter-ms");
    pc.profile = !opt.no_profile;
    if (opt.clock != "real" && opt.clock != "virtual")
        throw_usage("--clock: '" + opt.clock + "' is not a clock; use real or virtual");
    const bool virtual_clock = opt.clock == "virtual";
    prof::VirtualClock vclock;
    if (virtual_clock) pc.clock = &vclock;
    pipe::CancelToken cancel;
    pc.cancel = &cancel;
    pc.validate(sim.stages.size());

    auto owned = sim.make_stages();
    std::vector<pipe::Stage *> stages;
    for (auto &s : owned) stages.push_back(s.get());
    pipe::RunResult r;
    {
        pipe::SigintGuard guard(cancel);
        r = pipe::run_pipeline(stages, pipe::Item{}, nullptr, pc);
    }
    const bool json_stdout = opt.json_path == "-";  // keep stdout machine-readable
    if (!json_stdout) print_summary(sim, pc, r, virtual_clock);
    if (!opt.trace_path.empty()) {
        prof::write_trace_file(prof::chrome_trace(r.record, &r.metrics.starvation), opt.trace_path);
        (json_stdout ? std::cerr : std::cout) << "  trace               " << opt.trace_path
                                              << " (open in ui.perfetto.dev)\n";
    }
    if (!opt.json_path.empty()) {
        nlohmann::json j = {{"command", "simulate"},
                            {"simulate", sim.to_json()},
                            {"pipeline", pc.to_json()},
                            {"result", pipe::to_json(r)}};
        write_json(j, opt.json_path);
    }
    if (r.cancelled) {
        std::cerr << "rtf simulate: cancelled; the figures above cover the chunks made so far\n";
        return 3;
    }
    return 0;
}

}  // namespace

static void add_simulate_command(CLI::App &app, Action &action) {
    auto *sub = app.add_subcommand(
        "simulate",
        "Run the streaming pipeline (llm -> tts -> t2w -> sink) with synthetic stages of a given cost per "
        "chunk and print the metrics of docs/metrics.md (rtf, rtf_steady, first_audio_ms, starvation, bounds)");
    auto o = std::make_shared<SimulateOptions>();
    sub->add_option("--cost", o->cost,
                    "Cost per chunk of each stage, STAGE=DURATION list (stages llm, tts, t2w; units ms, s, us; "
                    "bare numbers are ms). Unnamed stages keep the default")
        ->default_str(o->cost);
    sub->add_option("--cost-type", o->cost_type,
                    "wait (sleep: a stage on an accelerator) or busy (spin on CPU time: contends for cores); "
                    "one for all stages or per stage, e.g. t2w=busy,llm=wait")
        ->default_str(o->cost_type);
    sub->add_option("--chunk-ms", o->chunk_ms, "Audio duration of one chunk, ms")->default_str(o->chunk_ms);
    sub->add_option("--chunks", o->chunks, "Number of chunks in the utterance (1 .. 100000)")->default_str(o->chunks);
    sub->add_option("--schedule", o->schedule,
                    "pipelined (stages overlap through queues D1, D2), lockstep (one chunk in flight, D1 = D2 = 1) "
                    "or sequential (each stage finishes the utterance before the next starts)")
        ->default_str(o->schedule);
    sub->add_option("--d1", o->d1, "Depth of queue q1 (llm -> tts), items, >= 1 (pipelined only)")->default_str(o->d1);
    sub->add_option("--d2", o->d2, "Depth of queue q2 (tts -> t2w), items, >= 1 (pipelined only)")->default_str(o->d2);
    sub->add_option("--jitter-ms", o->jitter_ms, "Playback jitter buffer for the starvation figure, ms")
        ->default_str(o->jitter_ms);
    sub->add_option("--cpus", o->cpus,
                    "Bind stage threads to CPUs, STAGE=LIST, e.g. llm=0,t2w=1-3 (OS PU numbers, see `rtf devices`); "
                    "default: no binding");
    sub->add_option("--clock", o->clock,
                    "real (wall clock) or virtual (discrete-event time: instant, exact; busy costs become waits)")
        ->default_str(o->clock);
    sub->add_flag("--no-profile", o->no_profile,
                  "Run-time profiler off (no per-item events, queue waits or trace detail; headline metrics stay)");
    sub->add_option("--json", o->json_path, "Write the full result (config, metrics, per-chunk records) as JSON to FILE ('-' = stdout)");
    sub->add_option("--trace", o->trace_path, "Write a Chrome trace / Perfetto JSON timeline to FILE");
    sub->callback([&action, o] { action = [o] { return run_simulate(*o); }; });
}

RTF_COMMAND(40, add_simulate_command);

}  // namespace rtf::cli
