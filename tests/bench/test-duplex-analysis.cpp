// The duplex run analyzer (bench/duplex-analysis.h, spec §5.2-§5.3, R3 rules): every metric
// and rule pinned on hand-built timelines whose figures are worked out in the comments.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/duplex-analysis.h"
#include "core/error.h"
#include "profile/stats.h"
#include "report/report.h"

using namespace rtf;
using namespace rtf::bench;
using nlohmann::json;

namespace {

json frame(double push, double done, bool speak, bool ok = true, int speak_turn_id = -1) {
    return {{"user_seq", 0},        {"frame_id", 0},        {"t_push_ms", push}, {"t_done_ms", done},
            {"ok", ok},             {"is_speak", speak},    {"is_idle", false},  {"speak_turn_id", speak_turn_id},
            {"ms_decode", 0.8 * (done - push)}, {"ms_total", done - push}};
}

json chunk(double t, double duration_s, bool final, int turn) {
    return {{"t_complete_ms", t},
            {"n_samples", static_cast<int>(duration_s * 24000)},
            {"sample_rate", 24000},
            {"duration_s", duration_s},
            {"is_final", final},
            {"audio_turn_id", turn}};
}

// One speaking frame pushed at 0, decided at 100 ms; one audio turn of 1 s chunks completing
// at `times` (the reference's own test fixture shape). Interval 1000 ms.
json run(const std::vector<double> &times = {200, 1000, 1800, 2600}) {
    json r = {{"meta", {{"stream_interval_ms", 1000}, {"use_tts", true}, {"sample_rate_hint", 24000}}},
              {"frames", json::array({frame(0, 100, true, true, 0)})},
              {"audio_chunks", json::array()}};
    for (size_t i = 0; i < times.size(); ++i) r["audio_chunks"].push_back(chunk(times[i], 1.0, i + 1 == times.size(), 0));
    return r;
}

DuplexAnalysis analyze(const json &r, DuplexOptions o = {}) { return analyze_duplex(r, o); }

const Check &check(const DuplexAnalysis &a, const std::string &id) {
    for (const auto &c : a.checks)
        if (c.id == id) return c;
    throw std::runtime_error("no check " + id);
}

}  // namespace

TEST(DuplexAnalysis, PercentileIsTheSpecsLinearInterpolation) {
    // §5.2: sorted, linear interpolation at (n-1)·p/100 — prof::percentile is that method.
    EXPECT_DOUBLE_EQ(prof::percentile({4, 1, 3, 2}, 95), 3.85);  // pos 2.85: 3 + 0.85·(4-3)
    EXPECT_DOUBLE_EQ(prof::percentile({4, 1, 3, 2}, 50), 2.5);
    EXPECT_DOUBLE_EQ(prof::percentile({7}, 95), 7);
    // [1] on five frames: ms_total 100, 200, 300, 400, 1000 -> P50 300, P95 at 3.8 = 400 + 0.8·600.
    json r = run();
    r["frames"] = json::array({frame(0, 100, true, true, 0), frame(1000, 1200, false), frame(2000, 2300, false),
                               frame(3000, 3400, false), frame(4000, 5000, false)});
    auto a = analyze(r);
    ASSERT_TRUE(a.valid) << a.invalid_reason;
    EXPECT_DOUBLE_EQ(a.decision_p50_ms, 300);
    EXPECT_DOUBLE_EQ(a.decision_p95_ms, 880);
    EXPECT_DOUBLE_EQ(a.decision_max_ms, 1000);
    EXPECT_DOUBLE_EQ(a.decode_mean_ms, 0.8 * 400);
    EXPECT_EQ(check(a, "decision_latency").state, CheckState::Pass);
}

TEST(DuplexAnalysis, DecisionLatencyPassesOnlyStrictlyBelowTheInterval) {
    // ms_total 0 and 1000: P95 = 950.
    json r = run();
    r["frames"] = json::array({frame(0, 0, true, true, 0), frame(1000, 2000, false)});
    DuplexOptions o;
    o.interval_ms = 950;
    EXPECT_DOUBLE_EQ(analyze(r, o).decision_p95_ms, 950);
    EXPECT_EQ(check(analyze(r, o), "decision_latency").state, CheckState::Fail);
    EXPECT_EQ(analyze(r, o).verdict, DuplexVerdict::Fail);
    o.interval_ms = 950.5;
    EXPECT_EQ(check(analyze(r, o), "decision_latency").state, CheckState::Pass);
    // Failed frames do not count in the latency, but fail their own check.
    r["frames"][1]["ok"] = false;
    auto a = analyze(r, o);
    EXPECT_EQ(a.n_ok, 1);
    EXPECT_DOUBLE_EQ(a.decision_p95_ms, 0);
    EXPECT_EQ(check(a, "no_failed_frames").state, CheckState::Fail);
    EXPECT_EQ(a.verdict, DuplexVerdict::Fail);
}

TEST(DuplexAnalysis, IntervalFromFlagMetaOrDefault) {
    json r = run();
    EXPECT_EQ(analyze(r).interval_from, "meta");
    r["meta"]["stream_interval_ms"] = 500;
    EXPECT_DOUBLE_EQ(analyze(r).interval_ms, 500);
    DuplexOptions o;
    o.interval_ms = 2000;
    EXPECT_DOUBLE_EQ(analyze(r, o).interval_ms, 2000);
    EXPECT_EQ(analyze(r, o).interval_from, "flag");
    r["meta"].erase("stream_interval_ms");
    EXPECT_DOUBLE_EQ(analyze(r).interval_ms, 1000);
    EXPECT_EQ(analyze(r).interval_from, "default");
    r["meta"]["stream_interval_ms"] = 0;
    EXPECT_FALSE(analyze(r).valid);
    EXPECT_EQ(analyze(r).verdict, DuplexVerdict::Incomplete);
}

TEST(DuplexAnalysis, MatchingByTimeSkipsSpeakTurnsWithoutAudio) {
    // Speak turns: #0 pushed at 0, #1 at 2000 (two frames), #2 at 5000. Audio turn 0 starts at
    // 2300: #0 and #1 were both pushed before it; the latest (#1) matches, #0 had no audio.
    // Audio turn 1 starts at 5400 and matches #2.
    json r = run();
    r["frames"] = json::array({frame(0, 100, true, true, 0), frame(1000, 1100, false), frame(2000, 2100, true, true, 1),
                               frame(3000, 3100, true, true, 1), frame(4000, 4100, false), frame(5000, 5100, true, true, 2)});
    r["audio_chunks"] = json::array({chunk(2300, 1, false, 0), chunk(3000, 0.5, true, 0), chunk(5400, 1, true, 1)});
    auto a = analyze(r);
    ASSERT_TRUE(a.valid) << a.invalid_reason;
    EXPECT_EQ(a.n_speak_turns, 3);
    EXPECT_EQ(a.n_audio_turns, 2);
    ASSERT_EQ(a.pairs.size(), 2u);
    EXPECT_EQ(a.pairs[0].label, "speak#1");
    EXPECT_EQ(a.pairs[0].audio_turn, 0);
    EXPECT_EQ(a.pairs[1].label, "speak#2");
    EXPECT_EQ(a.unmatched_speak, std::vector<std::string>{"speak#0"});
    EXPECT_TRUE(a.unmatched_audio.empty());
    // R3: a speak turn without audio leaves the TTS side incomplete; the checks it could run pass.
    EXPECT_EQ(a.tts_status, TtsStatus::Incomplete);
    EXPECT_EQ(check(a, "first_audio").state, CheckState::Skip);
    EXPECT_EQ(a.verdict, DuplexVerdict::Incomplete);
    EXPECT_EQ(exit_code(a.verdict), 3);
    // Without speak_turn_id the label is the turn's index.
    for (auto &f : r["frames"]) f.erase("speak_turn_id");
    EXPECT_EQ(analyze(r).unmatched_speak, std::vector<std::string>{"speak@0"});
}

TEST(DuplexAnalysis, AudioBeforeAnySpeakTurnIsUnmatched) {
    json r = run({200});
    r["frames"] = json::array({frame(0, 100, false), frame(1000, 1100, true, true, 0)});
    r["audio_chunks"].push_back(chunk(1300, 1, true, 1));
    auto a = analyze(r);
    EXPECT_EQ(a.unmatched_audio, std::vector<int>{0});
    ASSERT_EQ(a.pairs.size(), 1u);
    EXPECT_EQ(a.pairs[0].audio_turn, 1);
    EXPECT_EQ(a.verdict, DuplexVerdict::Incomplete);
}

TEST(DuplexAnalysis, FirstAudioCountsPlayableChunksAndTheStartupBuffer) {
    auto a = analyze(run());
    ASSERT_EQ(a.pairs.size(), 1u);
    EXPECT_DOUBLE_EQ(a.pairs[0].first_audio_e2e_ms, 200);  // 200 - push 0
    EXPECT_DOUBLE_EQ(a.pairs[0].first_audio_tts_ms, 100);  // 200 - done 100
    EXPECT_EQ(a.verdict, DuplexVerdict::Pass);
    DuplexOptions o;
    o.startup_buffer_ms = 700;  // 200 + 700 = 900 < 1000
    EXPECT_DOUBLE_EQ(analyze(run(), o).first_audio_e2e_p95_ms, 900);
    EXPECT_EQ(check(analyze(run(), o), "first_audio").state, CheckState::Pass);
    o.startup_buffer_ms = 800;  // 1000: not < 1000
    EXPECT_EQ(check(analyze(run(), o), "first_audio").state, CheckState::Fail);
    EXPECT_EQ(analyze(run(), o).verdict, DuplexVerdict::Fail);
    // A zero-length chunk first cannot fake an early first audio: the chunk at 1200 is first.
    json r = run({1200});
    r["audio_chunks"].insert(r["audio_chunks"].begin(), chunk(200, 0, false, 0));
    auto b = analyze(r);
    EXPECT_DOUBLE_EQ(b.pairs[0].first_audio_e2e_ms, 1200);
    EXPECT_EQ(check(b, "first_audio").state, CheckState::Fail);
    // ... and a zero-length final marker after the audio is not audio either.
    r = run({200});
    r["audio_chunks"][0]["is_final"] = false;
    r["audio_chunks"].push_back(chunk(300, 0, true, 0));
    EXPECT_EQ(analyze(r).verdict, DuplexVerdict::Pass);
    EXPECT_DOUBLE_EQ(analyze(r).pairs[0].t_last_wav_ms, 200);
}

TEST(DuplexAnalysis, TtsRtfMustHoldOnEveryTurnNotOnAverage) {
    // Turn 0: 10 s of audio done 100 ms after the decision: wall (200 - min(100, 200)) = 0.1 s,
    // RTF 0.01. Turn 1: decided at 11100, 0.1 s of audio at 11250: wall 0.15 s, RTF 1.5. The mean
    // (0.755, R1's rule) is below 1; R3 fails the run on turn 1.
    json r = run({200});
    r["audio_chunks"][0]["duration_s"] = 10;
    r["frames"].push_back(frame(10000, 10100, false));
    r["frames"].push_back(frame(11000, 11100, true, true, 1));
    r["audio_chunks"].push_back(chunk(11250, 0.1, true, 1));
    auto a = analyze(r);
    ASSERT_EQ(a.pairs.size(), 2u);
    EXPECT_NEAR(a.pairs[0].tts_rtf, 0.01, 1e-12);
    EXPECT_NEAR(a.pairs[1].tts_rtf, 1.5, 1e-12);
    EXPECT_NEAR(a.pairs[1].e2e_rtf, 2.5, 1e-12);  // (11250 - 11000) / 100
    EXPECT_NEAR(a.tts_rtf_mean, 0.755, 1e-12);
    EXPECT_NEAR(a.tts_rtf_max, 1.5, 1e-12);
    EXPECT_EQ(check(a, "tts_rtf").state, CheckState::Fail);
    EXPECT_EQ(a.verdict, DuplexVerdict::Fail);
    EXPECT_EQ(exit_code(a.verdict), 2);
}

TEST(DuplexAnalysis, TtsWallStartsAtTheEarlierOfDecisionAndFirstAudio) {
    // The audio callback fired (300) before the decision was dequeued (500): the wall starts at
    // 300, so 2 s of audio ending at 800 -> 0.5 s / 2 s = 0.25; e2e 0.8 / 2 = 0.4; tts -200 ms.
    json r = run({300, 800});
    r["frames"][0]["t_done_ms"] = 500;
    r["frames"][0]["ms_total"] = 500;
    auto p = analyze(r).pairs.at(0);
    EXPECT_DOUBLE_EQ(p.tts_wall_s, 0.5);
    EXPECT_DOUBLE_EQ(p.tts_rtf, 0.25);
    EXPECT_DOUBLE_EQ(p.e2e_rtf, 0.4);
    EXPECT_DOUBLE_EQ(p.first_audio_tts_ms, -200);
    // One chunk at the very decision time: the wall is floored at 1 µs, not 0.
    r = run({100});
    EXPECT_DOUBLE_EQ(analyze(r).pairs.at(0).tts_wall_s, 1e-6);
}

TEST(DuplexAnalysis, PlaybackGapsUnderrunAndMinimumStartupBuffer) {
    // Chunks ready at 100 (0.2 s), 350 (0.1 s), 650 (0.4 s). Playback from 100: plays to 300;
    // chunk 1 ready at 350 -> gap 50, plays to 450; chunk 2 ready at 650 -> gap 200, plays to
    // 1050. Underrun 250, max gap 200, 2 gaps. Back-to-back schedule from 100: chunk 1 due at
    // 300 (late 50), chunk 2 due at 400 (late 250) -> minimum startup buffer 250 ms.
    json r = run();
    r["audio_chunks"] = json::array({chunk(100, 0.2, false, 0), chunk(350, 0.1, false, 0), chunk(650, 0.4, true, 0)});
    auto a = analyze(r);
    const auto &p = a.pairs.at(0);
    EXPECT_DOUBLE_EQ(p.underrun_ms, 250);
    EXPECT_DOUBLE_EQ(p.max_gap_ms, 200);
    EXPECT_EQ(p.gaps, 2);
    EXPECT_DOUBLE_EQ(p.minimum_startup_buffer_ms, 250);
    EXPECT_EQ(check(a, "playback").state, CheckState::Fail);
    EXPECT_EQ(a.verdict, DuplexVerdict::Fail);
    // That buffer removes every gap (and is charged to first audio: 100 + 250).
    DuplexOptions o;
    o.startup_buffer_ms = 250;
    auto b = analyze(r, o);
    EXPECT_DOUBLE_EQ(b.pairs.at(0).underrun_ms, 0);
    EXPECT_EQ(b.pairs.at(0).gaps, 0);
    EXPECT_DOUBLE_EQ(b.pairs.at(0).first_audio_e2e_ms, 350);
    EXPECT_EQ(b.verdict, DuplexVerdict::Pass);
    // A partial buffer shortens the gaps: 100 ms -> playback to 400, chunk 1 on time (ends 500),
    // chunk 2 gap 150.
    o.startup_buffer_ms = 100;
    EXPECT_DOUBLE_EQ(analyze(r, o).pairs.at(0).underrun_ms, 150);
    // --max-gap-ms tolerates gaps up to and including the limit.
    o = {};
    o.max_gap_ms = 200;
    EXPECT_EQ(analyze(r, o).verdict, DuplexVerdict::Pass);
    o.max_gap_ms = 199;
    EXPECT_EQ(analyze(r, o).verdict, DuplexVerdict::Fail);
}

TEST(DuplexAnalysis, FloatResidueIsNotAGap) {
    // 725.9 + 1.001 s · 1000 = 1726.8999999999999 in doubles: the next chunk, ready at 1726.9,
    // is on time. The simulation sees a 2e-13 ms "gap"; it is neither counted nor failed.
    json r = run();
    r["audio_chunks"] = json::array({chunk(725.9, 1.001, false, 0), chunk(1726.9, 1, true, 0)});
    auto a = analyze(r);
    const auto &p = a.pairs.at(0);
    EXPECT_EQ(p.gaps, 0);
    EXPECT_LT(p.max_gap_ms, 1e-9);
    EXPECT_EQ(check(a, "playback").state, CheckState::Pass);
    EXPECT_EQ(a.verdict, DuplexVerdict::Pass);
}

TEST(DuplexAnalysis, SameRtfDifferentContinuity) {
    // Both runs end at 2600 with 4 s of audio (TTS RTF 0.625); the burst one starves 1100 ms.
    EXPECT_EQ(analyze(run()).verdict, DuplexVerdict::Pass);
    auto a = analyze(run({200, 2300, 2400, 2600}));
    EXPECT_NEAR(a.pairs.at(0).tts_rtf, 0.625, 1e-12);
    EXPECT_DOUBLE_EQ(a.pairs.at(0).underrun_ms, 1100);
    EXPECT_DOUBLE_EQ(a.pairs.at(0).minimum_startup_buffer_ms, 1100);
    EXPECT_EQ(a.verdict, DuplexVerdict::Fail);
    // The buffer that hides the gap costs first audio: 200 + 1100 = 1300 >= 1000.
    DuplexOptions o;
    o.startup_buffer_ms = 1100;
    auto b = analyze(run({200, 2300, 2400, 2600}), o);
    EXPECT_DOUBLE_EQ(b.pairs.at(0).underrun_ms, 0);
    EXPECT_DOUBLE_EQ(b.pairs.at(0).first_audio_e2e_ms, 1300);
    EXPECT_EQ(b.verdict, DuplexVerdict::Fail);
}

TEST(DuplexAnalysis, ChunkStatistics) {
    json r = run();
    r["audio_chunks"] = json::array({chunk(100, 0.2, false, 0), chunk(350, 0.1, false, 0), chunk(650, 0.4, true, 0),
                                     chunk(900, 0.3, true, 1)});
    r["frames"].push_back(frame(800, 850, true, true, 1));
    r["frames"].insert(r["frames"].begin() + 1, frame(400, 450, false));
    auto a = analyze(r);
    EXPECT_EQ(a.n_chunks, 4);
    EXPECT_NEAR(a.audio_total_s, 1.0, 1e-12);
    EXPECT_DOUBLE_EQ(a.chunk_min_s, 0.1);
    EXPECT_DOUBLE_EQ(a.chunk_p50_s, 0.25);
    EXPECT_DOUBLE_EQ(a.chunk_max_s, 0.4);
    EXPECT_EQ(a.final_chunk_s, (std::vector<double>{0.4, 0.3}));
}

TEST(DuplexAnalysis, LegacyFilesSplitAudioTurnsAtIsFinal) {
    json r = run();
    for (auto &c : r["audio_chunks"]) c.erase("audio_turn_id");
    auto a = analyze(r);
    EXPECT_EQ(a.n_audio_turns, 1);
    EXPECT_EQ(a.verdict, DuplexVerdict::Pass);
}

TEST(DuplexAnalysis, InvalidInputIsIncompleteAndSaysWhy) {
    auto reason = [](const json &r) {
        auto a = analyze(r);
        EXPECT_FALSE(a.valid);
        EXPECT_EQ(a.verdict, DuplexVerdict::Incomplete);
        EXPECT_EQ(exit_code(a.verdict), 3);
        for (const auto &c : a.checks) EXPECT_EQ(c.state, CheckState::Skip);
        return a.invalid_reason;
    };
    json r = run();
    r["frames"].push_back(frame(1000, 1100, false));
    r["frames"].push_back(frame(900, 950, false));  // pushed before the row above
    EXPECT_NE(reason(r).find("frames must be in recorded order"), std::string::npos);
    r = run();
    r["audio_chunks"][1]["t_complete_ms"] = 100;
    EXPECT_NE(reason(r).find("audio_chunks must be in recorded order"), std::string::npos);
    r = run();
    r["frames"][0]["t_push_ms"] = -1;
    EXPECT_NE(reason(r).find("frames[0].t_push_ms must be a finite non-negative number"), std::string::npos);
    r = run();
    r["audio_chunks"][1]["is_final"] = true;  // is_final before the turn's last chunk
    EXPECT_NE(reason(r).find("audio turn 0 is unclosed or has is_final before its last chunk"), std::string::npos);
    r = run();
    r["audio_chunks"][3]["is_final"] = false;  // never closed
    EXPECT_NE(reason(r).find("unclosed"), std::string::npos);
    r = run();
    r["audio_chunks"] = json::array({chunk(200, 1, false, 0), chunk(300, 1, true, 1), chunk(400, 1, true, 0)});
    EXPECT_NE(reason(r).find("interleaved"), std::string::npos);
    r = run();
    r["audio_chunks"][1].erase("audio_turn_id");
    EXPECT_NE(reason(r).find("some audio chunks but not all"), std::string::npos);
    r = run({200});
    r["audio_chunks"][0]["duration_s"] = 0;
    EXPECT_NE(reason(r).find("no playable audio"), std::string::npos);
    r = run();
    r["audio_chunks"][0]["duration_s"] = 1e308;  // * 1000 overflows
    EXPECT_NE(reason(r).find("overflows"), std::string::npos);
    r = run();
    r["frames"][0]["t_push_ms"] = 150;  // decided (100) before it was pushed

    EXPECT_NE(reason(r).find("before it was pushed"), std::string::npos);
    for (const json &bad : {json(nullptr), json(true), json("200"), json(std::numeric_limits<double>::quiet_NaN()),
                            json(std::numeric_limits<double>::infinity())}) {
        r = run();
        r["frames"][0]["ms_total"] = bad;
        EXPECT_NE(reason(r).find("frames[0].ms_total"), std::string::npos) << bad.dump();
        r = run();
        r["audio_chunks"][0]["duration_s"] = bad;
        EXPECT_NE(reason(r).find("audio_chunks[0].duration_s"), std::string::npos) << bad.dump();
    }
    r = run();
    r["frames"][0]["is_speak"] = 1;
    EXPECT_NE(reason(r).find("frames[0].is_speak must be a boolean"), std::string::npos);
    r = run();
    r["frames"][0]["speak_turn_id"] = "0";
    EXPECT_NE(reason(r).find("speak_turn_id must be an integer"), std::string::npos);
    r = run();
    r["audio_chunks"][0]["audio_turn_id"] = -1;
    EXPECT_NE(reason(r).find("audio_turn_id must be a non-negative integer"), std::string::npos);
    r = run();
    r["meta"]["use_tts"] = "yes";
    EXPECT_NE(reason(r).find("meta.use_tts must be a boolean"), std::string::npos);
    EXPECT_NE(reason(json::array()).find("JSON object"), std::string::npos);
    EXPECT_NE(reason(json{{"meta", json::array()}}).find("meta must be an object"), std::string::npos);
    EXPECT_NE(reason(json{{"frames", json::object()}}).find("frames must be an array"), std::string::npos);
    EXPECT_NE(reason(json{{"frames", json::array({nullptr})}}).find("frames[0] must be an object"), std::string::npos);
    EXPECT_NE(reason(json{{"audio_chunks", "a"}}).find("audio_chunks must be an array"), std::string::npos);
}

TEST(DuplexAnalysis, VerdictTable) {
    // Every check passes -> pass.
    EXPECT_EQ(analyze(run()).verdict, DuplexVerdict::Pass);
    EXPECT_EQ(analyze(run()).tts_status, TtsStatus::Ok);
    // All LISTEN: the audio side is skipped; passing checks are not enough -> incomplete ...
    json r = run();
    r["frames"][0]["is_speak"] = false;
    r["audio_chunks"] = json::array();
    auto a = analyze(r);
    EXPECT_EQ(a.tts_status, TtsStatus::Skipped);
    EXPECT_EQ(check(a, "decision_latency").state, CheckState::Pass);
    EXPECT_EQ(a.verdict, DuplexVerdict::Incomplete);
    // ... but a failed check still fails it.
    r["frames"].push_back(frame(1000, 2500, false));  // ms_total 1500: P95 1430 >= 1000
    EXPECT_EQ(analyze(r).verdict, DuplexVerdict::Fail);
    // --no-tts: skipped -> incomplete, or fail when a check failed.
    r = run();
    r["meta"]["use_tts"] = false;
    r["audio_chunks"] = json::array();
    EXPECT_EQ(analyze(r).tts_status, TtsStatus::Skipped);
    EXPECT_EQ(analyze(r).verdict, DuplexVerdict::Incomplete);
    r["frames"][0]["ok"] = false;
    EXPECT_EQ(analyze(r).verdict, DuplexVerdict::Fail);
    // Speak frames but no audio -> incomplete.
    r = run();
    r["audio_chunks"] = json::array();
    EXPECT_EQ(analyze(r).tts_status, TtsStatus::Incomplete);
    EXPECT_EQ(analyze(r).verdict, DuplexVerdict::Incomplete);
    // Incomplete audio side with a failed check -> fail.
    r["frames"][0]["ms_total"] = 5000;
    r["frames"][0]["t_done_ms"] = 5000;
    EXPECT_EQ(analyze(r).verdict, DuplexVerdict::Fail);
    // Nothing at all: no frames, no check evaluated -> incomplete.
    a = analyze(json::object());
    EXPECT_TRUE(a.valid);
    EXPECT_EQ(a.verdict, DuplexVerdict::Incomplete);
    // A failed frame cannot pass even when every other check does.
    r = run();
    r["frames"].push_back(frame(1000, 6000, false, false));
    EXPECT_EQ(analyze(r).verdict, DuplexVerdict::Fail);
    // Exit codes.
    EXPECT_EQ(exit_code(DuplexVerdict::Pass), 0);
    EXPECT_EQ(exit_code(DuplexVerdict::Fail), 2);
    EXPECT_EQ(exit_code(DuplexVerdict::Incomplete), 3);
    a = unreadable_duplex("x.json", "'x.json' is not valid JSON", {});
    EXPECT_EQ(a.verdict, DuplexVerdict::Incomplete);
    EXPECT_EQ(bench::to_json(a)["exit_code"], 3);
}

TEST(DuplexAnalysis, BadOptionsAreUsageErrorsNamingTheFlag) {
    auto message = [](DuplexOptions o) {
        try {
            analyze_duplex(run(), o);
        } catch (const Error &e) {
            EXPECT_EQ(e.kind(), ErrorKind::Usage);
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    DuplexOptions o;
    o.startup_buffer_ms = -1;
    EXPECT_NE(message(o).find("--startup-buffer-ms"), std::string::npos);
    o = {};
    o.max_gap_ms = std::numeric_limits<double>::infinity();
    EXPECT_NE(message(o).find("--max-gap-ms"), std::string::npos);
    o = {};
    o.interval_ms = 0;
    EXPECT_NE(message(o).find("--interval-ms"), std::string::npos);
    o.interval_ms = std::numeric_limits<double>::quiet_NaN();
    EXPECT_NE(message(o).find("--interval-ms"), std::string::npos);
}

TEST(DuplexAnalysis, JsonAndMarkdownRendering) {
    auto a = analyze(run({200, 2300, 2400, 2600}));
    a.source = "perf_report.json";
    json j = bench::to_json(a);
    EXPECT_EQ(j["schema"], "rtfkit.duplex-report/1");
    EXPECT_EQ(j["rules"], "R3");
    EXPECT_EQ(j["verdict"], "fail");
    EXPECT_EQ(j["exit_code"], 2);
    EXPECT_EQ(j["checks"].size(), 5u);
    EXPECT_EQ(j["checks"][4]["id"], "playback");
    EXPECT_EQ(j["checks"][4]["state"], "FAIL");
    EXPECT_DOUBLE_EQ(j["pairs"][0]["minimum_startup_buffer_ms"].get<double>(), 1100);
    EXPECT_TRUE(j["options"]["interval_ms"].is_null());
    // Round trip through text: what a stored file gives.
    j = json::parse(j.dump());
    EXPECT_EQ(report::detect_kind(j), report::ResultKind::Duplex);
    const std::string md = report::render_markdown(j);
    EXPECT_NE(md.find("## rtfkit duplex-report: FAIL"), std::string::npos);
    EXPECT_NE(md.find("| [5] playback continuity | FAIL |"), std::string::npos);
    EXPECT_NE(md.find("| [1] LLM decision latency | PASS |"), std::string::npos);
    EXPECT_NE(md.find("| speak\\#0 |"), std::string::npos);
    EXPECT_THROW(report::render_html(j), Error);
    // No pair: NaN figures become null and render as n/a.
    json empty = bench::to_json(analyze(json::object()));
    EXPECT_TRUE(empty["decision_latency_ms"]["p95"].is_null());
    EXPECT_NE(report::duplex_markdown(empty).find("INCOMPLETE"), std::string::npos);
    // An invalid input renders its reason.
    json bad = run();
    bad["frames"][0]["t_push_ms"] = -5;
    EXPECT_NE(report::duplex_markdown(bench::to_json(analyze(bad))).find("frames\\[0\\].t\\_push\\_ms"), std::string::npos);
}
