#include "pipeline/pipeline.h"

#include <pthread.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/topology.h"
#include "pipeline/queue.h"
#include "profile/profiler.h"

namespace rtf::pipe {

const char *to_string(Schedule s) noexcept {
    switch (s) {
        case Schedule::pipelined: return "pipelined";
        case Schedule::lockstep: return "lockstep";
        case Schedule::sequential: return "sequential";
    }
    return "?";
}

Schedule parse_schedule(const std::string &text, const std::string &what) {
    for (Schedule s : {Schedule::pipelined, Schedule::lockstep, Schedule::sequential})
        if (text == to_string(s)) return s;
    throw_usage(what + ": '" + text + "' is not a schedule; use pipelined, lockstep or sequential");
}

void PipelineConfig::validate(size_t n_stages) const {
    if (!depths.empty() && depths.size() + 1 != n_stages) {
        throw_usage("pipeline: " + std::to_string(depths.size()) + " queue depths given for " +
                    std::to_string(n_stages) + " stages; need " + std::to_string(n_stages ? n_stages - 1 : 0));
    }
    for (size_t i = 0; i < depths.size(); ++i) {
        if (depths[i] < 1 || depths[i] > kMaxDepth) {
            throw_usage("queue depth D" + std::to_string(i + 1) + " = " + std::to_string(depths[i]) +
                        " is out of range; allowed 1 .. " + std::to_string(kMaxDepth));
        }
    }
    if (!(jitter_ms >= 0)) throw_usage("jitter buffer " + std::to_string(jitter_ms) + " ms must be >= 0");
    if (!(cancel_poll_ms > 0)) throw_usage("cancel poll interval must be > 0 ms");
}

nlohmann::json PipelineConfig::to_json() const {
    return {{"schedule", rtf::pipe::to_string(schedule)}, {"depths", depths}, {"profile", profile},
            {"jitter_ms", jitter_ms}, {"virtual_clock", clock && clock->is_virtual()}};
}

namespace {

struct Envelope {
    Item item;
    double handed_ms = 0;  // when the producer handed it on (start of its queue wait)
};
using Queue = BoundedQueue<Envelope>;

struct SinkFailure {
    std::exception_ptr error;
};

// Lockstep: after stage i hands an item on, emit() returns only when every later stage
// is idle with empty queues (a synchronous call chain). pending[j] counts the items
// queued for or being processed by stage j. Same waiter/credit contract as the queue.
class LockstepGate {
public:
    LockstepGate(size_t n, prof::Clock &clock) : pending_(n, 0), waiting_(n, 0), clock_(clock) {}

    void handed(size_t i) {
        std::lock_guard lock(mu_);
        ++pending_[i + 1];
    }
    // Returns false when cancelled.
    bool wait_idle_after(size_t i) {
        std::unique_lock lock(mu_);
        while (!idle_after(i) && !cancelled_) {
            waiting_[i] = 1;
            clock_.on_block();
            cv_.wait(lock, [&] { return waiting_[i] == 0; });
        }
        return !cancelled_;
    }
    void done(size_t j) {
        std::lock_guard lock(mu_);
        --pending_[j];
        release_locked(false);
    }
    void cancel() {
        std::lock_guard lock(mu_);
        cancelled_ = true;
        release_locked(true);
    }

private:
    bool idle_after(size_t i) const {
        for (size_t j = i + 1; j < pending_.size(); ++j)
            if (pending_[j] != 0) return false;
        return true;
    }
    void release_locked(bool all) {
        bool any = false;
        for (size_t i = 0; i < waiting_.size(); ++i) {
            if (waiting_[i] && (all || idle_after(i))) {
                waiting_[i] = 0;
                clock_.on_unblock();
                any = true;
            }
        }
        if (any) cv_.notify_all();
    }

    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<int> pending_;
    std::vector<char> waiting_;
    bool cancelled_ = false;
    prof::Clock &clock_;
};

struct Run;

struct Worker final : Emitter {
    Run *run = nullptr;
    size_t idx = 0;
    Stage *stage = nullptr;
    Queue *in = nullptr;
    Queue *out = nullptr;
    prof::StageRecord rec;
    prof::ThreadProfile tp;
    std::vector<double> in_wait_ms;      // queue wait of each input (profiling on)
    std::vector<prof::ChunkRecord> chunks;  // last stage only
    double finished_ms = 0;
    // Current call.
    double seg_start = 0;
    int64_t cur_in_seq = -1;
    int64_t emitted_in_call = 0;
    std::vector<int> cur_lineage;

    void emit(Item &&item) override;
    void call(Item *input);
    void main(Item request);
};

struct Run {
    const PipelineConfig &cfg;
    prof::Clock &clock;
    const bool profile;
    const Sink &sink;
    size_t n = 0;
    std::atomic<bool> stop{false};
    std::vector<std::unique_ptr<Queue>> queues;
    std::unique_ptr<LockstepGate> gate;
    std::vector<std::unique_ptr<Worker>> workers;

    std::mutex mu;  // guards the fields below
    std::condition_variable done_cv;
    size_t n_done = 0;
    std::exception_ptr error;
    std::string error_stage;

    Run(const PipelineConfig &c, prof::Clock &clk, bool prof_on, const Sink &s)
        : cfg(c), clock(clk), profile(prof_on), sink(s) {}

    void stop_all() {
        if (stop.exchange(true, std::memory_order_acq_rel)) return;  // once: interrupt() runs once per stage
        for (auto &q : queues) q->cancel();
        if (gate) gate->cancel();
        clock.wake_all();
        for (auto &w : workers) w->stage->interrupt();
    }
    void fail(const std::string &stage, std::exception_ptr e) {
        {
            std::lock_guard lock(mu);
            if (!error) {
                error = std::move(e);
                error_stage = stage;
            }
        }
        stop_all();
    }
};

void Worker::emit(Item &&item) {
    Run &r = *run;
    if (r.stop.load(std::memory_order_acquire)) throw Stopped{};
    const double now = r.clock.now_ms();
    rec.busy_ms += now - seg_start;
    const int64_t out_seq = rec.n_out++;
    ++emitted_in_call;
    int event = -1;
    if (r.profile) {
        rec.events.push_back({seg_start, now, cur_in_seq, out_seq, 0.0});
        event = static_cast<int>(rec.events.size() - 1);
    }
    item.seq = out_seq;
    item.lineage = cur_lineage;
    item.lineage.resize(r.n, -1);
    item.lineage[idx] = event;
    if (!out) {  // last stage: the chunk leaves the pipeline now
        if (item.audio_ms <= 0 && item.sample_rate > 0)
            item.audio_ms = 1000.0 * static_cast<double>(item.pcm.size()) / item.sample_rate;
        chunks.push_back({out_seq, now, item.audio_ms, item.lineage});
        if (r.sink) {
            try {
                r.sink(item);
            } catch (...) {
                throw SinkFailure{std::current_exception()};
            }
        }
    } else {
        const bool lockstep = r.gate != nullptr;
        if (lockstep) r.gate->handed(idx);
        if (out->put(Envelope{std::move(item), now}) != QueueStatus::ok) throw Stopped{};
        if (lockstep && !r.gate->wait_idle_after(idx)) throw Stopped{};
    }
    const double after = r.clock.now_ms();
    rec.put_wait_ms += after - now;
    seg_start = after;
    tp.current_event = static_cast<int>(rec.events.size());
}

// One process() call (input != nullptr) or the finish() call.
void Worker::call(Item *input) {
    Run &r = *run;
    cur_in_seq = input ? input->seq : -1;
    if (input) cur_lineage = std::move(input->lineage);
    emitted_in_call = 0;
    seg_start = r.clock.now_ms();
    tp.current_event = static_cast<int>(rec.events.size());
    if (input) {
        stage->process(std::move(*input), *this);
        ++rec.n_in;
    } else {
        stage->finish(*this);
    }
    const double end = r.clock.now_ms();
    const double tail = end - seg_start;
    rec.busy_ms += tail;
    if (!r.profile) return;
    if (emitted_in_call == 0) {
        if (input) rec.events.push_back({seg_start, end, cur_in_seq, -1, 0.0});
        else if (tail > 0 || (!tp.samples.empty() && tp.samples.back().event == tp.current_event))
            rec.events.push_back({seg_start, end, -1, -1, 0.0});  // a finish() that worked but emitted nothing
    } else {
        rec.events.back().tail_ms += tail;
        // Samples taken after the last hand-off belong to that hand-off's event.
        const int last = static_cast<int>(rec.events.size()) - 1;
        for (auto it = tp.samples.rbegin(); it != tp.samples.rend() && it->event > last; ++it) it->event = last;
    }
}

void Worker::main(Item request) {
    Run &r = *run;
    {
        std::string tname = ("rtf-" + rec.name).substr(0, 15);
        pthread_setname_np(pthread_self(), tname.c_str());
    }
    try {
        rec.cpus_bound = bind_current_thread(rec.cpus_requested, rec.numa_node);
        StageContext ctx(r.clock, r.stop);
        if (r.profile) {
            tp.clock = &r.clock;
            prof::set_thread_profile(&tp);
        }
        stage->begin(ctx);
        bool ended = true;  // input stream ended normally (not stopped)
        if (idx == 0) {
            call(&request);
        } else {
            if (r.cfg.schedule == Schedule::sequential && !in->wait_closed()) ended = false;
            Envelope env;
            while (ended) {
                QueueStatus st = in->get(env);
                if (st != QueueStatus::ok) {
                    ended = st == QueueStatus::closed;
                    break;
                }
                if (r.profile) in_wait_ms.push_back(r.clock.now_ms() - env.handed_ms);
                call(&env.item);
                if (r.gate) r.gate->done(idx);
            }
        }
        if (ended && !r.stop.load(std::memory_order_acquire)) {
            call(nullptr);
            if (out) out->close();
        }
    } catch (const Stopped &) {
        // The run is stopping; whoever stopped it reported why.
    } catch (const SinkFailure &f) {
        r.fail("sink", f.error);
    } catch (...) {
        // Thrown while the run was already stopping: the stop's echo (an interrupted engine
        // call, Stage::interrupt), whose reason is recorded (an error) or is the cancellation.
        if (!r.stop.load(std::memory_order_acquire)) r.fail(rec.name, std::current_exception());
    }
    prof::set_thread_profile(nullptr);
    finished_ms = r.clock.now_ms();
    r.clock.actor_exit();
    {
        std::lock_guard lock(r.mu);
        ++r.n_done;
    }
    r.done_cv.notify_all();
}

[[noreturn]] void rethrow_named(const std::string &stage, std::exception_ptr e) {
    try {
        std::rethrow_exception(e);
    } catch (const Error &x) {
        throw Error(x.kind(), "stage '" + stage + "' failed: " + x.what());
    } catch (const std::exception &x) {
        throw Error(ErrorKind::Runtime, "stage '" + stage + "' failed: " + x.what());
    } catch (...) {
        throw Error(ErrorKind::Runtime, "stage '" + stage + "' failed with an unknown exception");
    }
}

}  // namespace

RunResult run_pipeline(const std::vector<Stage *> &stages, Item request, const Sink &sink,
                       const PipelineConfig &config) {
    if (stages.empty()) throw_usage("pipeline: no stages");
    config.validate(stages.size());
    std::set<std::string> names;
    for (size_t i = 0; i < stages.size(); ++i) {
        if (!stages[i]) throw_usage("pipeline: stage " + std::to_string(i) + " is null");
        const auto &name = stages[i]->spec().name;
        if (name.empty()) throw_usage("pipeline: stage " + std::to_string(i) + " has no name");
        if (!names.insert(name).second) throw_usage("pipeline: two stages are named '" + name + "'");
    }
    prof::Clock &clock = config.clock ? *config.clock : prof::default_clock();
    Run r(config, clock, config.profile && prof::kCompiledIn, sink);
    r.n = stages.size();

    RunResult result;
    result.schedule = config.schedule;
    for (size_t i = 0; i + 1 < r.n; ++i) {
        int d = config.depths.empty() ? PipelineConfig::kDefaultDepth : config.depths[i];
        if (config.schedule == Schedule::lockstep) d = 1;
        if (config.schedule == Schedule::sequential) d = 0;
        result.depths.push_back(d);
        r.queues.push_back(std::make_unique<Queue>(static_cast<size_t>(d), clock));
        r.queues.back()->record_depth(r.profile);
    }
    if (config.schedule == Schedule::lockstep) r.gate = std::make_unique<LockstepGate>(r.n, clock);
    for (size_t i = 0; i < r.n; ++i) {
        auto w = std::make_unique<Worker>();
        w->run = &r;
        w->idx = i;
        w->stage = stages[i];
        w->in = i > 0 ? r.queues[i - 1].get() : nullptr;
        w->out = i + 1 < r.n ? r.queues[i].get() : nullptr;
        const StageSpec &spec = stages[i]->spec();
        w->rec.name = spec.name;
        w->rec.n_threads = spec.n_threads;
        w->rec.cpus_requested = spec.cpus;
        w->rec.numa_node = spec.numa_node;
        w->rec.device = spec.device;
        r.workers.push_back(std::move(w));
    }

    const double t0 = clock.now_ms();
    clock.add_actors(static_cast<int>(r.n));
    std::vector<std::thread> threads;
    threads.reserve(r.n);
    try {
        for (size_t i = 0; i < r.n; ++i) {
            Worker *w = r.workers[i].get();
            Item req = i == 0 ? std::move(request) : Item{};
            threads.emplace_back([w, req = std::move(req)]() mutable { w->main(std::move(req)); });
        }
    } catch (...) {  // could not start a thread: stop the ones that run
        r.stop_all();
        for (size_t i = threads.size(); i < r.n; ++i) clock.actor_exit();
        for (auto &t : threads) t.join();
        throw_setup("pipeline: cannot start a worker thread");
    }

    {
        const auto poll = std::chrono::duration<double, std::milli>(config.cancel_poll_ms);
        std::unique_lock lock(r.mu);
        while (r.n_done < r.n) {
            r.done_cv.wait_for(lock, poll);
            if (config.cancel && config.cancel->cancelled() && !r.stop.load()) {
                result.cancelled = true;
                lock.unlock();
                r.stop_all();
                lock.lock();
            }
        }
    }
    // A token tripped while the run was in progress, but the stages had all ended before a
    // poll saw it (a stage that trips it and then stops at once): still a cancelled run.
    if (config.cancel && config.cancel->cancelled()) result.cancelled = true;
    for (auto &t : threads) t.join();

    if (r.error) rethrow_named(r.error_stage, r.error);

    prof::RunRecord &rec = result.record;
    rec.t0_ms = t0;
    rec.end_ms = t0;
    rec.profiled = r.profile;
    for (size_t i = 0; i < r.n; ++i) {
        Worker &w = *r.workers[i];
        rec.end_ms = std::max(rec.end_ms, w.finished_ms);
        if (w.in) {
            QueueStats qs = w.in->stats();
            w.rec.get_wait_ms = qs.get_wait_ms;
            prof::QueueRecord q;
            q.name = "q" + std::to_string(i);
            q.from = stages[i - 1]->spec().name;
            q.to = w.rec.name;
            q.capacity = w.in->capacity();
            q.max_depth = qs.max_depth;
            q.n_items = static_cast<int64_t>(qs.n_put);
            q.wait_ms = std::move(w.in_wait_ms);
            q.depth = w.in->depth_log();
            rec.queues.push_back(std::move(q));
        }
        w.rec.substage_names = std::move(w.tp.names);
        w.rec.substages = std::move(w.tp.samples);
        rec.stages.push_back(std::move(w.rec));
        if (i + 1 == r.n) rec.chunks = std::move(w.chunks);
    }
    prof::rebase(rec);  // times from the request, so run k of a bench reads like a lone run
    result.metrics = prof::compute_metrics(rec, config.jitter_ms);
    return result;
}

nlohmann::json to_json(const RunResult &r) {
    return {{"schedule", to_string(r.schedule)},
            {"depths", r.depths},
            {"cancelled", r.cancelled},
            {"profile_compiled", prof::kCompiledIn},
            {"metrics", prof::to_json(r.metrics)},
            {"run", prof::to_json(r.record)}};
}

}  // namespace rtf::pipe
