// The duplex session on a tiny twin kit, in-process (label model; the LLM's turn alone is
// tests/lm/test-llm-duplex.cpp): --speak-frames parsing and checks, every frame pushed and
// done on its deadline, a forced schedule's turns as audio turns closed by one is_final
// chunk each, the analyzer's verdict on the timeline, a failing stage's partial timeline.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "bench/duplex-analysis.h"
#include "common/tiny-kit.h"
#include "core/error.h"
#include "speak/duplex.h"
#include "speak/kit.h"
#include "twin/twin.h"

using namespace rtf;

namespace {
class Duplex : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        kit_ = std::make_unique<rtf::test::TinyKit>("duplex");
        dir_ = kit_->dir;
    }
    static void TearDownTestSuite() { kit_.reset(); }
    static speak::DuplexConfig duplex_config() {
        speak::DuplexConfig c;
        c.models_dir = dir_;
        c.input = "unused.wav";
        c.interval_ms = 20;
        c.threads = 1;
        c.llm.placement.n_ctx = 1024;
        c.finalize();
        return c;
    }
    static std::unique_ptr<rtf::test::TinyKit> kit_;
    static std::string dir_;
};
std::unique_ptr<rtf::test::TinyKit> Duplex::kit_;
std::string Duplex::dir_;

}  // namespace

TEST_F(Duplex, FrameRanges) {
    auto r = speak::parse_frame_ranges("4-12,20-28,30", "--speak-frames");
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].first, 4);
    EXPECT_EQ(r[1].last, 28);
    EXPECT_EQ(r[2].first, 30);
    EXPECT_TRUE(speak::in_ranges(r, 12));
    EXPECT_FALSE(speak::in_ranges(r, 13));
    for (const char *bad : {"", "4-", "12-4", "4-12,10-14", "a", "4,,5", "-3"})
        EXPECT_THROW(speak::parse_frame_ranges(bad, "--speak-frames"), Error) << bad;
    auto c = duplex_config();
    c.speak_frames = "1-4";  // inside force_listen
    EXPECT_THROW(c.validate(), Error);
    c.speak_frames = "4-9";
    c.n_frames = 8;  // past the last frame
    EXPECT_THROW(c.validate(), Error);
}

TEST_F(Duplex, PipelineForcedScheduleAndFailingStage) {
    auto cfg = duplex_config();
    cfg.speak_frames = "3-4,6";
    const nlohmann::json given = cfg.to_json();
    auto e = speak::load_duplex_engines(cfg);
    EXPECT_EQ(cfg.to_json(), given) << "the argument is left as given";
    EXPECT_FALSE(e->config.llm.model_path.empty());
    cfg = e->config;
    apm::AudioInput audio;
    audio.samples.resize(16000 * 3 + 4000);
    for (size_t i = 0; i < audio.samples.size(); ++i) audio.samples[i] = 0.3f * std::sin(0.05f * static_cast<float>(i));
    cfg.n_frames = 8;
    int silent = 0;
    auto frames = speak::input_frames(cfg, audio, &silent);
    ASSERT_EQ(frames.size(), 8u);
    EXPECT_EQ(silent, 4);  // 3.25 s of audio: 4 frames (the last padded), 4 of silence
    for (const auto &f : frames) EXPECT_EQ(f.size(), 16000u);

    auto r = speak::run_duplex(*e, cfg, frames);
    ASSERT_TRUE(r.completed) << r.error;
    auto doc = speak::to_json(r);
    ASSERT_EQ(doc["frames"].size(), 8u);
    std::vector<int> turn_ids;
    for (const auto &f : doc["frames"]) {
        EXPECT_TRUE(f["ok"].get<bool>());
        EXPECT_GE(f["t_done_ms"].get<double>(), f["t_push_ms"].get<double>());
        turn_ids.push_back(f["speak_turn_id"].get<int>());
    }
    EXPECT_EQ(turn_ids, (std::vector<int>{-1, -1, -1, 0, 0, -1, 1, -1}));
    EXPECT_EQ(doc["frames"][3]["n_text_tokens"].get<int>(), 10);  // forced_speak_tokens
    EXPECT_EQ(doc["frames"][3]["end"], "forced");
    EXPECT_TRUE(doc["frames"][7]["silence"].get<bool>());
    // pushes follow the absolute deadlines: frame i no earlier than i x interval
    for (size_t i = 0; i < 8; ++i) EXPECT_GE(doc["frames"][i]["t_push_ms"].get<double>() + 1e-6, 20.0 * static_cast<double>(i));
    // two speak turns -> two audio turns, each closed by its only is_final chunk
    // Each turn's audio: one TTS call of 26 codes per speaking frame (EOS masked until then:
    // duplex_codes), then the turn's end-of-turn call, which stops at its EOS: 0 .. 26 more;
    // Token2Wav makes 960 samples a code. Turn 0 (frames 3, 4): 52 .. 78 codes, turn 1 (frame
    // 6): 26 .. 52. Seen: 55 and 36 codes, 3.64 s.
    int finals = 0;
    double audio_s = 0;
    std::map<int, int64_t> turn_samples;
    for (const auto &c : doc["audio_chunks"]) {
        finals += c["is_final"].get<bool>();
        audio_s += c["duration_s"].get<double>();
        EXPECT_EQ(c["sample_rate"].get<int>(), 24000);
        const auto n = c["n_samples"].get<int64_t>();
        EXPECT_EQ(n % 960, 0) << "a chunk of " << n << " samples: not whole codes";
        turn_samples[c["audio_turn_id"].get<int>()] += n;
    }
    EXPECT_EQ(finals, 2);
    ASSERT_EQ(turn_samples.size(), 2u);
    EXPECT_GE(turn_samples[0], 52 * 960);
    EXPECT_LE(turn_samples[0], 78 * 960);
    EXPECT_GE(turn_samples[1], 26 * 960);
    EXPECT_LE(turn_samples[1], 52 * 960);
    EXPECT_NEAR(audio_s, static_cast<double>(turn_samples[0] + turn_samples[1]) / 24000.0, 1e-9);
    std::printf("audio: %.2f s, turns of %lld and %lld codes\n", audio_s, static_cast<long long>(turn_samples[0] / 960),
                static_cast<long long>(turn_samples[1] / 960));
    EXPECT_EQ(doc["meta"]["decision"], "forced");
    EXPECT_EQ(r.tts_calls, 3);  // 3 speaking frames x one message of 10
    // The analyzer accepts the timeline; which speak turn an audio turn matches is a matter of
    // timing (matched by time: a slow Token2Wav lets turn 0's audio arrive after turn 1
    // started), so only the counts are checked here.
    auto a = bench::analyze_duplex(doc, {});
    EXPECT_TRUE(a.valid) << a.invalid_reason;
    EXPECT_EQ(a.n_speak_turns, 2);
    EXPECT_EQ(a.n_audio_turns, 2);
    EXPECT_GE(a.pairs.size(), 1u);

    // a stage that throws stops the run: a partial timeline, the stage named, no exception
    cfg.fail_stage = "tts";
    cfg.fail_frame = 4;
    auto f = speak::run_duplex(*e, cfg, frames);
    EXPECT_FALSE(f.completed);
    EXPECT_EQ(f.failed_stage, "tts");
    EXPECT_NE(f.error.find("fails at frame 4"), std::string::npos) << f.error;
    auto fd = speak::to_json(f);
    EXPECT_GE(fd["frames"].size(), 1u);
    EXPECT_FALSE(fd["completed"].get<bool>());
    for (const auto &fr : fd["frames"]) EXPECT_GE(fr["t_done_ms"].get<double>(), fr["t_push_ms"].get<double>());
    auto fa = bench::analyze_duplex(fd, {});  // judged (or refused) without throwing
    EXPECT_NE(fa.verdict, bench::DuplexVerdict::Pass);
}
