#pragma once
// rtf::prof::Clock — the time source of a pipeline run, so timing logic can be tested on
// a virtual clock with hand-computed results (STYLE.md: "mock clocks for timing logic").
//
//   SteadyClock   real time (std::chrono::steady_clock), ms since the clock was created.
//   VirtualClock  discrete-event time: now_ms() only moves when every registered actor
//                 (pipeline worker thread) is asleep in sleep_until_ms() or blocked
//                 (on_block()), and then it jumps to the earliest wake-up deadline.
//                 A stage that "costs" 30 ms calls sleep_until_ms(now + 30) and the run
//                 takes no real time; timestamps are exact.
//
// Contract for blocking code (queues, gates) so a VirtualClock never advances while a
// woken thread has not run yet: the thread that is about to wait calls on_block(); the
// thread that makes its condition true calls on_unblock() ONCE on the waiter's behalf
// (the waiter does not call it itself). SteadyClock ignores both.
//
// Thread-safety: all members may be called from any thread.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace rtf::prof {

class Clock {
public:
    virtual ~Clock() = default;
    // Milliseconds since this clock's epoch; monotonic.
    virtual double now_ms() const = 0;
    // Waits until now_ms() >= deadline_ms or `stop` is true (checked after every wake_all()).
    // Returns false when it returned because of `stop`.
    virtual bool sleep_until_ms(double deadline_ms, const std::atomic<bool> &stop) = 0;
    // Wakes every sleeper so it re-checks its `stop` flag.
    virtual void wake_all() = 0;
    // Actor bookkeeping for discrete-event clocks (see the contract above).
    virtual void add_actors(int /*n*/) {}
    virtual void actor_exit() {}
    virtual void on_block() {}
    virtual void on_unblock() {}
    // True when time is simulated (busy-type costs then sleep instead of spinning).
    virtual bool is_virtual() const { return false; }
};

class SteadyClock final : public Clock {
public:
    SteadyClock() : epoch_(std::chrono::steady_clock::now()) {}
    double now_ms() const override {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - epoch_).count();
    }
    bool sleep_until_ms(double deadline_ms, const std::atomic<bool> &stop) override;
    void wake_all() override;

private:
    std::chrono::steady_clock::time_point epoch_;
    std::mutex mu_;
    std::condition_variable cv_;
};

// A process-wide SteadyClock (the default clock of queues and pipelines).
Clock &default_clock();

// Discrete-event clock. Register the actors before they start (add_actors) and call
// actor_exit() when each one ends. If every actor is blocked and none sleeps, time stands
// still (that is a deadlock in the code under test, and the test's timeout reports it).
class VirtualClock final : public Clock {
public:
    explicit VirtualClock(double start_ms = 0.0) : now_(start_ms) {}
    double now_ms() const override;
    bool sleep_until_ms(double deadline_ms, const std::atomic<bool> &stop) override;
    void wake_all() override;
    void add_actors(int n) override;
    void actor_exit() override;
    void on_block() override;
    void on_unblock() override;
    bool is_virtual() const override { return true; }

private:
    void advance_locked();  // jumps to the earliest deadline when no actor is running

    mutable std::mutex mu_;
    std::condition_variable cv_;
    double now_;
    int running_ = 0;                // actors neither sleeping nor blocked
    std::vector<double> sleepers_;   // deadlines of sleeping actors (multiset)
    unsigned generation_ = 0;        // bumped by wake_all()
};

}  // namespace rtf::prof
