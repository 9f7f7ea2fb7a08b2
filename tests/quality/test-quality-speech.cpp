// The gates on real speech (label model): flite renders known sentences at test time
// (voices slt and kal16; nothing committed), the audio is taken to 24 kHz like the TTS
// output, and pocketsphinx must hear the words. Prints the WER measured per voice.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "common/require.h"
#include "common/scratch-dir.h"
#include "quality/asr.h"
#include "quality/audio-checks.h"
#include "quality/audio-file.h"
#include "quality/equivalence.h"
#include "quality/resample.h"
#include "quality-test-util.h"

namespace rtf::quality {
namespace {

using ::testing::HasSubstr;

constexpr int kSr = 24000;

const char *const kSentences[] = {
    "the quick brown fox jumps over the lazy dog",
    "the meeting has been moved to next tuesday afternoon",
    "we are going to the market to buy some fresh vegetables",
    "can you tell me how to get to the train station",
    "i would like to book a table for two people at seven o'clock",
};

// Renders and loads one sentence at 24 kHz.
std::vector<float> speech(const rtf::test::ScratchDir &d, const std::string &voice, size_t i) {
    const std::string path = d.file(voice + "-" + std::to_string(i) + ".wav");
    if (!test::flite_render(voice, kSentences[i], path)) {
        ADD_FAILURE() << "flite could not render with voice " << voice << " (install Debian's flite)";
        return {};
    }
    const auto a = load_mono_audio(path);
    return resample(a.samples, a.sample_rate, kSr);
}

class FliteSpeech : public ::testing::TestWithParam<std::string> {};

TEST_P(FliteSpeech, GatesPassAndPocketsphinxHearsTheWords) {
    ASSERT_TRUE(test::have_flite()) << "flite is not installed (Debian package flite)";
    if (!asr_available()) RTF_SKIP_OR_FAIL("asr", "built without pocketsphinx: the WER gate reports skipped (no ASR)");
    rtf::test::ScratchDir d("quality");
    Asr asr(AsrConfig{});
    const QualityConfig cfg;
    int errors = 0, words = 0;
    for (size_t i = 0; i < std::size(kSentences); ++i) {
        const auto x = speech(d, GetParam(), i);
        ASSERT_FALSE(x.empty());
        const auto r = check_audio(x, kSr, periodic_boundaries(x.size(), kSr, 1000), cfg);
        EXPECT_TRUE(r.passed()) << kSentences[i] << "\n" << r.to_text();
        const auto w = asr_wer(&asr, x, kSr, kSentences[i], cfg);
        ASSERT_TRUE(w.ran);
        EXPECT_EQ(w.check.status, CheckStatus::Pass) << w.check.reason;
        errors += w.wer.substitutions + w.wer.deletions + w.wer.insertions;
        words += w.wer.n_reference_words;
        std::printf("[%s] WER %5.1f %%  ref \"%s\"  heard \"%s\"\n", GetParam().c_str(), w.wer.wer_pct,
                    kSentences[i], w.transcript.c_str());
    }
    const double wer = 100.0 * errors / words;
    std::printf("[%s] overall WER %.1f %% (%d errors in %d words)\n", GetParam().c_str(), wer, errors, words);
    RecordProperty("wer_pct_x10", static_cast<int>(std::lround(wer * 10)));
    EXPECT_LE(wer, 10.0) << "flite's voices are recognised almost word for word";
}

INSTANTIATE_TEST_SUITE_P(Voices, FliteSpeech, ::testing::Values("slt", "kal16"),
                         [](const auto &p) { return std::string(p.param); });

TEST(FliteEquivalence, RerunPassesLevelChangeAndOtherUtteranceFail) {
    ASSERT_TRUE(test::have_flite());
    rtf::test::ScratchDir d("quality");
    const auto a = speech(d, "slt", 0), again = speech(d, "slt", 0), other = speech(d, "slt", 3);
    ASSERT_FALSE(a.empty());
    const auto same = compare_audio(again, kSr, a, kSr);
    EXPECT_TRUE(same.passed()) << same.to_text();  // flite is deterministic: a bit-identical rerun
    auto quiet = a;
    for (float &v : quiet) v *= 0.501187f;  // -6 dB
    const auto q = compare_audio(quiet, kSr, a, kSr);
    EXPECT_TRUE(q.find("rms_ratio_db")->failed()) << q.to_text();
    EXPECT_TRUE(q.find("log_mel_distance_db")->failed()) << q.to_text();
    const auto o = compare_audio(other, kSr, a, kSr);
    EXPECT_TRUE(o.find("log_mel_distance_db")->failed()) << o.to_text();
    EXPECT_GT(o.find("log_mel_distance_db")->value, 5);
    // Another voice saying the same words is not "the same output" either.
    const auto kal = compare_audio(speech(d, "kal16", 0), kSr, a, kSr);
    EXPECT_FALSE(kal.passed()) << kal.to_text();
}

TEST(FliteDegradations, LoopNoiseAndRedLine) {
    ASSERT_TRUE(test::have_flite());
    rtf::test::ScratchDir d("quality");
    const auto x = speech(d, "slt", 2);
    ASSERT_FALSE(x.empty());
    // A loop of one 80 ms frame taken from the loudest part of real speech.
    size_t peak_at = 0;
    for (size_t i = 0; i < x.size(); ++i)
        if (std::fabs(x[i]) > std::fabs(x[peak_at])) peak_at = i;
    const size_t frame = kSr * 80 / 1000, start = peak_at > frame / 2 ? peak_at - frame / 2 : 0;
    std::vector<float> loop;
    while (loop.size() < 3u * kSr)
        loop.insert(loop.end(), x.begin() + static_cast<long>(start), x.begin() + static_cast<long>(start + frame));
    const auto lr = check_audio(loop, kSr);
    ASSERT_NE(lr.find("loop_ms"), nullptr);
    EXPECT_TRUE(lr.find("loop_ms")->failed()) << lr.to_text();
    EXPECT_FALSE(lr.find("flatness")->failed()) << "the frame is voiced speech, not noise";

    if (!asr_available()) RTF_SKIP_OR_FAIL("asr", "built without pocketsphinx");
    // A dropped stretch (the second half replaced by silence, as when chunks go missing):
    // the words there are lost and the red line against the intact baseline must trip.
    Asr asr(AsrConfig{});
    const QualityConfig cfg;
    auto cut = x;
    std::fill(cut.begin() + static_cast<long>(cut.size() / 2), cut.end(), 0.0f);
    const auto base = asr_wer(&asr, x, kSr, kSentences[2], cfg);
    const auto cand = asr_wer(&asr, cut, kSr, kSentences[2], cfg);
    std::printf("intact WER %.1f %%, half dropped WER %.1f %% (heard \"%s\")\n", base.wer.wer_pct,
                cand.wer.wer_pct, cand.transcript.c_str());
    const auto red = wer_red_line(cand.wer.wer_pct, base.wer.wer_pct, cfg);
    EXPECT_TRUE(red.failed()) << red.reason;
}

}  // namespace
}  // namespace rtf::quality
