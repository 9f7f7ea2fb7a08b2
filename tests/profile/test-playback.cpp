#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "profile/playback.h"

using namespace rtf::prof;

// Chunks of 20 ms arriving every 30 ms from 60 ms: 60 90 120 150 180.
TEST(Playback, GapsWithoutJitterBuffer) {
    auto s = simulate_playback({60, 90, 120, 150, 180}, {20, 20, 20, 20, 20}, 0);
    // plays 60-80, dry until 90 (10), 90-110, dry until 120 (10), ... 4 gaps of 10 ms
    EXPECT_EQ(s.count, 4);
    EXPECT_DOUBLE_EQ(s.total_ms, 40);
    ASSERT_EQ(s.gaps.size(), 4u);
    EXPECT_EQ(s.gaps[0].chunk, 1);
    EXPECT_DOUBLE_EQ(s.gaps[0].start_ms, 80);
    EXPECT_DOUBLE_EQ(s.gaps[0].length_ms, 10);
    EXPECT_DOUBLE_EQ(s.playback_start_ms, 60);
    EXPECT_DOUBLE_EQ(s.playback_end_ms, 200);
}

TEST(Playback, JitterBufferAbsorbsGaps) {
    // start 80: 80-100; c1 at 90 ok 100-120; c2 at 120 = end, not late: 120-140;
    // c3 at 150 > 140: gap 10, 150-170; c4 at 180 > 170: gap 10.
    auto s = simulate_playback({60, 90, 120, 150, 180}, {20, 20, 20, 20, 20}, 20);
    EXPECT_EQ(s.count, 2);
    EXPECT_DOUBLE_EQ(s.total_ms, 20);
    auto t = simulate_playback({60, 90, 120, 150, 180}, {20, 20, 20, 20, 20}, 40);
    EXPECT_EQ(t.count, 0);
    EXPECT_DOUBLE_EQ(t.total_ms, 0);
    EXPECT_DOUBLE_EQ(t.playback_end_ms, 200);
}

TEST(Playback, FastEnoughNeverStarves) {
    auto s = simulate_playback({300, 310, 320}, {1000, 1000, 1000}, 0);
    EXPECT_EQ(s.count, 0);
    EXPECT_DOUBLE_EQ(s.playback_end_ms, 3300);
    EXPECT_EQ(simulate_playback({}, {}, 0).count, 0);
}

TEST(Playback, BadInputIsUsageError) {
    EXPECT_THROW(simulate_playback({1, 2}, {1}, 0), rtf::Error);
    EXPECT_THROW(simulate_playback({1}, {-1}, 0), rtf::Error);
    EXPECT_THROW(simulate_playback({1}, {1}, -5), rtf::Error);
    EXPECT_THROW(simulate_playback({5, 4}, {1, 1}, 0), rtf::Error);
    auto j = to_json(simulate_playback({0, 50}, {10, 10}, 0));
    EXPECT_EQ(j["count"], 1);
    EXPECT_EQ(j["gaps"][0]["chunk"], 1);
}

// gapless_start_ms (issue 30 §4): the wait before playback after which no gap follows.
TEST(Playback, GaplessStartIsTheSmallestBufferWithoutGaps) {
    // chunk 1 due at 1000 (arrival 0 + 1000 played) arrives at 1500: 500 ms late; chunk 2 due
    // at 2000, arrives 1600: in time.
    const std::vector<double> a = {0, 1500, 1600}, d = {1000, 1000, 1000};
    EXPECT_DOUBLE_EQ(min_startup_buffer_ms(a, d), 500);
    EXPECT_DOUBLE_EQ(gapless_start_ms(a, d), 500);
    // The definition, checked against the simulation: that buffer gives no gap, less gives one.
    EXPECT_EQ(simulate_playback(a, d, 500).count, 0);
    EXPECT_EQ(simulate_playback(a, d, 499).count, 1);
    // Lateness that accumulates over chunks is the worst one, not the first.
    const std::vector<double> b = {200, 1300, 2500, 3700}, e = {1000, 1000, 1000, 1000};
    EXPECT_DOUBLE_EQ(min_startup_buffer_ms(b, e), 500);  // chunk 3: due 3200, arrives 3700
    EXPECT_DOUBLE_EQ(gapless_start_ms(b, e), 700);
    EXPECT_EQ(simulate_playback(b, e, 500).count, 0);
    EXPECT_GT(simulate_playback(b, e, 450).count, 0);
    // Never starving: the first arrival itself.
    EXPECT_DOUBLE_EQ(gapless_start_ms({300, 310, 320}, {1000, 1000, 1000}), 300);
    EXPECT_DOUBLE_EQ(gapless_start_ms({}, {}), 0);
    EXPECT_THROW(gapless_start_ms({5, 4}, {1, 1}), rtf::Error);
}
