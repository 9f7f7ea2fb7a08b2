// src/speak on a tiny twin kit, in-process (label model): the TTS -> Token2Wav hand-off
// (one PCM chunk per Token2Wav window, in order), the audio cap (exactly max-audio-s of
// codes), the final marker (one, on the last chunk) and the twin text-rate cap. The CLI
// paths are covered end to end by speak.sh; these pin the layer's own contract.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "common/tiny-kit.h"
#include "core/error.h"
#include "speak/knobs.h"
#include "speak/speak.h"
#include "twin/twin.h"

using namespace rtf;
namespace fs = std::filesystem;

namespace {
class Speak : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        kit_ = std::make_unique<rtf::test::TinyKit>("speak");
        dir_ = kit_->dir;
    }
    static void TearDownTestSuite() { kit_.reset(); }
    static speak::SpeakConfig config(const std::vector<std::pair<std::string, std::string>> &knobs) {
        speak::SpeakConfig c = speak::default_config();
        speak::apply_knobs(c, {{"models", dir_}, {"llm-threads", "1"}, {"tts-threads", "1"}, {"t2w-threads-t2m", "1"},
                               {"t2w-threads-voc", "1"}});
        speak::apply_knobs(c, knobs);
        speak::finalize(c);
        return c;
    }
    static std::unique_ptr<rtf::test::TinyKit> kit_;
    static std::string dir_;
};
std::unique_ptr<rtf::test::TinyKit> Speak::kit_;
std::string Speak::dir_;
}  // namespace

TEST_F(Speak, HandOffCapAndFinalMarker) {
    auto cfg = config({{"text", "One two three four five six seven."}, {"max-audio-s", "2"}, {"min-audio-s", "2"}});
    auto engines = speak::load_engines(cfg);
    std::vector<pipe::Item> chunks;
    auto r = speak::speak(*engines, cfg, [&](const pipe::Item &c) { chunks.push_back(c); });
    ASSERT_FALSE(r.run.cancelled);
    // the cap: exactly 2 s of codes (EOS masked until then, generation stopped there)
    EXPECT_EQ(r.audio_codes.size(), 50u);
    // hand-off: one chunk per window, in order, each with PCM at 24 kHz
    ASSERT_GE(chunks.size(), 2u);
    EXPECT_EQ(static_cast<int64_t>(chunks.size()), r.n_chunks);
    int64_t samples = 0, n_last = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
        EXPECT_FALSE(chunks[i].pcm.empty()) << i;
        EXPECT_EQ(chunks[i].sample_rate, 24000) << i;
        EXPECT_GT(chunks[i].audio_ms, 0) << i;
        if (i > 0) {
            EXPECT_GT(chunks[i].seq, chunks[i - 1].seq);
        }
        samples += static_cast<int64_t>(chunks[i].pcm.size());
        n_last += chunks[i].last ? 1 : 0;
    }
    EXPECT_EQ(samples, r.n_samples);
    // the final marker: exactly one, on the last chunk
    EXPECT_EQ(n_last, 1);
    EXPECT_TRUE(chunks.back().last);
    // 50 codes + the final window's 3 look-ahead codes rendered: 2.12 s
    EXPECT_NEAR(static_cast<double>(samples) / 24000.0, 2.0, 0.2);
    EXPECT_EQ(r.twin_text_cap, 0);  // text mode: never capped
}

TEST_F(Speak, TwinPromptModeIsCappedAtTheTextRate) {
    auto cfg = config({{"prompt", "Tell me a story"}, {"max-audio-s", "3"}, {"max-tokens", "200"}});
    const auto given = cfg.to_json();
    auto engines = speak::load_engines(cfg);
    ASSERT_TRUE(engines->kit.is_twin);
    EXPECT_EQ(cfg.to_json(), given) << "load_engines changed its argument";
    EXPECT_EQ(engines->config.llm.model_path, engines->kit.llm);
    EXPECT_EQ(engines->config.tts.model_path, engines->kit.tts);
    auto r = speak::speak(*engines, cfg, [](const pipe::Item &) {});
    EXPECT_EQ(r.twin_text_cap, 12);  // 4 tokens/s x 3 s
    EXPECT_LE(r.text_tokens.size(), 12u);
    EXPECT_EQ(r.audio_codes.size(), 75u);  // and the work size is the cap's 3 s, not the twin's EOS
    EXPECT_DOUBLE_EQ(engines->config.min_audio_s, 3.0);  // the twin's EOS mask, derived at load
    EXPECT_EQ(speak::twin_text_cap(cfg, false), 0);  // a real kit is never capped
}

// First audio: the breakdown's parts are all measured, non-negative and sum to
// first_audio_ms; the engines are warm (no Token2Wav graph built during either of two
// utterances on the same engines); and the same engines serve another T2W config only by
// rebuilding the stream, which the result says.
TEST_F(Speak, FirstAudioBreakdownAndWarmEngines) {
    auto cfg = config({{"text", "One two three four five six seven."}, {"max-audio-s", "2"}, {"min-audio-s", "2"}});
    auto engines = speak::load_engines(cfg);
    for (int utt = 0; utt < 2; ++utt) {
        auto r = speak::speak(*engines, cfg, [](const pipe::Item &) {});
        const auto &f = r.first_audio;
        const double parts[] = {f.llm_prefill_ms, f.llm_first_step_ms, f.tts_first_code_ms, f.tts_fill_window_ms,
                                f.t2w_wait_ms, f.t2w_first_window_ms};
        double sum = 0;
        for (double p : parts) {
            ASSERT_TRUE(std::isfinite(p)) << speak::to_line(f);
            EXPECT_GE(p, 0.0) << speak::to_line(f);
            sum += p;
        }
        EXPECT_NEAR(sum, r.run.metrics.first_audio_ms, 1.0) << speak::to_line(f);
        EXPECT_GT(f.t2w_first_window_ms, 0.0);
        EXPECT_EQ(f.window_codes, 25);  // 28 tokens - 3 lead silence
        EXPECT_EQ(r.t2w_graphs_built, 0) << "utterance " << utt;
        EXPECT_FALSE(r.t2w_rebuilt);
    }
    auto other = cfg;
    other.t2w.first_window = 10;
    auto r = speak::speak(*engines, other, [](const pipe::Item &) {});
    EXPECT_TRUE(r.t2w_rebuilt);
    EXPECT_EQ(r.t2w_graphs_built, 0);  // rebuilt and warmed before the run, not during it
}

// Speaks `cfg` (2 s of text, an 8-token first window, maybe a ramp): the PCM chunks' sizes
// (one per Token2Wav window), with the checks every such windowing shares: the TTS's first
// hand-off is the first window's 5 codes, 50 codes in all, every graph built at load, a last chunk.
static std::vector<size_t> chunk_sizes(const speak::SpeakConfig &cfg) {
    auto engines = speak::load_engines(cfg);
    std::vector<pipe::Item> chunks;
    auto r = speak::speak(*engines, cfg, [&](const pipe::Item &c) { chunks.push_back(c); });
    EXPECT_EQ(r.first_audio.window_codes, 5);
    EXPECT_EQ(r.audio_codes.size(), 50u);
    EXPECT_EQ(r.t2w_graphs_built, 0);
    EXPECT_TRUE(!chunks.empty() && chunks.back().last);
    std::vector<size_t> sizes;
    for (const auto &c : chunks) sizes.push_back(c.pcm.size());
    return sizes;
}

// --t2w-first-window 8: the TTS hands on its first 5 codes at once, Token2Wav's first
// window is 8 tokens (10 mel frames -> 4800 samples, 3840 trimmed: 960), and the rest of
// the utterance keeps the reference's 28/25 windowing.
TEST_F(Speak, ShortFirstWindowStartsAfterFewCodes) {
    const auto sizes = chunk_sizes(config({{"text", "One two three four five six seven."}, {"max-audio-s", "2"},
                                           {"min-audio-s", "2"}, {"t2w-first-window", "8"}}));
    ASSERT_GE(sizes.size(), 3u);
    EXPECT_EQ(sizes[0], 960u);
    EXPECT_EQ(sizes[1], 24000u);
}

// --t2w-ramp 12,20 after a first window of 8: the TTS hands on 5, 9 and 17 codes, Token2Wav
// runs windows of 8, 12 and 20 tokens (960, 8640 and 16320 samples), then the final one;
// the ramp's graphs were built at load.
TEST_F(Speak, RampWindowsFollowTheFirst) {
    auto cfg = config({{"text", "One two three four five six seven."}, {"max-audio-s", "2"}, {"min-audio-s", "2"},
                       {"t2w-first-window", "8"}, {"t2w-ramp", "12,20"}});
    EXPECT_EQ(cfg.t2w.ramp, (std::vector<int>{12, 20}));
    const auto sizes = chunk_sizes(cfg);
    ASSERT_GE(sizes.size(), 4u);
    EXPECT_EQ(sizes[0], 960u);
    EXPECT_EQ(sizes[1], 8640u);
    EXPECT_EQ(sizes[2], 16320u);
    EXPECT_THROW(config({{"text", "a"}, {"t2w-ramp", "12,x"}}), rtf::Error);
    EXPECT_THROW(config({{"text", "a"}, {"t2w-ramp", "30"}}), rtf::Error);
    EXPECT_TRUE(config({{"text", "a"}, {"t2w-ramp", "off"}}).t2w.ramp.empty());
}

// --first-audio-priority changes when the LLM and TTS work, not what anyone computes: the
// same codes and the same PCM, sample for sample, with the TTS paused during the first
// window. With 3-token LLM steps the TTS needs several steps before the first window's
// codes, so the held-back LLM must hand them on as the TTS asks (tts_hungry), never
// waiting out its deadline.
TEST_F(Speak, FirstAudioPriorityKeepsTheMath) {
    auto base = config({{"text", "One two three four five six seven eight nine ten eleven twelve."},
                        {"max-audio-s", "2"}, {"min-audio-s", "2"}, {"llm-step", "3"}, {"t2w-first-window", "10"}});
    auto prio = base;
    prio.first_audio_priority = true;
    prio.first_audio_wait_max_ms = 120000;  // no wait may run out, however slow the first window is here
    auto engines = speak::load_engines(base);
    std::vector<float> a, b;
    auto ra = speak::speak(*engines, base, [&](const pipe::Item &c) { a.insert(a.end(), c.pcm.begin(), c.pcm.end()); });
    auto rb = speak::speak(*engines, prio, [&](const pipe::Item &c) { b.insert(b.end(), c.pcm.begin(), c.pcm.end()); });
    EXPECT_FALSE(rb.t2w_rebuilt);  // a pipeline knob: the warm stream serves both
    EXPECT_EQ(ra.audio_codes, rb.audio_codes);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(a, b);
    EXPECT_TRUE(std::isfinite(rb.first_audio.t2w_first_window_ms));
    // How far the LLM got ahead before the audio cap stopped the run depends on the
    // schedule (either run may have made more text), so compare the common prefix.
    const size_t n = std::min(ra.text_tokens.size(), rb.text_tokens.size());
    ASSERT_GT(n, 6u);
    EXPECT_TRUE(std::equal(rb.text_tokens.begin(), rb.text_tokens.begin() + n, ra.text_tokens.begin()));
    EXPECT_EQ(rb.first_audio.priority_timeouts, 0) << speak::to_line(rb.first_audio);
}

// Voices: the twin kit's two extra voices speak the same codes differently; switching back
// gives the default's audio bit for bit (a switch leaves nothing of the other voice behind);
// an unknown voice is a Usage error naming the kit's voices; a voice is loaded once.
TEST_F(Speak, VoicesSwitchCleanlyAndDiffer) {
    auto base = config({{"text", "One two three four five six."}, {"max-audio-s", "1.2"}, {"min-audio-s", "1.2"},
                        {"greedy", "true"}});
    auto engines = speak::load_engines(base);
    ASSERT_EQ(engines->voices->names(), (std::vector<std::string>{"default", "twin-a", "twin-b"}));
    auto pcm_of = [&](const std::string &voice, speak::SpeakResult *out = nullptr) {
        auto cfg = base;
        speak::apply_knob(cfg, "voice", voice);
        std::vector<float> pcm;
        auto r = speak::speak(*engines, cfg, [&](const pipe::Item &c) { pcm.insert(pcm.end(), c.pcm.begin(), c.pcm.end()); });
        if (out) *out = r;
        return pcm;
    };
    speak::SpeakResult ra, rd;
    const auto d1 = pcm_of("default");
    const auto a = pcm_of("twin-a", &ra);
    const auto b = pcm_of("twin-b");
    const auto d2 = pcm_of("default", &rd);
    ASSERT_FALSE(d1.empty());
    EXPECT_EQ(ra.voice, "twin-a");
    EXPECT_GT(ra.voice_switch_ms, 0);
    EXPECT_EQ(rd.voice, "default");
    EXPECT_EQ(ra.audio_codes, rd.audio_codes);  // the same codes (greedy): only Token2Wav's voice differs
    EXPECT_NE(a, d1);
    EXPECT_NE(a, b);
    EXPECT_EQ(d2, d1);
    EXPECT_EQ(pcm_of("twin-a"), a);
    auto cfg = base;
    speak::apply_knob(cfg, "voice", "nobody");
    try {
        speak::speak(*engines, cfg, [](const pipe::Item &) {});
        ADD_FAILURE() << "no error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("default, twin-a, twin-b"), std::string::npos) << e.what();
    }
    const auto j = engines->voices->to_json();
    EXPECT_TRUE(j.at(1).at("loaded").get<bool>());
}

// speed: 2 halves the audio the sink gets (exactly round(n / 2)), 1 leaves it bit-identical
// to a run without the knob; the pipeline's own figures stay the model's audio.
TEST_F(Speak, SpeedStretchesTheOutputOnly) {
    auto base = config({{"text", "One two three four five six."}, {"max-audio-s", "1.2"}, {"min-audio-s", "1.2"},
                        {"greedy", "true"}});
    auto engines = speak::load_engines(base);
    auto run = [&](const std::string &speed, speak::SpeakResult &r) {
        auto cfg = base;
        if (!speed.empty()) speak::apply_knob(cfg, "speed", speed);
        std::vector<float> pcm;
        int n_last = 0;
        bool last_is_last = false;
        r = speak::speak(*engines, cfg, [&](const pipe::Item &c) {
            pcm.insert(pcm.end(), c.pcm.begin(), c.pcm.end());
            n_last += c.last ? 1 : 0;
            last_is_last = c.last;
        });
        EXPECT_EQ(n_last, 1) << "speed " << speed << ": one final marker";
        EXPECT_TRUE(last_is_last) << "speed " << speed << ": on the last chunk";
        return pcm;
    };
    speak::SpeakResult r0, r1, r2;
    const auto plain = run("", r0), one = run("1", r1), two = run("2", r2);
    EXPECT_EQ(one, plain);
    EXPECT_EQ(r2.n_samples, r0.n_samples);  // the model made the same audio
    EXPECT_EQ(static_cast<int64_t>(two.size()), std::llround(static_cast<double>(r0.n_samples) / 2.0));
    EXPECT_EQ(r2.n_samples_out, static_cast<int64_t>(two.size()));
    EXPECT_EQ(r0.n_samples_out, r0.n_samples);
    EXPECT_THROW(speak::apply_knob(base, "speed", "5"), Error);
}
