#pragma once
// AdmissionGate — which request gets a slot (an engine set), which waits, which is refused.
//
//   AdmissionGate gate(2 /*slots*/, 4 /*queue*/);
//   auto t = gate.acquire(30000 /*ms*/);
//   if (t.outcome == Admission::Admitted) { speak on slot t.lease->slot(); }   // lease frees it
//
// First come, first served: a waiting request gets the next free slot in arrival order
// (a ticket queue), so a burst cannot starve an early request. A request that finds
// `max_queue` others already waiting is refused at once (QueueFull -> HTTP 429); one whose
// wait runs out is refused then (TimedOut -> HTTP 503). close() refuses every waiter and
// all later requests (Closed): the server is stopping. A waiter whose `gone` test turns true
// (its client hung up: connection-watch.h) leaves the queue within ~50 ms (Abandoned).
// Thread-safe.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace rtf::serve {

enum class Admission { Admitted, QueueFull, TimedOut, Closed, Abandoned };
const char *to_string(Admission a);

class AdmissionGate {
public:
    // Lease of one slot; the slot is free again when the lease is destroyed.
    class Lease {
    public:
        Lease(AdmissionGate &g, int slot) : gate_(g), slot_(slot) {}
        ~Lease() { gate_.release(slot_); }
        Lease(const Lease &) = delete;
        Lease &operator=(const Lease &) = delete;
        int slot() const { return slot_; }

    private:
        AdmissionGate &gate_;
        int slot_;
    };
    struct Ticket {
        Admission outcome = Admission::Closed;
        std::unique_ptr<Lease> lease;  // set when Admitted
        double waited_ms = 0;
    };

    AdmissionGate(int n_slots, int max_queue);
    // `gone` (may be empty) is called under the gate's lock: it must only read a flag.
    Ticket acquire(double timeout_ms, const std::function<bool()> &gone = {});
    void close();
    int active() const;
    int queued() const;
    int slots() const { return n_slots_; }
    // Called (under no lock of the caller) after every change: active, queued.
    void on_change(std::function<void(int, int)> fn);

private:
    void release(int slot);
    void notify_locked(std::unique_lock<std::mutex> &l);

    const int n_slots_, max_queue_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::vector<int> free_;          // free slot ids
    std::deque<uint64_t> waiting_;   // tickets in arrival order
    uint64_t next_ticket_ = 0;
    bool closed_ = false;
    std::function<void(int, int)> on_change_;
};

}  // namespace rtf::serve
