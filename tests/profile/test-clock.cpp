#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "profile/clock.h"

using namespace rtf::prof;

TEST(VirtualClock, JumpsToEarliestDeadlineWhenAllActorsSleep) {
    VirtualClock c;
    std::atomic<bool> stop{false};
    std::vector<double> woke(3);
    c.add_actors(3);
    std::vector<std::thread> ts;
    for (int i = 0; i < 3; ++i) {
        ts.emplace_back([&, i] {
            // actor i sleeps 10*(i+1) twice
            for (int k = 0; k < 2; ++k) EXPECT_TRUE(c.sleep_until_ms(c.now_ms() + 10.0 * (i + 1), stop));
            woke[static_cast<size_t>(i)] = c.now_ms();
            c.actor_exit();
        });
    }
    for (auto &t : ts) t.join();
    EXPECT_DOUBLE_EQ(woke[0], 20);
    EXPECT_DOUBLE_EQ(woke[1], 40);
    EXPECT_DOUBLE_EQ(woke[2], 60);
    EXPECT_DOUBLE_EQ(c.now_ms(), 60);
}

TEST(VirtualClock, StopWakesSleepers) {
    VirtualClock c;
    std::atomic<bool> stop{false};
    c.add_actors(2);  // the second actor never sleeps, so time cannot advance
    bool result = true;
    std::thread t([&] {
        result = c.sleep_until_ms(1000, stop);
        c.actor_exit();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stop = true;
    c.wake_all();
    t.join();
    EXPECT_FALSE(result);
    EXPECT_DOUBLE_EQ(c.now_ms(), 0);
    c.actor_exit();
}

TEST(SteadyClock, SleepsAndStops) {
    SteadyClock c;
    std::atomic<bool> stop{false};
    double t0 = c.now_ms();
    EXPECT_TRUE(c.sleep_until_ms(t0 + 2, stop));
    EXPECT_GE(c.now_ms() - t0, 2.0);
    stop = true;
    EXPECT_FALSE(c.sleep_until_ms(c.now_ms() + 10000, stop));  // returns at once
}
