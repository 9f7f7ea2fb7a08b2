// The C API (include/rtf/rtf.h) through librtf.so, as an application sees it: bad input is a
// status and a message (never a crash), a run delivers its PCM in order and its result JSON
// agrees with it, cancel (by the callback or from another thread) stops it with valid PCM,
// a handle speaks one utterance at a time, two handles speak at once. Label unit: it runs
// under ASan+UBSan in CI, on a tiny twin kit made here.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/scratch-dir.h"
#include "rtf/rtf.h"
#include "twin/twin.h"

namespace {

// One thread per stage and no machine profile: the same settings on every CPU. Greedy
// sampling and the TTS's EOS mask (fixed at load: they are the engines' settings) make runs
// comparable and at least 2 s long; each run caps its audio (max-audio-s is a run knob).
constexpr const char *kOpen = R"({"profile": "none", "llm-threads": 1, "tts-threads": 1,
                                  "t2w-threads-t2m": 1, "t2w-threads-voc": 1, "greedy": true,
                                  "min-audio-s": 2})";
constexpr const char *kText = "One two three four five six seven.";

struct Pcm {
    std::vector<float> samples;
    int chunks = 0, rate = 0;
    int cancel_after = 0;  // >0: ask to cancel after this many chunks
    std::atomic<int> seen{0};
};

int collect(void *user, const float *pcm, size_t n, int rate) {
    auto *p = static_cast<Pcm *>(user);
    p->samples.insert(p->samples.end(), pcm, pcm + n);
    p->rate = rate;
    ++p->chunks;
    p->seen.fetch_add(1);
    return p->cancel_after > 0 && p->chunks >= p->cancel_after ? 1 : 0;
}

class CApi : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        scratch_ = new rtf::test::ScratchDir("capi-kit");
        rtf::twin::KitOptions o;
        o.out_dir = scratch_->dir.string();
        rtf::twin::make_kit(o);
        ASSERT_EQ(rtf_open(kit().c_str(), kOpen, &engine_), RTF_OK) << rtf_last_error();
    }
    static void TearDownTestSuite() {
        rtf_close(engine_);
        engine_ = nullptr;
        delete scratch_;
    }
    static std::string kit() { return scratch_->dir.string(); }
    static rtf::test::ScratchDir *scratch_;
    static rtf_engine *engine_;
};
rtf::test::ScratchDir *CApi::scratch_ = nullptr;
rtf_engine *CApi::engine_ = nullptr;

}  // namespace

TEST_F(CApi, VersionAndConfig) {
    EXPECT_EQ(rtf_api_version(), RTF_API_VERSION);
    EXPECT_NE(std::string(rtf_version()).find("llama.cpp"), std::string::npos);
    const auto c = nlohmann::json::parse(rtf_config_json(engine_));
    EXPECT_EQ(c["knobs"]["llm-threads"], "1");
    EXPECT_EQ(c["profile"]["name"], "none");
    EXPECT_FALSE(c["knobs"].contains("text"));  // the input is each run's
    EXPECT_TRUE(c["kit"].is_object());
    EXPECT_GT(c["engines"]["load_ms"]["t2w"].get<double>(), 0.0);
}

TEST_F(CApi, BadOpenIsAStatusAndAMessage) {
    rtf_engine *e = reinterpret_cast<rtf_engine *>(this);  // must come back NULL
    auto open_fails = [&](const char *kit_dir, const char *cfg, rtf_status want, const std::string &says) {
        EXPECT_EQ(rtf_open(kit_dir, cfg, &e), want) << (cfg ? cfg : "(null)");
        EXPECT_EQ(e, nullptr);
        EXPECT_NE(std::string(rtf_last_error()).find(says), std::string::npos) << rtf_last_error();
    };
    open_fails(nullptr, nullptr, RTF_ERR_USAGE, "kit_dir");
    open_fails("", nullptr, RTF_ERR_USAGE, "kit_dir");
    open_fails("/nonexistent/kit", nullptr, RTF_ERR_USAGE, "/nonexistent/kit");
    open_fails(kit().c_str(), "{not json", RTF_ERR_USAGE, "config_json: not valid JSON");
    open_fails(kit().c_str(), "[1, 2]", RTF_ERR_USAGE, "JSON object");
    open_fails(kit().c_str(), R"({"no-such-knob": 1})", RTF_ERR_USAGE, "'no-such-knob' is not a speak knob");
    open_fails(kit().c_str(), R"({"max-audio-s": "long"})", RTF_ERR_USAGE, "max-audio-s");
    open_fails(kit().c_str(), R"({"t2w-type-t2m": "f8"})", RTF_ERR_USAGE, "f32");  // names the allowed values
    open_fails(kit().c_str(), R"({"max-audio-s": [1]})", RTF_ERR_USAGE, "string, number or boolean");
    open_fails(kit().c_str(), R"({"profile": "fast"})", RTF_ERR_USAGE, "auto");
    open_fails(kit().c_str(), R"({"models": "/tmp"})", RTF_ERR_USAGE, "input");
    EXPECT_EQ(rtf_open(kit().c_str(), nullptr, nullptr), RTF_ERR_USAGE);
    rtf_close(nullptr);  // fine
}

TEST_F(CApi, BadSpeakIsAStatusAndAMessage) {
    Pcm p;
    EXPECT_EQ(rtf_speak(nullptr, RTF_INPUT_TEXT, kText, nullptr, collect, &p), RTF_ERR_USAGE);
    EXPECT_EQ(rtf_speak(engine_, RTF_INPUT_TEXT, "", nullptr, collect, &p), RTF_ERR_USAGE);
    EXPECT_EQ(rtf_speak(engine_, RTF_INPUT_TEXT, nullptr, nullptr, collect, &p), RTF_ERR_USAGE);
    EXPECT_EQ(rtf_speak(engine_, static_cast<rtf_input>(7), kText, nullptr, collect, &p), RTF_ERR_USAGE);
    EXPECT_EQ(rtf_speak(engine_, RTF_INPUT_TEXT, kText, "{oops", collect, &p), RTF_ERR_USAGE);
    EXPECT_NE(std::string(rtf_last_error()).find("run_knobs_json"), std::string::npos) << rtf_last_error();
    // a knob the engines are built with cannot change per run; its loaded value may be restated
    EXPECT_EQ(rtf_speak(engine_, RTF_INPUT_TEXT, kText, R"({"llm-threads": 2})", collect, &p), RTF_ERR_USAGE);
    EXPECT_NE(std::string(rtf_last_error()).find("fixed when the engines load"), std::string::npos) << rtf_last_error();
    EXPECT_EQ(rtf_speak(engine_, RTF_INPUT_TEXT, kText, R"({"text": "x"})", collect, &p), RTF_ERR_USAGE);
    EXPECT_EQ(p.chunks, 0);
    // the handle is still good after every refusal
    EXPECT_EQ(rtf_speak(engine_, RTF_INPUT_TEXT, kText, R"({"llm-threads": 1, "max-audio-s": 2})", collect, &p),
              RTF_OK) << rtf_last_error();
    EXPECT_GT(p.chunks, 0);
}

TEST_F(CApi, SpeaksInOrderAndTheResultAgrees) {
    Pcm p;
    ASSERT_EQ(rtf_speak(engine_, RTF_INPUT_TEXT, kText, R"({"max-audio-s": 2})",
                        collect, &p), RTF_OK) << rtf_last_error();
    const auto r = nlohmann::json::parse(rtf_result_json(engine_));
    EXPECT_EQ(p.rate, 24000);
    EXPECT_EQ(p.chunks, r["output"]["n_chunks"].get<int>());
    EXPECT_EQ(static_cast<int64_t>(p.samples.size()), r["output"]["n_samples"].get<int64_t>());
    EXPECT_EQ(r["output"]["n_audio_codes"], 50);  // exactly 2 s of codes
    EXPECT_TRUE(r["metrics"].contains("rtf"));
    EXPECT_EQ(r["config"]["input"]["text"], kText);
    // greedy (the open config's) is deterministic: the same run again gives the same PCM
    Pcm q;
    ASSERT_EQ(rtf_speak(engine_, RTF_INPUT_TEXT, kText, R"({"max-audio-s": 2})",
                        collect, &q), RTF_OK) << rtf_last_error();
    EXPECT_EQ(p.samples, q.samples);
}

TEST_F(CApi, PromptModeRunsTheLlm) {
    Pcm p;
    ASSERT_EQ(rtf_speak(engine_, RTF_INPUT_PROMPT, "Tell me a story", R"({"max-audio-s": 2})",
                        collect, &p), RTF_OK) << rtf_last_error();
    const auto r = nlohmann::json::parse(rtf_result_json(engine_));
    EXPECT_GT(r["output"]["n_text_tokens"].get<int>(), 0);
    EXPECT_GT(p.chunks, 0);
}

TEST_F(CApi, TheCallbackCancels) {
    Pcm p;
    p.cancel_after = 1;
    EXPECT_EQ(rtf_speak(engine_, RTF_INPUT_TEXT, kText, R"({"max-audio-s": 6})", collect, &p),
              RTF_CANCELLED);
    EXPECT_EQ(p.chunks, 1);  // nothing after the chunk that asked
    EXPECT_FALSE(p.samples.empty());
    const auto r = nlohmann::json::parse(rtf_result_json(engine_));
    EXPECT_TRUE(r["cancelled"].get<bool>());
    // and the next run is a normal one
    Pcm q;
    EXPECT_EQ(rtf_speak(engine_, RTF_INPUT_TEXT, kText, R"({"max-audio-s": 2})", collect, &q), RTF_OK);
}

TEST_F(CApi, CancelFromAnotherThreadAndOneRunPerHandle) {
    Pcm p;
    std::atomic<rtf_status> second{RTF_OK};
    std::atomic<bool> done{false};
    std::thread canceller([&] {
        // after the first chunk (bounded: a run that fails early must not hang the test)
        for (int i = 0; i < 60000 && p.seen.load() == 0 && !done.load(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        Pcm other;
        second = rtf_speak(engine_, RTF_INPUT_TEXT, kText, nullptr, collect, &other);  // busy
        rtf_cancel(engine_);
    });
    const rtf_status s = rtf_speak(engine_, RTF_INPUT_TEXT, kText, R"({"max-audio-s": 20})",
                                   collect, &p);
    done = true;
    canceller.join();
    EXPECT_EQ(s, RTF_CANCELLED);
    EXPECT_EQ(second.load(), RTF_ERR_BUSY);
    EXPECT_LT(p.samples.size(), 20u * 24000u);
    rtf_cancel(engine_);  // idle: no effect on the next run
    Pcm q;
    EXPECT_EQ(rtf_speak(engine_, RTF_INPUT_TEXT, kText, R"({"max-audio-s": 2})", collect, &q), RTF_OK);
}

TEST_F(CApi, TwoHandlesSpeakAtOnce) {
    rtf_engine *other = nullptr;
    ASSERT_EQ(rtf_open(kit().c_str(), kOpen, &other), RTF_OK) << rtf_last_error();
    Pcm a, b;
    const char *knobs = R"({"max-audio-s": 2})";
    rtf_status sb = RTF_ERR_RUNTIME;
    std::thread t([&] { sb = rtf_speak(other, RTF_INPUT_TEXT, kText, knobs, collect, &b); });
    const rtf_status sa = rtf_speak(engine_, RTF_INPUT_TEXT, kText, knobs, collect, &a);
    t.join();
    EXPECT_EQ(sa, RTF_OK);
    EXPECT_EQ(sb, RTF_OK);
    EXPECT_EQ(a.samples, b.samples);  // same kit, same knobs, greedy: the same speech
    rtf_close(other);
}
