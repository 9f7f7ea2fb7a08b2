// The C API (include/rtf/rtf.h) through librtf.so, as an application sees it (label unit: also
// under ASan+UBSan in CI, so one engine load): bad input is a status and a message, never a
// crash; cancel, by the callback or from another thread, stops a run with valid PCM; a handle
// speaks one utterance at a time and is still good after every refusal. test-capi-runs.cpp
// has the longer runs (PCM vs result JSON, determinism, prompt mode, two handles at once).
#include "capi-fixture.h"

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


// One engine load for all of it (under ASan a load takes most of a minute).
TEST_F(CApi, SpeaksCancelsAndRefuses) {
    {
        Pcm p;
        EXPECT_EQ(rtf_speak(nullptr, RTF_INPUT_TEXT, kText, nullptr, collect, &p), RTF_ERR_USAGE);
        EXPECT_EQ(rtf_speak(engine(), RTF_INPUT_TEXT, "", nullptr, collect, &p), RTF_ERR_USAGE);
        EXPECT_EQ(rtf_speak(engine(), RTF_INPUT_TEXT, nullptr, nullptr, collect, &p), RTF_ERR_USAGE);
        EXPECT_EQ(rtf_speak(engine(), 7, kText, nullptr, collect, &p), RTF_ERR_USAGE);
        EXPECT_EQ(rtf_speak(engine(), RTF_INPUT_TEXT, kText, "{oops", collect, &p), RTF_ERR_USAGE);
        EXPECT_NE(std::string(rtf_last_error()).find("run_knobs_json"), std::string::npos) << rtf_last_error();
        // a knob the engines are built with cannot change per run; its loaded value may be restated
        EXPECT_EQ(rtf_speak(engine(), RTF_INPUT_TEXT, kText, R"({"llm-threads": 2})", collect, &p), RTF_ERR_USAGE);
        EXPECT_NE(std::string(rtf_last_error()).find("fixed when the engines load"), std::string::npos) << rtf_last_error();
        EXPECT_EQ(rtf_speak(engine(), RTF_INPUT_TEXT, kText, R"({"text": "x"})", collect, &p), RTF_ERR_USAGE);
        EXPECT_EQ(p.chunks, 0);
    }
    {   // the handle is still good after every refusal: it speaks, and cancels
        Pcm p;
        p.cancel_after = 1;
        EXPECT_EQ(rtf_speak(engine(), RTF_INPUT_TEXT, kText, R"({"max-audio-s": 6})", collect, &p),
                  RTF_CANCELLED);
        EXPECT_EQ(p.chunks, 1);  // nothing after the chunk that asked
        EXPECT_FALSE(p.samples.empty());
        EXPECT_TRUE(nlohmann::json::parse(rtf_result_json(engine()))["cancelled"].get<bool>());

        Pcm r;
        std::atomic<rtf_status> second{RTF_OK};
        std::atomic<bool> done{false};
        std::thread canceller([&] {
            // after the first chunk (bounded: a run that fails early must not hang the test)
            for (int i = 0; i < 60000 && r.seen.load() == 0 && !done.load(); ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            Pcm other;
            second = rtf_speak(engine(), RTF_INPUT_TEXT, kText, nullptr, collect, &other);  // busy
            rtf_cancel(engine());
        });
        const rtf_status s = rtf_speak(engine(), RTF_INPUT_TEXT, kText, R"({"max-audio-s": 20})",
                                       collect, &r);
        done = true;
        canceller.join();
        EXPECT_EQ(s, RTF_CANCELLED);
        EXPECT_EQ(second.load(), RTF_ERR_BUSY);
        EXPECT_LT(r.samples.size(), 20u * 24000u);
        rtf_cancel(engine());  // idle: no effect on the next run, which is a normal one
        Pcm z;
        EXPECT_EQ(rtf_speak(engine(), RTF_INPUT_TEXT, kText, R"({"llm-threads": 1, "max-audio-s": 2})", collect, &z),
                  RTF_OK) << rtf_last_error();  // restating a load-time knob's value is fine
        EXPECT_GT(z.chunks, 0);
    }
}
