#include "profile/profiler.h"

namespace rtf::prof {

namespace {
thread_local ThreadProfile *t_profile = nullptr;
}

int ThreadProfile::intern(std::string_view name) {
    // Linear scan: a stage records a handful of distinct names.
    for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == name) return static_cast<int>(i);
    names.emplace_back(name);
    return static_cast<int>(names.size() - 1);
}

ThreadProfile *set_thread_profile(ThreadProfile *p) noexcept {
    ThreadProfile *old = t_profile;
    t_profile = p;
    return old;
}

ThreadProfile *thread_profile() noexcept { return t_profile; }

#if defined(RTF_PROFILE) && RTF_PROFILE
void record(std::string_view name, double value) {
    ThreadProfile *p = t_profile;
    if (!p) return;
    p->samples.push_back({p->intern(name), -1.0, value, p->current_event});
}

ScopedTimer::~ScopedTimer() {
    if (!p_) return;
    double end = p_->clock->now_ms();
    try {
        p_->samples.push_back({p_->intern(name_), start_, end - start_, p_->current_event});
    } catch (...) {
        // Out of memory while profiling: drop the sample rather than terminate in a destructor.
    }
}
#endif

}  // namespace rtf::prof
