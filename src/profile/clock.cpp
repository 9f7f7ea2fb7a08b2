#include "profile/clock.h"

#include <algorithm>

namespace rtf::prof {

Clock &default_clock() {
    static SteadyClock clock;
    return clock;
}

bool SteadyClock::sleep_until_ms(double deadline_ms, const std::atomic<bool> &stop) {
    auto tp = epoch_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double, std::milli>(deadline_ms));
    std::unique_lock lock(mu_);
    // The predicate runs under mu_ and wake_all() notifies under mu_: a stop set before
    // wake_all() is never missed.
    return !cv_.wait_until(lock, tp, [&] { return stop.load(std::memory_order_acquire); });
}

void SteadyClock::wake_all() {
    std::lock_guard lock(mu_);
    cv_.notify_all();
}

double VirtualClock::now_ms() const {
    std::lock_guard lock(mu_);
    return now_;
}

void VirtualClock::advance_locked() {
    if (running_ > 0 || sleepers_.empty()) return;
    now_ = *std::min_element(sleepers_.begin(), sleepers_.end());
    auto woken = std::remove_if(sleepers_.begin(), sleepers_.end(), [&](double d) { return d <= now_; });
    running_ += static_cast<int>(sleepers_.end() - woken);  // woken sleepers run again
    sleepers_.erase(woken, sleepers_.end());
    cv_.notify_all();
}

bool VirtualClock::sleep_until_ms(double deadline_ms, const std::atomic<bool> &stop) {
    std::unique_lock lock(mu_);
    if (stop.load(std::memory_order_acquire)) return false;
    if (deadline_ms <= now_) return true;
    sleepers_.push_back(deadline_ms);
    --running_;
    advance_locked();
    cv_.wait(lock, [&] { return now_ >= deadline_ms || stop.load(std::memory_order_acquire); });
    if (now_ >= deadline_ms) return true;  // advance_locked() removed our deadline and counted us
    // Stopped early: take our deadline back out and count ourselves as running.
    auto it = std::find(sleepers_.begin(), sleepers_.end(), deadline_ms);
    if (it != sleepers_.end()) sleepers_.erase(it);
    ++running_;
    return false;
}

void VirtualClock::wake_all() {
    std::lock_guard lock(mu_);
    cv_.notify_all();
}

void VirtualClock::add_actors(int n) {
    std::lock_guard lock(mu_);
    running_ += n;
}

void VirtualClock::actor_exit() {
    std::lock_guard lock(mu_);
    --running_;
    advance_locked();
}

void VirtualClock::on_block() {
    std::lock_guard lock(mu_);
    --running_;
    advance_locked();
}

void VirtualClock::on_unblock() {
    std::lock_guard lock(mu_);
    ++running_;
}

}  // namespace rtf::prof
