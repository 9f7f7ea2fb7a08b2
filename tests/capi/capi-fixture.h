#pragma once
// The C API tests' shared pieces: the tiny twin kit (tests/common/tiny-kit.h), one engine
// handle opened on first use, and a PCM collector for the callback.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/tiny-kit.h"
#include "rtf/rtf.h"

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
        kit_ = new rtf::test::TinyKit("capi");
    }
    static void TearDownTestSuite() {
        rtf_close(engine_);
        engine_ = nullptr;
        delete kit_;
    }
    static std::string kit() { return kit_->dir; }
    // Opened on first use (seconds; much more under ASan): the refusals need no engine.
    static rtf_engine *engine() {
        if (!engine_) {
            EXPECT_EQ(rtf_open(kit().c_str(), kOpen, &engine_), RTF_OK) << rtf_last_error();
        }
        return engine_;
    }
    static rtf::test::TinyKit *kit_;
    static rtf_engine *engine_;
};
rtf::test::TinyKit *CApi::kit_ = nullptr;
rtf_engine *CApi::engine_ = nullptr;

}  // namespace
