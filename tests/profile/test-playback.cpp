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
