#include "bench/simulate-workload.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/parse.h"
#include "pipeline/pipeline.h"
#include "pipeline/synthetic.h"
#include "profile/metrics.h"
#include "profile/trace.h"

namespace rtf::bench {

namespace {

const std::vector<std::string> kKnobs = {"cost", "cost-type", "chunks",  "chunk-ms", "schedule", "d1", "d2",
                                         "jitter-ms", "cpus", "clock", "profile", "fail"};

// Wraps a stage and throws on its n-th input item: a forced, reproducible stage failure.
class FailingStage final : public pipe::Stage {
public:
    FailingStage(pipe::Stage &inner, int64_t fail_at) : pipe::Stage(inner.spec()), inner_(inner), fail_at_(fail_at) {}
    void begin(pipe::StageContext &ctx) override { inner_.begin(ctx); }
    void process(pipe::Item &&in, pipe::Emitter &out) override {
        if (n_++ == fail_at_)
            throw Error(ErrorKind::Runtime, "forced failure (fail=" + spec().name + "@" + std::to_string(fail_at_) +
                                                ") on item " + std::to_string(fail_at_));
        inner_.process(std::move(in), out);
    }
    void finish(pipe::Emitter &out) override { inner_.finish(out); }

private:
    pipe::Stage &inner_;
    int64_t fail_at_;
    int64_t n_ = 0;
};

class SimulateWorkload final : public Workload {
public:
    explicit SimulateWorkload(const Knobs &knobs) : sim_(pipe::SimulateConfig::defaults()) {
        check_knobs("simulate", knobs, kKnobs);
        std::string d1 = "16", d2 = "16";
        for (const auto &[k, v] : knobs) {
            if (k == "cost") pipe::apply_costs(sim_, v, "cost");
            else if (k == "cost-type") pipe::apply_cost_types(sim_, v, "cost-type");
            else if (k == "cpus") { if (!v.empty()) pipe::apply_cpus(sim_, v, "cpus"); }
            else if (k == "chunks") sim_.n_chunks = static_cast<int>(parse_int(v, "chunks", 1, 100000));
            else if (k == "chunk-ms") {
                sim_.chunk_ms = parse_duration_ms(v, "chunk-ms");
                if (!(sim_.chunk_ms > 0)) throw_usage("chunk-ms: '" + v + "' must be > 0");
            } else if (k == "schedule") pc_.schedule = pipe::parse_schedule(v, "schedule");
            else if (k == "d1") d1 = v;
            else if (k == "d2") d2 = v;
            else if (k == "jitter-ms") pc_.jitter_ms = parse_duration_ms(v, "jitter-ms");
            else if (k == "clock") {
                if (v != "real" && v != "virtual") throw_usage("clock: '" + v + "' is not real or virtual");
                virtual_ = v == "virtual";
            } else if (k == "profile") {
                if (v != "on" && v != "off") throw_usage("profile: '" + v + "' is not on or off");
                pc_.profile = v == "on";
            } else if (k == "fail") {
                auto at = v.find('@');
                if (at == std::string::npos || at == 0)
                    throw_usage("fail: '" + v + "' is not STAGE@N (e.g. t2w@2: t2w fails on its item 2)");
                fail_stage_ = v.substr(0, at);
                fail_at_ = parse_int(v.substr(at + 1), "fail", 0, 1000000);
                bool known = false;
                for (const auto &s : sim_.stages) known = known || s.name == fail_stage_;
                if (!known) throw_usage("fail: stage '" + fail_stage_ + "' does not exist (llm, tts, t2w)");
            }
        }
        sim_.validate();
        pc_.depths = {static_cast<int>(parse_int(d1, "d1", 1, pipe::PipelineConfig::kMaxDepth)),
                      static_cast<int>(parse_int(d2, "d2", 1, pipe::PipelineConfig::kMaxDepth))};
        pc_.validate(sim_.stages.size());
    }

    std::string name() const override { return "simulate"; }

    nlohmann::json config() const override {
        nlohmann::json j = {{"simulate", sim_.to_json()}, {"pipeline", pc_.to_json()},
                            {"clock", virtual_ ? "virtual" : "real"}};
        if (!fail_stage_.empty()) j["fail"] = fail_stage_ + "@" + std::to_string(fail_at_);
        return j;
    }

    RunOutput run_once() override {
        auto owned = sim_.make_stages();
        std::vector<std::unique_ptr<FailingStage>> wrappers;
        std::vector<pipe::Stage *> stages;
        for (auto &s : owned) {
            if (s->spec().name == fail_stage_) {
                wrappers.push_back(std::make_unique<FailingStage>(*s, fail_at_));
                stages.push_back(wrappers.back().get());
            } else {
                stages.push_back(s.get());
            }
        }
        pipe::PipelineConfig pc = pc_;
        prof::VirtualClock vclock;
        if (virtual_) pc.clock = &vclock;
        RunOutput r;
        r.t_start_ms = prof::default_clock().now_ms();
        pipe::RunResult res = pipe::run_pipeline(stages, pipe::Item{}, nullptr, pc);
        r.t_end_ms = prof::default_clock().now_ms();
        if (res.cancelled) throw Error(ErrorKind::Runtime, "run cancelled (Ctrl-C): incomplete");
        r.metrics = prof::to_json(res.metrics);
        for (size_t i = 0; i < res.metrics.stages.size(); ++i) {
            StageFigure f;
            f.name = res.metrics.stages[i].name;
            f.busy_ms = res.metrics.stages[i].busy_ms;
            f.rtf_stage = res.metrics.stages[i].rtf_stage;
            f.device = res.record.stages[i].device.empty() ? "CPU" : res.record.stages[i].device;
            f.n_threads = res.record.stages[i].n_threads;
            r.stages.push_back(f);
        }
        r.quality_note = "not checked: synthetic stages make no audio or tokens";
        r.record = prof::to_json(res.record);  // on either clock: its times are self-consistent
        // The trace only on a real clock: its timestamps then share the device samples' clock.
        if (!virtual_) {
            r.trace = prof::chrome_trace(res.record, &res.metrics.starvation);
            r.trace_t0_ms = res.record.clock_origin_ms;
        }
        return r;
    }

private:
    pipe::SimulateConfig sim_;
    pipe::PipelineConfig pc_;
    bool virtual_ = false;
    std::string fail_stage_;
    int64_t fail_at_ = 0;
};

}  // namespace

std::unique_ptr<Workload> make_simulate_workload(const Knobs &knobs) {
    return std::make_unique<SimulateWorkload>(knobs);
}

WorkloadInfo simulate_workload_info() {
    return {"simulate", "the pipeline with synthetic stages (as `rtf simulate`)", kKnobs, make_simulate_workload};
}

}  // namespace rtf::bench
