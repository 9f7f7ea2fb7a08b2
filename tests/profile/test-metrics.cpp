#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profile/metrics.h"

using namespace rtf::prof;

namespace {
// t0 = 100; chunks of 1000 ms leave at 400, 700, 1100, 1400 (relative 300, 600, 1000, 1300).
RunRecord sample_run() {
    RunRecord r;
    r.t0_ms = 100;
    r.end_ms = 1450;
    r.profiled = true;
    double out[] = {400, 700, 1100, 1400};
    for (int i = 0; i < 4; ++i) r.chunks.push_back({i, out[i], 1000, {}});
    StageRecord a, b;
    a.name = "llm";
    a.busy_ms = 400;
    a.events = {{100, 200, 0, 0, 0}, {200, 300, 0, 1, 0}, {300, 400, 0, 2, 0}, {400, 500, 0, 3, 0}};
    b.name = "t2w";
    b.busy_ms = 1200;
    b.events = {{100, 400, 0, 0, 0}, {400, 700, 1, 1, 0}, {700, 1000, 2, 2, 100}, {1100, 1400, 3, 3, 0}};
    b.substage_names = {"t2w.vocoder_ms"};
    b.substages = {{0, -1, 10, 0}, {0, -1, 20, 1}, {0, -1, 30, 2}};
    r.stages = {a, b};
    QueueRecord q;
    q.name = "q1";
    q.wait_ms = {0, 10, 20, 30};
    r.queues = {q};
    return r;
}
}  // namespace

TEST(Metrics, DesignDefinitionsByHand) {
    Metrics m = compute_metrics(sample_run(), 0);
    EXPECT_EQ(m.n_chunks, 4);
    EXPECT_DOUBLE_EQ(m.audio_ms, 4000);
    EXPECT_DOUBLE_EQ(m.rtf, 1300.0 / 4000.0);                // (out[n-1] - t0) / A
    EXPECT_DOUBLE_EQ(m.xrt, 4000.0 / 1300.0);
    EXPECT_DOUBLE_EQ(m.first_audio_ms, 300);                 // out[0] - t0
    EXPECT_DOUBLE_EQ(m.gapless_start_ms, 300);               // never starves: = first audio
    EXPECT_DOUBLE_EQ(m.rtf_steady, 0.3);                     // median(300, 400, 300) / 1000
    EXPECT_DOUBLE_EQ(m.stages[0].rtf_stage, 0.1);            // 400 / 4000
    EXPECT_DOUBLE_EQ(m.stages[1].rtf_stage, 0.3);            // 1200 / 4000
    EXPECT_DOUBLE_EQ(m.bound_overlap, 0.3);
    EXPECT_DOUBLE_EQ(m.bound_serial, 0.4);
    EXPECT_DOUBLE_EQ(m.pipeline_efficiency, 0.3 / (1300.0 / 4000.0));
    EXPECT_DOUBLE_EQ(m.stages[1].item_ms.max, 400);          // 300 + tail 100
    EXPECT_DOUBLE_EQ(m.stages[1].item_ms.p50, 300);
    EXPECT_EQ(m.starvation.count, 0);
    EXPECT_DOUBLE_EQ(m.wall_ms, 1350);
    ASSERT_EQ(m.substages.size(), 1u);
    EXPECT_DOUBLE_EQ(m.substages[0].second.p50, 20);
    ASSERT_EQ(m.queue_wait.size(), 1u);
    EXPECT_DOUBLE_EQ(m.queue_wait[0].second.p50, 15);
}

TEST(Metrics, JsonUsesDesignNames) {
    auto j = to_json(compute_metrics(sample_run(), 0));
    for (const char *k : {"rtf", "rtf_steady", "rtf_stage.llm", "rtf_stage.t2w", "first_audio_ms", "gapless_start_ms",
                          "xrt", "starvation", "llm.item_ms", "t2w.item_ms", "t2w.vocoder_ms", "queue_wait.q1",
                          "bound_overlap", "bound_serial", "pipeline_efficiency"}) {
        EXPECT_TRUE(j.contains(k)) << k;
    }
    EXPECT_EQ(j["starvation"]["count"], 0);
    EXPECT_TRUE(j["starvation"].contains("total_ms"));
    EXPECT_TRUE(j["queue_wait.q1"].contains("p95"));
    for (const char *k : {"p50", "p95", "p99", "max"}) EXPECT_TRUE(j["t2w.item_ms"].contains(k)) << k;
    auto rj = to_json(sample_run());
    EXPECT_EQ(rj["chunks"].size(), 4u);
    EXPECT_EQ(rj["stages"][1]["substages"][0]["name"], "t2w.vocoder_ms");
}

TEST(Metrics, NoAudioGivesNullsNotNumbers) {
    RunRecord r;
    r.stages.push_back({});
    r.stages[0].name = "x";
    Metrics m = compute_metrics(r, 0);
    EXPECT_TRUE(std::isnan(m.rtf));
    EXPECT_TRUE(std::isnan(m.rtf_steady));
    auto j = to_json(m);
    EXPECT_TRUE(j["rtf"].is_null());
    EXPECT_TRUE(j["rtf_stage.x"].is_null());
    // One chunk: rtf defined, rtf_steady not.
    r.chunks.push_back({0, 50, 100, {}});
    m = compute_metrics(r, 0);
    EXPECT_DOUBLE_EQ(m.rtf, 0.5);
    EXPECT_TRUE(std::isnan(m.rtf_steady));
}

// Issue 19: playback times from the run's own request, not from the clock's epoch (a bench
// runs k runs on one clock, so run k's t0 is far from 0).
TEST(Metrics, PlaybackTimesFromTheRunsOrigin) {
    Metrics m = compute_metrics(sample_run(), 0);
    EXPECT_DOUBLE_EQ(m.starvation.playback_start_ms, m.first_audio_ms);  // 300, not 400
    EXPECT_DOUBLE_EQ(m.starvation.playback_end_ms, 300 + 4000);
    Metrics j = compute_metrics(sample_run(), 50);
    EXPECT_DOUBLE_EQ(j.starvation.playback_start_ms, 350);
}

TEST(Metrics, RebaseMovesEveryTimeToTheRequest) {
    RunRecord r = sample_run();
    r.stages[1].substages.push_back({0, 150, 5, 0});
    r.queues[0].depth = {{120, 1}, {130, 0}};
    const Metrics before = compute_metrics(r, 0);
    rebase(r);
    EXPECT_DOUBLE_EQ(r.t0_ms, 0);
    EXPECT_DOUBLE_EQ(r.clock_origin_ms, 100);
    EXPECT_DOUBLE_EQ(r.end_ms, 1350);
    EXPECT_DOUBLE_EQ(r.chunks[0].arrival_ms, 300);
    EXPECT_DOUBLE_EQ(r.stages[0].events[0].start_ms, 0);
    EXPECT_DOUBLE_EQ(r.stages[1].events[3].end_ms, 1300);
    EXPECT_DOUBLE_EQ(r.stages[1].substages[0].start_ms, -1);  // "value only" stays so
    EXPECT_DOUBLE_EQ(r.stages[1].substages[3].start_ms, 50);
    EXPECT_DOUBLE_EQ(r.queues[0].depth[0].first, 20);
    const Metrics after = compute_metrics(r, 0);
    EXPECT_DOUBLE_EQ(after.rtf, before.rtf);
    EXPECT_DOUBLE_EQ(after.first_audio_ms, before.first_audio_ms);
    EXPECT_DOUBLE_EQ(after.starvation.playback_start_ms, before.starvation.playback_start_ms);
    rebase(r);  // idempotent
    EXPECT_DOUBLE_EQ(r.clock_origin_ms, 100);
    EXPECT_DOUBLE_EQ(r.chunks[0].arrival_ms, 300);
}
