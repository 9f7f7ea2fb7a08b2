#pragma once
// The profiler: sub-stage timers and values recorded from a stage's own thread.
//
//   void T2wStage::process(Item &&in, Emitter &out) {
//       { RTF_PROFILE_SCOPE("t2w.token2mel_ms"); mel = token2mel(in); }
//       { RTF_PROFILE_SCOPE("t2w.vocoder_ms");   pcm = vocoder(mel); }
//       rtf::prof::record("t2w.frames", n_frames);   // a value, not a duration
//       out.emit(...);
//   }
//
// Switches:
//   compile time  CMake option RTF_PROFILE (defines RTF_PROFILE=1 for users of
//                 rtf_profile). Off: RTF_PROFILE_SCOPE compiles to nothing and record()
//                 is an empty inline function.
//   run time      a sample is kept only while the calling thread has a ThreadProfile
//                 installed; the pipeline installs one on each stage thread only when its
//                 config has profile = true. Otherwise the cost is one thread-local load.
//
// Names: use docs/metrics.md's names (`llm.prefill_ms`, `llm.ms_per_token`, `tts.ms_per_token`,
// `t2w.token2mel_ms`, `t2w.vocoder_ms`); they appear verbatim in the metrics JSON with
// p50/p95/p99/max. Samples attach to the stage's current item (its open StageEvent).
// Thread-safety: a ThreadProfile belongs to one thread; record()/scopes touch only it.
#include <string>
#include <string_view>
#include <vector>

#include "profile/clock.h"
#include "profile/run-record.h"

namespace rtf::prof {

#if defined(RTF_PROFILE) && RTF_PROFILE
inline constexpr bool kCompiledIn = true;
#else
inline constexpr bool kCompiledIn = false;
#endif

// Per-thread sample buffer; set `clock` before installing it. `current_event` is the
// index the stage's next StageEvent will get; the pipeline keeps it up to date.
struct ThreadProfile {
    const Clock *clock = nullptr;
    int current_event = 0;
    std::vector<std::string> names;
    std::vector<SubstageSample> samples;

    int intern(std::string_view name);
};

// Installs `p` for the calling thread (nullptr: none); returns the previous one.
ThreadProfile *set_thread_profile(ThreadProfile *p) noexcept;
ThreadProfile *thread_profile() noexcept;

#if defined(RTF_PROFILE) && RTF_PROFILE
// Records a value for the current item of the calling thread's stage (no-op when none).
void record(std::string_view name, double value);

// Records the scope's duration in ms under `name` (a string literal or other string that
// outlives the scope).
class ScopedTimer {
public:
    explicit ScopedTimer(std::string_view name) noexcept : p_(thread_profile()), name_(name) {
        if (p_ && !p_->clock) p_ = nullptr;  // a profile without a clock cannot time scopes
        if (p_) start_ = p_->clock->now_ms();
    }
    ~ScopedTimer();
    ScopedTimer(const ScopedTimer &) = delete;
    ScopedTimer &operator=(const ScopedTimer &) = delete;

private:
    ThreadProfile *p_;
    std::string_view name_;
    double start_ = 0;
};
#define RTF_PROFILE_CONCAT2(a, b) a##b
#define RTF_PROFILE_CONCAT(a, b) RTF_PROFILE_CONCAT2(a, b)
#define RTF_PROFILE_SCOPE(name) ::rtf::prof::ScopedTimer RTF_PROFILE_CONCAT(rtf_prof_scope_, __LINE__)(name)
#else
inline void record(std::string_view, double) {}
#define RTF_PROFILE_SCOPE(name) ((void)0)
#endif

}  // namespace rtf::prof
