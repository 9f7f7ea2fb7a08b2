// Pure-logic tests of the quality gates on synthetic signals and token streams (label
// unit; also run under ASan+UBSan). Real speech is in test-quality-speech.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <numbers>

#include "common/scratch-dir.h"
#include "core/error.h"
#include "quality/asr.h"
#include "quality/audio-checks.h"
#include "quality/equivalence.h"
#include "quality/quality-config.h"
#include "quality/resample.h"
#include "quality/token-checks.h"
#include "quality/wer.h"
#include "quality-test-util.h"

namespace rtf::quality {
namespace {

using test::synth_speech;
using test::white_noise;
using ::testing::HasSubstr;

constexpr int kSr = 24000;

std::vector<std::string> failed_names(const QualityReport &r) {
    std::vector<std::string> v;
    for (const auto *c : r.failures()) v.push_back(c->name);
    return v;
}

const CheckResult &get(const QualityReport &r, const std::string &name) {
    const CheckResult *c = r.find(name);
    if (!c) throw std::runtime_error("no check " + name);
    return *c;
}

// ---- audio checks -----------------------------------------------------------------

TEST(AudioChecks, SpeechLikeSignalPassesEveryCheck) {
    const auto x = synth_speech(4.0, kSr, 1);
    const auto r = check_audio(x, kSr, periodic_boundaries(x.size(), kSr, 1000));
    EXPECT_TRUE(r.passed()) << r.to_text();
    EXPECT_EQ(r.n_skipped(), 0) << r.to_text();
    EXPECT_EQ(r.checks.size(), 11u);
}

TEST(AudioChecks, WhiteNoiseFailsAsNoiseLike) {
    const auto r = check_audio(white_noise(3 * kSr, 0.3f, 7), kSr);
    EXPECT_FALSE(r.passed());
    const auto &c = get(r, "flatness");
    EXPECT_TRUE(c.failed()) << r.to_text();
    EXPECT_NEAR(c.value, 0.56, 0.08);  // e^-γ for a periodogram of white noise
    EXPECT_THAT(c.reason, HasSubstr("noise-like"));
    EXPECT_FALSE(get(r, "rms_dbfs").failed());  // the level is fine; the content is not
}

TEST(AudioChecks, SilenceFailsAsSilent) {
    const auto r = check_audio(std::vector<float>(3 * kSr, 0.0f), kSr);
    EXPECT_THAT(failed_names(r), ::testing::IsSupersetOf({"rms_dbfs", "silence_ratio", "longest_silence_ms"}));
    EXPECT_THAT(get(r, "rms_dbfs").reason, HasSubstr("silent"));
    EXPECT_DOUBLE_EQ(get(r, "silence_ratio").value, 1.0);
    EXPECT_EQ(get(r, "flatness").status, CheckStatus::Skipped);
    EXPECT_NEAR(get(r, "longest_silence_ms").value, 3000, 1);
}

TEST(AudioChecks, ClippedSquareWaveFailsAsClipped) {
    std::vector<float> x(2 * kSr);
    for (size_t i = 0; i < x.size(); ++i)
        x[i] = std::clamp(10.0f * static_cast<float>(std::sin(2 * std::numbers::pi * 220.0 * i / kSr)), -1.0f, 1.0f);
    const auto r = check_audio(x, kSr);
    const auto &c = get(r, "clip_ratio");
    EXPECT_TRUE(c.failed());
    EXPECT_GT(c.value, 0.8);
    EXPECT_THAT(c.reason, HasSubstr("clipped"));
    EXPECT_TRUE(get(r, "rms_dbfs").failed());  // ≈ -0.3 dBFS: too loud
    EXPECT_THAT(get(r, "rms_dbfs").reason, HasSubstr("too loud"));
}

TEST(AudioChecks, LoopOfOne80msFrameFailsAsLoop) {
    const auto speech = synth_speech(2.0, kSr, 3);
    // The 80 ms frame around the loudest sample is voiced.
    size_t peak_at = 0;
    for (size_t i = 0; i < speech.size(); ++i)
        if (std::fabs(speech[i]) > std::fabs(speech[peak_at])) peak_at = i;
    const size_t frame = kSr * 80 / 1000, start = peak_at > frame / 2 ? peak_at - frame / 2 : 0;
    std::vector<float> x;
    while (x.size() < static_cast<size_t>(3 * kSr)) x.insert(x.end(), speech.begin() + static_cast<long>(start),
                                                             speech.begin() + static_cast<long>(start + frame));
    const auto r = check_audio(x, kSr);
    const auto &c = get(r, "loop_ms");
    EXPECT_TRUE(c.failed()) << r.to_text();
    EXPECT_GT(c.value, 2500);
    EXPECT_THAT(c.reason, HasSubstr("audio loop"));
    EXPECT_THAT(c.reason, HasSubstr("every 80 ms"));
}

TEST(AudioChecks, NaNFailsAsNonFiniteOnly) {
    auto x = synth_speech(3.0, kSr, 4);
    x[100] = std::numeric_limits<float>::quiet_NaN();
    x[5000] = std::numeric_limits<float>::infinity();
    x[7000] = std::numeric_limits<float>::quiet_NaN();
    const auto r = check_audio(x, kSr);
    EXPECT_THAT(failed_names(r), ::testing::ElementsAre("nonfinite"));
    EXPECT_EQ(get(r, "nonfinite").value, 3);
    EXPECT_THAT(get(r, "nonfinite").reason, HasSubstr("3 NaN/Inf"));
}

TEST(AudioChecks, EmptyAudioFailsDurationAndSkipsTheRest) {
    const auto r = check_audio(std::vector<float>{}, kSr);
    EXPECT_THAT(failed_names(r), ::testing::ElementsAre("duration_ms"));
    EXPECT_THAT(get(r, "duration_ms").reason, HasSubstr("no samples"));
    EXPECT_EQ(r.n_skipped(), 10);
}

TEST(AudioChecks, LongGapFailsLongestSilence) {
    auto x = synth_speech(2.0, kSr, 5);
    x.insert(x.begin() + kSr, static_cast<size_t>(2.5 * kSr), 0.0f);
    const auto r = check_audio(x, kSr);
    EXPECT_TRUE(get(r, "longest_silence_ms").failed()) << r.to_text();
    EXPECT_THAT(get(r, "longest_silence_ms").reason, HasSubstr("gap"));
}

TEST(AudioChecks, DcOffsetAndOverRangeFail) {
    auto x = synth_speech(2.0, kSr, 6);
    for (float &v : x) v += 0.05f;
    x[10] = 1.5f;
    const auto r = check_audio(x, kSr);
    EXPECT_TRUE(get(r, "dc_offset").failed());
    EXPECT_TRUE(get(r, "peak").failed());
}

TEST(AudioChecks, ChunkBoundaryDiscontinuityIsFoundAndContinuousOnesPass) {
    auto x = synth_speech(3.0, kSr, 8);
    // Find a boundary inside a loud, smooth (voiced) stretch, then flip the sign of what
    // follows: the waveform jumps by twice its value there, as with a broken overlap-add.
    auto smooth_and_loud = [&](size_t b) {
        if (std::fabs(x[b]) < 0.15f) return false;
        for (size_t i = b - 60; i <= b + 60; ++i)
            if (std::fabs(x[i] - x[i - 1]) > 0.05f) return false;
        return true;
    };
    size_t b = kSr;
    while (!smooth_and_loud(b)) ++b;
    ASSERT_LT(b, x.size() - 100);
    const auto ok = check_audio(x, kSr, {static_cast<int64_t>(b)});
    EXPECT_FALSE(get(ok, "boundary_jump").failed()) << ok.to_text();
    for (size_t i = b; i < x.size(); ++i) x[i] = -x[i];
    const auto bad = check_audio(x, kSr, {static_cast<int64_t>(b)});
    const auto &c = get(bad, "boundary_jump");
    EXPECT_TRUE(c.failed()) << bad.to_text();
    EXPECT_THAT(c.reason, HasSubstr("discontinuity at 1 of 1"));
}

TEST(AudioChecks, SpeechChecksCanBeTurnedOffForTwins) {
    QualityConfig cfg;
    cfg.expect_speech = false;
    const auto r = check_audio(white_noise(2 * kSr, 0.3f, 9), kSr, {}, cfg);
    EXPECT_TRUE(r.passed()) << r.to_text();
    EXPECT_EQ(get(r, "flatness").status, CheckStatus::Skipped);
    EXPECT_EQ(get(r, "loop_ms").status, CheckStatus::Skipped);
}

TEST(AudioChecks, BadSampleRateIsAUsageError) {
    EXPECT_THROW(check_audio(std::vector<float>(10), 0), Error);
}

// ---- token checks -------------------------------------------------------------------

std::vector<int32_t> random_ids(size_t n, int32_t vocab, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> U(0, vocab - 2);  // vocab - 1 is EOS below
    std::vector<int32_t> ids(n);
    for (auto &v : ids) v = U(rng);
    return ids;
}

TEST(TokenChecks, NormalStreamPasses) {
    auto ids = random_ids(200, 6562, 1);
    ids.push_back(6561);
    const auto r = check_tokens(ids, 6562, 6561, 500);
    EXPECT_TRUE(r.passed()) << r.to_text();
    EXPECT_THAT(get(r, "eos").reason, HasSubstr("at index 200"));
}

TEST(TokenChecks, NaturalShortRepeatsPass) {
    // Text-like: "the the", "ha ha ha" and a pause of 20 identical audio tokens are normal.
    std::vector<int32_t> ids = {5, 9, 9, 12, 40, 41, 40, 41, 40, 41, 77, 3, 8};
    ids.insert(ids.end(), 20, 100);
    auto tail = random_ids(60, 6562, 2);
    ids.insert(ids.end(), tail.begin(), tail.end());
    ids.push_back(6561);
    const auto r = check_tokens(ids, 6562, 6561, 0);
    EXPECT_TRUE(r.passed()) << r.to_text();
}

TEST(TokenChecks, FourTokenLoopFillingTheTailFails) {
    auto ids = random_ids(100, 6562, 3);
    for (int i = 0; i < 30; ++i) ids.insert(ids.end(), {17, 256, 1024, 33});
    const auto r = check_tokens(ids, 6562, 6561, 220);
    const auto &loop = get(r, "token_loop");
    EXPECT_TRUE(loop.failed()) << r.to_text();
    EXPECT_DOUBLE_EQ(loop.value, 1.0);
    EXPECT_THAT(loop.reason, HasSubstr("4-token unit [17 256 1024 33]"));
    const auto &eos = get(r, "eos");
    EXPECT_TRUE(eos.failed());
    EXPECT_THAT(eos.reason, HasSubstr("ran to the limit of 220"));
}

TEST(TokenChecks, LoopBeforeEosStillFails) {
    auto ids = random_ids(20, 6562, 4);
    for (int i = 0; i < 12; ++i) ids.insert(ids.end(), {1, 2, 3, 4});
    ids.push_back(6561);
    const auto r = check_tokens(ids, 6562, 6561, 0);
    EXPECT_TRUE(get(r, "token_loop").failed());
    EXPECT_FALSE(get(r, "eos").failed());
}

TEST(TokenChecks, OneTokenRepeatedFails) {
    std::vector<int32_t> ids = random_ids(10, 151000, 5);
    ids.insert(ids.end(), 100, 30);  // "??????"
    const auto r = check_tokens(ids, 151000, -1, 0);
    EXPECT_TRUE(get(r, "token_run").failed());
    EXPECT_THAT(get(r, "token_run").reason, HasSubstr("id 30 x100"));
    EXPECT_TRUE(get(r, "token_loop").failed());
    EXPECT_EQ(get(r, "eos").status, CheckStatus::Skipped);
}

TEST(TokenChecks, OutOfRangeIdsFail) {
    std::vector<int32_t> ids = random_ids(50, 6562, 6);
    ids[7] = 6562;
    ids[9] = -1;
    const auto r = check_tokens(ids, 6562, -1, 0);
    EXPECT_EQ(get(r, "out_of_range").value, 2);
    EXPECT_THAT(get(r, "out_of_range").reason, HasSubstr("first 6562 at index 7"));
}

TEST(TokenChecks, EosPastTheLimitFails) {
    auto ids = random_ids(300, 6562, 7);
    ids.push_back(6561);
    const auto r = check_tokens(ids, 6562, 6561, 250);
    EXPECT_TRUE(get(r, "eos").failed());
    EXPECT_THAT(get(r, "eos").reason, HasSubstr("past the limit"));
}

TEST(TokenChecks, CompareTokens) {
    const auto a = random_ids(80, 6562, 8);
    EXPECT_EQ(compare_tokens(a, a).status, CheckStatus::Pass);
    auto b = a;
    b[37] = b[37] + 1;
    const auto c = compare_tokens(b, a, "audio tokens");
    EXPECT_TRUE(c.failed());
    EXPECT_EQ(c.value, 37);
    EXPECT_THAT(c.reason, HasSubstr("audio tokens differ first at index 37"));
    auto shorter = a;
    shorter.pop_back();
    EXPECT_TRUE(compare_tokens(shorter, a).failed());
}

TEST(TokenChecks, TokenFileParsing) {
    rtf::test::ScratchDir dir("quality");
    {
        std::ofstream(dir.file("ok.txt")) << "1 2\n3\t4  5\n";
        std::ofstream(dir.file("bad.txt")) << "1 2 x3\n";
    }
    EXPECT_EQ(read_token_file(dir.file("ok.txt")), (std::vector<int32_t>{1, 2, 3, 4, 5}));
    try {
        read_token_file(dir.file("bad.txt"));
        FAIL() << "expected a usage error";
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Usage);
        EXPECT_THAT(e.what(), HasSubstr("bad.txt"));
    }
    EXPECT_THROW(read_token_file(dir.file("missing.txt")), Error);
}

// ---- equivalence --------------------------------------------------------------------

TEST(Equivalence, BitIdenticalRerunPasses) {
    const auto x = synth_speech(3.0, kSr, 10);
    const auto r = compare_audio(x, kSr, x, kSr);
    EXPECT_TRUE(r.passed()) << r.to_text();
    EXPECT_EQ(get(r, "log_mel_distance_db").value, 0);
    EXPECT_EQ(get(r, "rms_ratio_db").value, 0);
}

TEST(Equivalence, F16RoundingPasses) {
    // What an F16 buffer does to F32 audio: 11-bit mantissa.
    const auto x = synth_speech(3.0, kSr, 11);
    auto y = x;
    for (float &v : y) {
        int e = 0;
        const float m = std::frexp(v, &e);
        v = std::ldexp(std::round(m * 2048.0f) / 2048.0f, e);
    }
    const auto r = compare_audio(y, kSr, x, kSr);
    EXPECT_TRUE(r.passed()) << r.to_text();
    EXPECT_LT(get(r, "log_mel_distance_db").value, 0.5);
}

TEST(Equivalence, SixDbLevelChangeFails) {
    const auto x = synth_speech(3.0, kSr, 12);
    auto y = x;
    for (float &v : y) v *= 0.5f;
    const auto r = compare_audio(y, kSr, x, kSr);
    EXPECT_TRUE(get(r, "rms_ratio_db").failed());
    EXPECT_NEAR(get(r, "rms_ratio_db").value, 6.02, 0.05);
    EXPECT_THAT(get(r, "rms_ratio_db").reason, HasSubstr("quieter"));
    EXPECT_TRUE(get(r, "log_mel_distance_db").failed());
    EXPECT_FALSE(get(r, "duration_diff").failed());
}

TEST(Equivalence, DifferentUtteranceFails) {
    const auto x = synth_speech(3.0, kSr, 13), y = synth_speech(3.0, kSr, 14);
    const auto r = compare_audio(y, kSr, x, kSr);
    EXPECT_TRUE(get(r, "log_mel_distance_db").failed()) << r.to_text();
    EXPECT_GT(get(r, "log_mel_distance_db").value, 5);
}

TEST(Equivalence, DifferentRatesAreResampled) {
    const auto x = synth_speech(2.0, kSr, 15);
    const auto y = resample(x, kSr, 48000);
    const auto r = compare_audio(y, 48000, x, kSr);
    EXPECT_TRUE(r.passed()) << r.to_text();
}

TEST(Equivalence, EmptySideFails) {
    const auto r = compare_audio({}, kSr, synth_speech(1.0, kSr, 16), kSr);
    EXPECT_FALSE(r.passed());
    EXPECT_THAT(get(r, "duration_diff").reason, HasSubstr("candidate has no samples"));
}

// ---- WER and the red line -------------------------------------------------------------

TEST(Wer, ExactMatchAndNormalisation) {
    const auto w = word_error_rate("The quick, brown FOX!", "the quick brown fox");
    EXPECT_EQ(w.wer_pct, 0);
    EXPECT_EQ(w.n_reference_words, 4);
    EXPECT_EQ(normalise_text("Call me at 42, don't 'wait'"), "call me at forty two don't wait");
    EXPECT_EQ(normalise_text("1205 and 007"), "one thousand two hundred five and zero zero seven");
}

TEST(Wer, CountsSubstitutionsDeletionsInsertions) {
    const auto w = word_error_rate("the quick brown fox jumps over the lazy dog",
                                   "the quick brown fox jumped over lazy dog today");
    EXPECT_EQ(w.substitutions, 1);
    EXPECT_EQ(w.deletions, 1);
    EXPECT_EQ(w.insertions, 1);
    EXPECT_NEAR(w.wer_pct, 100.0 * 3 / 9, 1e-9);
    const auto empty_hyp = word_error_rate("one two three", "");
    EXPECT_EQ(empty_hyp.deletions, 3);
    EXPECT_EQ(empty_hyp.wer_pct, 100);
    EXPECT_THROW(word_error_rate("  ,. ", "x"), Error);
}

TEST(Wer, GateAndRedLine) {
    QualityConfig cfg;
    EXPECT_FALSE(wer_check(word_error_rate("a b c d", "x y z d"), cfg).status == CheckStatus::Pass);
    EXPECT_EQ(wer_red_line(10.0, 8.0, cfg).status, CheckStatus::Pass);  // exactly +2 points
    const auto c = wer_red_line(10.5, 8.0, cfg);
    EXPECT_TRUE(c.failed());
    EXPECT_THAT(c.reason, HasSubstr("red line crossed"));
    cfg.max_wer_increase_pp = 5;
    EXPECT_EQ(wer_red_line(10.5, 8.0, cfg).status, CheckStatus::Pass);
}

TEST(Wer, NoAsrIsReportedAsSkipped) {
    const auto r = asr_wer(nullptr, synth_speech(1.0, kSr, 17), kSr, "hello world", QualityConfig{});
    EXPECT_FALSE(r.ran);
    EXPECT_EQ(r.check.status, CheckStatus::Skipped);
    EXPECT_EQ(r.check.reason, "skipped (no ASR)");
    EXPECT_TRUE(std::isnan(r.check.value));
    EXPECT_TRUE(r.to_json()["check"]["value"].is_null());
}

// ---- config and report ----------------------------------------------------------------

TEST(Config, DefaultsValidateAndRoundTripByKey) {
    QualityConfig cfg;
    EXPECT_NO_THROW(cfg.validate());
    const auto j = cfg.to_json();
    for (const auto &k : QualityConfig::keys()) EXPECT_TRUE(j.contains(k)) << k;
    cfg.set("max_clip_ratio", "0.01");
    cfg.set("expect_speech", "false");
    cfg.set("max_token_run", "64");
    EXPECT_EQ(cfg.to_json()["max_clip_ratio"], 0.01);
    EXPECT_EQ(cfg.to_json()["expect_speech"], false);
    EXPECT_EQ(cfg.max_token_run, 64);
}

TEST(Config, BadValuesAreUsageErrorsNamingTheKey) {
    QualityConfig cfg;
    try {
        cfg.set("max_clip_ratio", "2");
        FAIL();
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Usage);
        EXPECT_THAT(e.what(), HasSubstr("max_clip_ratio"));
    }
    try {
        cfg.set("no_such_key", "1");
        FAIL();
    } catch (const Error &e) {
        EXPECT_THAT(e.what(), HasSubstr("known: max_nonfinite"));
    }
    cfg.min_rms_dbfs = -3;
    EXPECT_THROW(cfg.validate(), Error);
    QualityConfig nan_cfg;
    nan_cfg.max_peak = std::nan("");
    EXPECT_THROW(nan_cfg.validate(), Error);
}

TEST(Report, JsonAndTextListEveryCheck) {
    auto r = check_audio(std::vector<float>(kSr, 0.0f), kSr);
    const auto j = r.to_json();
    EXPECT_EQ(j["passed"], false);
    EXPECT_EQ(j["checks"].size(), r.checks.size());
    EXPECT_EQ(j["checks"][0]["name"], "duration_ms");
    EXPECT_EQ(j["n_failed"], r.n_failed());
    const std::string text = r.to_text();
    EXPECT_THAT(text, HasSubstr("FAIL  rms_dbfs"));
    EXPECT_THAT(text, HasSubstr("SKIP  flatness"));
}

TEST(Resample, KeepsLengthAndLevel) {
    std::vector<float> x(48000);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * static_cast<float>(std::sin(2 * std::numbers::pi * 1000.0 * i / 48000));
    const auto y = resample(x, 48000, 16000);
    EXPECT_NEAR(static_cast<double>(y.size()), 16000, 2);
    double acc = 0;
    for (size_t i = 1000; i < 15000; ++i) acc += static_cast<double>(y[i]) * y[i];
    EXPECT_NEAR(std::sqrt(acc / 14000), 0.5 / std::sqrt(2.0), 0.01);
    EXPECT_THROW(resample(x, 0, 16000), Error);
}

}  // namespace
}  // namespace rtf::quality
