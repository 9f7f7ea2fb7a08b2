#pragma once
// rtf::pipe::BoundedQueue<T> — the hand-off between two stages.
//
//   BoundedQueue<Item> q(16);            // capacity 16; 0 = unbounded
//   producer:  if (q.put(std::move(x)) != QueueStatus::ok) stop;   // blocks while full
//              q.close();                                          // end of stream
//   consumer:  T v; while (q.get(v) == QueueStatus::ok) use(v);    // closed once drained
//   anyone:    q.cancel();               // every waiter returns cancelled, now and later
//
// Semantics: FIFO. put() blocks while size() == capacity; on a closed or cancelled queue it
// returns that status and leaves `v` untouched (not moved from). get() blocks while empty;
// after close() it drains the remaining items, then returns closed; after cancel() it
// returns cancelled at once (remaining items are dropped with the queue). wait_closed()
// blocks until close() (true) or cancel() (false): the sequential schedule's gate.
//
// Statistics: puts/gets, max depth, and the time producers/consumers spent blocked (read
// from the clock only when a call actually blocks, so the fast path costs one mutex).
// With record_depth(true) every depth change is logged as (clock time, depth) for the
// trace's counter tracks.
//
// Virtual time (profile/clock.h): a waiter calls clock.on_block() and whoever makes its
// condition true hands it a credit and calls clock.on_unblock() on its behalf, so a
// VirtualClock cannot advance between the wake-up and the waiter running. Waiting on
// credits (not on the condition) also makes spurious wake-ups harmless.
//
// Thread-safety: every member is safe from any thread; any number of producers/consumers.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "profile/clock.h"

namespace rtf::pipe {

enum class QueueStatus { ok, closed, cancelled };

struct QueueStats {
    size_t n_put = 0, n_get = 0, max_depth = 0;
    double put_wait_ms = 0;  // producers blocked on a full queue
    double get_wait_ms = 0;  // consumers blocked on an empty queue
};

template <class T>
class BoundedQueue {
public:
    explicit BoundedQueue(size_t capacity, prof::Clock &clock = prof::default_clock())
        : capacity_(capacity), clock_(clock) {}
    BoundedQueue(const BoundedQueue &) = delete;
    BoundedQueue &operator=(const BoundedQueue &) = delete;

    [[nodiscard]] QueueStatus put(T &&v) {
        std::unique_lock lock(mu_);
        if (capacity_ != 0 && items_.size() >= capacity_ && !closed_ && !cancelled_) {
            double t = clock_.now_ms();
            while (items_.size() >= capacity_ && !closed_ && !cancelled_) wait(lock, put_waiters_, put_credits_, put_cv_);
            stats_.put_wait_ms += clock_.now_ms() - t;
        }
        if (cancelled_) return QueueStatus::cancelled;
        if (closed_) return QueueStatus::closed;
        items_.push_back(std::move(v));
        ++stats_.n_put;
        if (items_.size() > stats_.max_depth) stats_.max_depth = items_.size();
        log_depth();
        wake(get_waiters_, get_credits_, get_cv_, 1);
        return QueueStatus::ok;
    }

    [[nodiscard]] QueueStatus get(T &out) {
        std::unique_lock lock(mu_);
        if (items_.empty() && !closed_ && !cancelled_) {
            double t = clock_.now_ms();
            while (items_.empty() && !closed_ && !cancelled_) wait(lock, get_waiters_, get_credits_, get_cv_);
            stats_.get_wait_ms += clock_.now_ms() - t;
        }
        if (cancelled_) return QueueStatus::cancelled;
        if (items_.empty()) return QueueStatus::closed;
        out = std::move(items_.front());
        items_.pop_front();
        ++stats_.n_get;
        log_depth();
        wake(put_waiters_, put_credits_, put_cv_, 1);
        return QueueStatus::ok;
    }

    // Blocks until close() (returns true) or cancel() (returns false).
    [[nodiscard]] bool wait_closed() {
        std::unique_lock lock(mu_);
        if (!closed_ && !cancelled_) {
            double t = clock_.now_ms();
            while (!closed_ && !cancelled_) wait(lock, get_waiters_, get_credits_, get_cv_);
            stats_.get_wait_ms += clock_.now_ms() - t;
        }
        return !cancelled_;
    }

    void close() {
        std::lock_guard lock(mu_);
        closed_ = true;
        wake_all_locked();
    }

    void cancel() {
        std::lock_guard lock(mu_);
        cancelled_ = true;
        wake_all_locked();
    }

    void record_depth(bool on) {
        std::lock_guard lock(mu_);
        record_depth_ = on;
    }

    size_t size() const {
        std::lock_guard lock(mu_);
        return items_.size();
    }
    size_t capacity() const noexcept { return capacity_; }
    QueueStats stats() const {
        std::lock_guard lock(mu_);
        return stats_;
    }
    std::vector<std::pair<double, int>> depth_log() const {
        std::lock_guard lock(mu_);
        return depth_log_;
    }

private:
    void wait(std::unique_lock<std::mutex> &lock, size_t &waiters, size_t &credits, std::condition_variable &cv) {
        ++waiters;
        clock_.on_block();
        cv.wait(lock, [&] { return credits > 0; });
        --credits;
    }
    // Hands up to `n` credits to waiters (accounting the clock for each) and wakes them.
    void wake(size_t &waiters, size_t &credits, std::condition_variable &cv, size_t n) {
        size_t k = waiters < n ? waiters : n;
        if (k == 0) return;
        waiters -= k;
        credits += k;
        for (size_t i = 0; i < k; ++i) clock_.on_unblock();
        if (k == 1) cv.notify_one(); else cv.notify_all();
    }
    void wake_all_locked() {
        wake(put_waiters_, put_credits_, put_cv_, put_waiters_);
        wake(get_waiters_, get_credits_, get_cv_, get_waiters_);
    }
    void log_depth() {
        if (record_depth_) depth_log_.emplace_back(clock_.now_ms(), static_cast<int>(items_.size()));
    }

    const size_t capacity_;
    prof::Clock &clock_;
    mutable std::mutex mu_;
    std::condition_variable put_cv_, get_cv_;
    std::deque<T> items_;
    bool closed_ = false, cancelled_ = false, record_depth_ = false;
    size_t put_waiters_ = 0, put_credits_ = 0, get_waiters_ = 0, get_credits_ = 0;
    QueueStats stats_;
    std::vector<std::pair<double, int>> depth_log_;
};

}  // namespace rtf::pipe
