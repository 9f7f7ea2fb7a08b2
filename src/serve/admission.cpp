#include "serve/admission.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace rtf::serve {

const char *to_string(Admission a) {
    switch (a) {
    case Admission::Admitted: return "admitted";
    case Admission::QueueFull: return "queue_full";
    case Admission::TimedOut: return "queue_timeout";
    case Admission::Closed: return "closed";
    case Admission::Abandoned: return "client_gone";
    }
    return "?";
}

AdmissionGate::AdmissionGate(int n_slots, int max_queue) : n_slots_(n_slots), max_queue_(max_queue) {
    if (n_slots < 1) throw_usage("AdmissionGate: at least one slot");
    if (max_queue < 0) throw_usage("AdmissionGate: max_queue must be >= 0");
    // slot 0 is handed out first (taken from the back)
    for (int i = n_slots - 1; i >= 0; --i) free_.push_back(i);
}

void AdmissionGate::on_change(std::function<void(int, int)> fn) {
    std::lock_guard<std::mutex> l(mu_);
    on_change_ = std::move(fn);
}

void AdmissionGate::notify_locked(std::unique_lock<std::mutex> &l) {
    auto fn = on_change_;
    const int a = n_slots_ - static_cast<int>(free_.size()), q = static_cast<int>(waiting_.size());
    l.unlock();
    if (fn) fn(a, q);
    l.lock();
}

AdmissionGate::Ticket AdmissionGate::acquire(double timeout_ms, const std::function<bool()> &gone) {
    const auto t0 = std::chrono::steady_clock::now();
    Ticket t;
    std::unique_lock<std::mutex> l(mu_);
    if (closed_) return t;
    auto take = [&] {
        const int slot = free_.back();
        free_.pop_back();
        t.outcome = Admission::Admitted;
        t.lease = std::make_unique<Lease>(*this, slot);
        t.waited_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        notify_locked(l);
        return std::move(t);
    };
    if (waiting_.empty() && !free_.empty()) return take();
    if (static_cast<int>(waiting_.size()) >= max_queue_) {
        t.outcome = Admission::QueueFull;
        return t;
    }
    const uint64_t me = next_ticket_++;
    waiting_.push_back(me);
    notify_locked(l);
    const auto deadline = t0 + std::chrono::duration<double, std::milli>(timeout_ms);
    auto ready = [&] { return closed_ || (!free_.empty() && waiting_.front() == me); };
    // Slices of at most 50 ms, so a waiter whose client hung up leaves the line soon (`gone`
    // has no condition variable of its own).
    bool got = false, abandoned = false;
    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) break;
        const auto until = std::min(deadline, now + std::chrono::duration<double, std::milli>(50.0));
        if (cv_.wait_until(l, std::chrono::time_point_cast<std::chrono::steady_clock::duration>(until), ready)) {
            got = true;
            break;
        }
        if (gone && gone()) {
            abandoned = true;
            break;
        }
    }
    if (!got) got = ready();
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), me));
    if (got && !closed_ && !abandoned) {
        cv_.notify_all();  // the next in line may find another free slot
        return take();
    }
    t.outcome = closed_ ? Admission::Closed : abandoned ? Admission::Abandoned : Admission::TimedOut;
    t.waited_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    cv_.notify_all();  // the line moved up
    notify_locked(l);
    return t;
}

void AdmissionGate::release(int slot) {
    std::unique_lock<std::mutex> l(mu_);
    free_.push_back(slot);
    cv_.notify_all();
    notify_locked(l);
}

void AdmissionGate::close() {
    std::unique_lock<std::mutex> l(mu_);
    closed_ = true;
    cv_.notify_all();
}

int AdmissionGate::active() const {
    std::lock_guard<std::mutex> l(mu_);
    return n_slots_ - static_cast<int>(free_.size());
}

int AdmissionGate::queued() const {
    std::lock_guard<std::mutex> l(mu_);
    return static_cast<int>(waiting_.size());
}

}  // namespace rtf::serve
