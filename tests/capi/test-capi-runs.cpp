// The C API's longer runs (label model: the release build only; test-capi.cpp has the checks
// that also run under ASan): the effective config, the PCM in order and equal to the result's
// counts, greedy runs reproducible, prompt mode through the LLM, two handles at once.
#include "capi-fixture.h"

TEST_F(CApi, VersionAndConfig) {
    EXPECT_EQ(rtf_api_version(), RTF_API_VERSION);
    EXPECT_NE(std::string(rtf_version()).find("llama.cpp"), std::string::npos);
    const auto c = nlohmann::json::parse(rtf_config_json(engine()));
    EXPECT_EQ(c["knobs"]["llm-threads"], "1");
    EXPECT_EQ(c["profile"]["name"], "none");
    EXPECT_FALSE(c["knobs"].contains("text"));  // the input is each run's
    EXPECT_TRUE(c["kit"].is_object());
    EXPECT_GT(c["engines"]["load_ms"]["t2w"].get<double>(), 0.0);
}


TEST_F(CApi, SpeaksInOrderAndTheResultAgrees) {
    Pcm p;
    ASSERT_EQ(rtf_speak(engine(), RTF_INPUT_TEXT, kText, R"({"max-audio-s": 2})",
                        collect, &p), RTF_OK) << rtf_last_error();
    const auto r = nlohmann::json::parse(rtf_result_json(engine()));
    EXPECT_EQ(p.rate, 24000);
    EXPECT_EQ(p.chunks, r["output"]["n_chunks"].get<int>());
    EXPECT_EQ(static_cast<int64_t>(p.samples.size()), r["output"]["n_samples"].get<int64_t>());
    EXPECT_EQ(r["output"]["n_audio_codes"], 50);  // exactly 2 s of codes
    EXPECT_TRUE(r["metrics"].contains("rtf"));
    EXPECT_EQ(r["config"]["input"]["text"], kText);
    // greedy (the open config's) is deterministic: the same run again gives the same PCM
    Pcm q;
    ASSERT_EQ(rtf_speak(engine(), RTF_INPUT_TEXT, kText, R"({"max-audio-s": 2})",
                        collect, &q), RTF_OK) << rtf_last_error();
    EXPECT_EQ(p.samples, q.samples);
}


TEST_F(CApi, PromptModeRunsTheLlm) {
    Pcm p;
    ASSERT_EQ(rtf_speak(engine(), RTF_INPUT_PROMPT, "Tell me a story", R"({"max-audio-s": 2})",
                        collect, &p), RTF_OK) << rtf_last_error();
    const auto r = nlohmann::json::parse(rtf_result_json(engine()));
    EXPECT_GT(r["output"]["n_text_tokens"].get<int>(), 0);
    EXPECT_GT(p.chunks, 0);
}


TEST_F(CApi, TwoHandlesSpeakAtOnce) {
    rtf_engine *other = nullptr;
    ASSERT_EQ(rtf_open(kit().c_str(), kOpen, &other), RTF_OK) << rtf_last_error();
    Pcm a, b;
    const char *knobs = R"({"max-audio-s": 2})";
    rtf_status sb = RTF_ERR_RUNTIME;
    std::thread t([&] { sb = rtf_speak(other, RTF_INPUT_TEXT, kText, knobs, collect, &b); });
    const rtf_status sa = rtf_speak(engine(), RTF_INPUT_TEXT, kText, knobs, collect, &a);
    t.join();
    EXPECT_EQ(sa, RTF_OK);
    EXPECT_EQ(sb, RTF_OK);
    EXPECT_EQ(a.samples, b.samples);  // same kit, same knobs, greedy: the same speech
    rtf_close(other);
}
