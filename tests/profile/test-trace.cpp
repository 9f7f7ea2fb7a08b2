#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "profile/metrics.h"
#include "profile/trace.h"

using namespace rtf::prof;
using nlohmann::json;

namespace {
RunRecord two_stage_run() {
    RunRecord r;
    r.t0_ms = 10;
    StageRecord a, b;
    a.name = "tts";
    a.events = {{10, 40, 0, 0, 0}, {40, 70, 0, 1, 0}};
    b.name = "t2w";
    b.events = {{40, 60, 0, 0, 0}, {70, 90, 1, 1, 0}};
    b.substage_names = {"t2w.vocoder_ms", "t2w.frames"};
    b.substages = {{0, 45, 10, 0}, {1, -1, 50, 1}};
    r.stages = {a, b};
    QueueRecord q;
    q.name = "q1";
    q.from = "tts";
    q.to = "t2w";
    q.depth = {{40, 1}, {40, 0}, {70, 1}, {70, 0}};
    r.queues = {q};
    r.chunks = {{0, 60, 20, {0, 0}}, {1, 90, 20, {1, 1}}};
    return r;
}
}  // namespace

TEST(Trace, ChromeTraceEventStructure) {
    RunRecord r = two_stage_run();
    Metrics m = compute_metrics(r, 0);
    json t = chrome_trace(r, &m.starvation);
    ASSERT_TRUE(t["traceEvents"].is_array());
    std::map<int, std::string> thread_names;
    int x_stage = 0, counters = 0, starved = 0;
    for (const auto &e : t["traceEvents"]) {
        ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name"));
        std::string ph = e["ph"];
        if (ph == "M" && e["name"] == "thread_name") thread_names[e["tid"]] = e["args"]["name"];
        if (ph == "X") {
            ASSERT_TRUE(e["ts"].is_number() && e["dur"].is_number());
            EXPECT_GE(e["dur"].get<double>(), 0);
            if (e.value("cat", "") == "stage") ++x_stage;
            if (e["name"] == "starved") {
                ++starved;
                EXPECT_DOUBLE_EQ(e["ts"].get<double>(), (80 - 10) * 1000.0);   // dry at 80 ms
                EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 10 * 1000.0);
            }
            if (e["name"] == "t2w.vocoder_ms") {
                EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 35000.0);
            }
        }
        if (ph == "C") {
            ++counters;
            EXPECT_TRUE(e["args"].contains("depth"));
        }
    }
    EXPECT_EQ(thread_names[1], "tts");
    EXPECT_EQ(thread_names[2], "t2w");
    EXPECT_EQ(thread_names[3], "playback");
    EXPECT_EQ(x_stage, 4);
    EXPECT_EQ(counters, 4);
    EXPECT_EQ(starved, 1);  // chunk 1 arrives at 90, chunk 0 ran out at 80
}

TEST(Trace, WritesParseableFileAndNamesBadPath) {
    std::string path = ::testing::TempDir() + "rtf-trace-test.json";
    write_trace_file(chrome_trace(two_stage_run(), nullptr), path);
    std::ifstream f(path);
    json back = json::parse(f);
    EXPECT_TRUE(back.contains("traceEvents"));
    std::remove(path.c_str());
    try {
        write_trace_file(json::object(), "/nonexistent-dir/x/trace.json");
        FAIL() << "expected an error";
    } catch (const rtf::Error &e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x/trace.json"), std::string::npos);
    }
}
