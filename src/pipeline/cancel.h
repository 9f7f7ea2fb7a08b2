#pragma once
// CancelToken — a flag that stops a pipeline run cleanly (Ctrl-C, a deadline, the caller).
// Tripping it is async-signal-safe (a lock-free atomic store), so a SIGINT handler may do
// it; the pipeline notices within its poll interval (pipeline.h), unblocks every thread,
// runs no further items, and returns a result marked `cancelled` (no exception).
#include <atomic>

namespace rtf::pipe {

class CancelToken {
public:
    void cancel() noexcept { flag_.store(true, std::memory_order_release); }
    bool cancelled() const noexcept { return flag_.load(std::memory_order_acquire); }
    void reset() noexcept { flag_.store(false, std::memory_order_release); }

private:
    std::atomic<bool> flag_{false};
    static_assert(std::atomic<bool>::is_always_lock_free, "cancel() must be async-signal-safe");
};

// While alive, SIGINT (and SIGTERM) trip `token` instead of killing the process; a second
// SIGINT restores the default action so a stuck program can still be killed. The previous
// handlers come back on destruction. One guard at a time per process.
class SigintGuard {
public:
    explicit SigintGuard(CancelToken &token);
    ~SigintGuard();
    SigintGuard(const SigintGuard &) = delete;
    SigintGuard &operator=(const SigintGuard &) = delete;
};

}  // namespace rtf::pipe
