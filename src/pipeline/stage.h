#pragma once
// rtf::pipe::Stage — the interface an engine implements to run in a pipeline.
//
//   class TtsStage : public rtf::pipe::Stage {
//   public:
//       TtsStage(Tts &engine) : Stage({.name = "tts", .n_threads = 4}), engine_(engine) {}
//       void process(Item &&in, Emitter &out) override {
//           buf_.insert(buf_.end(), ...);               // accumulate
//           while (buf_.size() >= 25) out.emit(make_chunk());   // zero or more outputs
//       }
//       void finish(Emitter &out) override { if (!buf_.empty()) out.emit(make_chunk()); }
//   };
//
// Contract (every call below happens on the stage's own worker thread, one at a time):
//   begin(ctx)         once, after the thread is bound to its CPUs, before any item.
//   process(in, out)   once per input item, in order. Stage 0 (the source) is called once
//                      with the request item and emits the whole stream from that call.
//   finish(out)        once at end of stream (not after an error or cancellation): emit
//                      the tail (e.g. a streaming window's last chunk).
//   out.emit(item)     hands an item on. Blocks while the next queue is full (backpressure)
//                      or, in lockstep, until downstream is idle. When the run is stopping
//                      (error elsewhere, cancellation) it throws pipe::Stopped: let it
//                      propagate (do not swallow it in a catch (...)).
// Any other exception from these calls stops the whole run and is reported with the
// stage's name (pipeline.h), unless the run was already stopping (then it is the stop's
// echo: see interrupt()). Long computations should poll ctx.stopping().
//
// The StageSpec is what the stage asks for; the pipeline binds the worker thread to `cpus`
// plus the PUs of `numa_node` (core/topology.h) and records what the OS applied.
// `n_threads` and `device` are for the engine's own use (e.g. ggml n_threads, backend
// device) and are reported; the pipeline runs each stage on exactly one worker thread,
// which keeps items in order.
#include <atomic>
#include <string>
#include <vector>

#include "pipeline/item.h"
#include "profile/clock.h"

namespace rtf::pipe {

struct StageSpec {
    std::string name;              // unique in a pipeline; used in metrics ("rtf_stage.<name>")
    int n_threads = 1;             // compute threads the engine uses (reported, not enforced)
    std::vector<int> cpus;         // OS PU indices to bind the worker to; empty = no binding
    int numa_node = -1;            // NUMA node whose PUs are added to the binding; -1 = none
    std::string device;            // backend device name (reported), e.g. "CPU", "CUDA0"
};

// Thrown by Emitter::emit() and StageContext::sleep_ms() when the run is stopping.
struct Stopped {};

// What a stage may ask of the run, from its own thread.
class StageContext {
public:
    StageContext(prof::Clock &clock, const std::atomic<bool> &stop) : clock_(clock), stop_(stop) {}
    // True once the run is stopping (an error elsewhere or cancellation).
    bool stopping() const noexcept { return stop_.load(std::memory_order_acquire); }
    // The run's clock (virtual in tests); times in ms.
    prof::Clock &clock() const noexcept { return clock_; }
    double now_ms() const { return clock_.now_ms(); }
    // Waits `ms` on the run's clock (a wait-type cost); throws Stopped when the run stops.
    void sleep_ms(double ms) const {
        if (!clock_.sleep_until_ms(clock_.now_ms() + ms, stop_)) throw Stopped{};
    }

private:
    prof::Clock &clock_;
    const std::atomic<bool> &stop_;
};

class Emitter {
public:
    virtual ~Emitter() = default;
    virtual void emit(Item &&item) = 0;
};

class Stage {
public:
    explicit Stage(StageSpec spec) : spec_(std::move(spec)) {}
    virtual ~Stage() = default;
    const StageSpec &spec() const noexcept { return spec_; }
    StageSpec &spec() noexcept { return spec_; }

    virtual void begin(StageContext & /*ctx*/) {}
    virtual void process(Item &&in, Emitter &out) = 0;
    virtual void finish(Emitter & /*out*/) {}
    // Called when the run starts stopping (cancellation or another stage's error), from the
    // thread that stops it, not the stage's own: wake a call the stage is blocked in that
    // polls nothing (e.g. a decode merged with other streams' that waits for them), so the
    // stage sees the stop at its next step. Must be thread-safe and must not throw. An
    // exception the stage then throws (e.g. "decode cancelled") is taken as the stop, never
    // reported as the stage's failure.
    virtual void interrupt() noexcept {}

private:
    StageSpec spec_;
};

}  // namespace rtf::pipe
