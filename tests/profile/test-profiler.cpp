#include <thread>

#include <gtest/gtest.h>

#include "profile/profiler.h"

using namespace rtf::prof;

TEST(Profiler, ScopesAndValuesGoToTheThreadProfile) {
    if (!kCompiledIn) GTEST_SKIP() << "profiler compiled out (RTF_PROFILE=OFF)";
    VirtualClock clock(5);
    ThreadProfile tp;
    tp.clock = &clock;
    tp.current_event = 3;
    ASSERT_EQ(set_thread_profile(&tp), nullptr);
    {
        RTF_PROFILE_SCOPE("t2w.vocoder_ms");
        record("t2w.frames", 42);
    }
    record("t2w.frames", 43);
    set_thread_profile(nullptr);
    record("t2w.frames", 44);  // no profile installed: dropped
    ASSERT_EQ(tp.samples.size(), 3u);
    EXPECT_EQ(tp.names.size(), 2u);
    EXPECT_EQ(tp.names[static_cast<size_t>(tp.samples[0].name)], "t2w.frames");
    EXPECT_EQ(tp.samples[0].start_ms, -1);
    EXPECT_EQ(tp.samples[1].name, 1);  // the scope ended after the first record()
    EXPECT_DOUBLE_EQ(tp.samples[1].start_ms, 5);
    EXPECT_DOUBLE_EQ(tp.samples[1].value, 0);
    EXPECT_EQ(tp.samples[2].event, 3);
}

// The profile is per thread: a thread without one records nothing, even while another
// thread has one installed (a global buffer would catch both).
TEST(Profiler, NothingRecordedWithoutThreadProfile) {
    if (!kCompiledIn) GTEST_SKIP() << "profiler compiled out (RTF_PROFILE=OFF)";
    VirtualClock clock(1);
    ThreadProfile tp;
    tp.clock = &clock;
    ASSERT_EQ(set_thread_profile(&tp), nullptr);
    std::thread other([] {
        EXPECT_EQ(thread_profile(), nullptr);
        { RTF_PROFILE_SCOPE("x"); }
        record("y", 1);
    });
    other.join();
    record("mine", 2);
    set_thread_profile(nullptr);
    ASSERT_EQ(tp.samples.size(), 1u);
    EXPECT_EQ(tp.names.at(static_cast<size_t>(tp.samples[0].name)), "mine");
}
