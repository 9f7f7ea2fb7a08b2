// /v1/realtime end to end over a real WebSocket on 127.0.0.1 (serve/realtime.h, websocket.h):
// the duplex service on the tiny twin kit, driven by the WebSocket client. A session's events
// come in order (decisions per frame, text, audio, turn ends); a barge-in stops the reply within
// one chunk; malformed messages get error events and the session goes on; a full service
// refuses with 429 and a dropped client frees its slot. Every wait is bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/tiny-kit.h"
#include "serve/base64.h"
#include "serve/realtime.h"
#include "serve/websocket.h"

using json = nlohmann::json;
using namespace rtf;

namespace {

std::unique_ptr<test::TinyKit> kit_;

// `seconds` of a 16 kHz tone with a little noise, s16le.
std::string pcm16(double seconds, double hz = 220) {
    const size_t n = static_cast<size_t>(seconds * 16000);
    std::string out(n * 2, '\0');
    uint32_t x = 12345;
    for (size_t i = 0; i < n; ++i) {
        x = x * 1664525u + 1013904223u;
        const double v = 0.3 * std::sin(2 * M_PI * hz * static_cast<double>(i) / 16000) + 0.05 * ((x >> 8) / 16777216.0 - 0.5);
        const auto s = static_cast<int16_t>(std::lrint(v * 32767));
        std::memcpy(&out[2 * i], &s, 2);
    }
    return out;
}

class Realtime : public ::testing::Test {
protected:
    static void SetUpTestSuite() { kit_ = std::make_unique<test::TinyKit>("realtime"); }
    static void TearDownTestSuite() { kit_.reset(); }

    void start(int sessions = 1, double idle_s = 30) {
        serve::RealtimeConfig rc;
        rc.sessions = sessions;
        rc.idle_timeout_s = idle_s;
        rc.duplex.models_dir = kit_->dir;
        rc.duplex.threads = 1;
        rt_ = std::make_unique<serve::Realtime>(rc);
        port_ = rt_->bind("127.0.0.1", 0);
        rt_->start();
    }
    void TearDown() override {
        if (rt_) rt_->stop();
    }
    int open(serve::ws::Client &c, std::string *body = nullptr) { return c.connect("127.0.0.1", port_, "/v1/realtime", 10000, body); }
    // The next JSON event (fails the test after `timeout_ms`).
    static json next(serve::ws::Client &c, double timeout_ms = 60000) {
        auto m = c.receive(timeout_ms);
        if (!m) {
            ADD_FAILURE() << "no event within " << timeout_ms << " ms (closed: " << c.closed() << ")";
            return json{{"type", "(none)"}};
        }
        EXPECT_FALSE(m->binary);
        return json::parse(m->data);
    }
    // Events until (and with) the first of `type`.
    static std::vector<json> until(serve::ws::Client &c, const std::string &type, double timeout_ms = 120000) {
        std::vector<json> ev;
        const auto t0 = std::chrono::steady_clock::now();
        while (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() < timeout_ms) {
            json e = next(c, timeout_ms);
            ev.push_back(e);
            if (e["type"] == type || e["type"] == "(none)") break;
        }
        return ev;
    }
    std::unique_ptr<serve::Realtime> rt_;
    int port_ = 0;
};

TEST_F(Realtime, SessionEventsInOrder) {
    start();
    serve::ws::Client c;
    ASSERT_EQ(open(c), 101);
    json created = next(c);
    ASSERT_EQ(created["type"], "session.created");
    EXPECT_EQ(created["session"]["input_audio_format"]["rate"], 16000);
    EXPECT_EQ(created["session"]["output_audio_format"]["rate"], 24000);
    ASSERT_TRUE(c.send(json{{"type", "session.update"}, {"session", {{"speak_frames", "3-4"}}}}.dump(), false));
    EXPECT_EQ(next(c)["type"], "session.updated");
    // 6 frames: half as binary messages, half as base64 JSON, then the end of the input.
    for (int i = 0; i < 6; ++i) {
        const std::string a = pcm16(1.0, 200 + 20 * i);
        if (i % 2 == 0) ASSERT_TRUE(c.send(a, true));
        else ASSERT_TRUE(c.send(json{{"type", "input_audio_buffer.append"}, {"audio", serve::base64_encode(a)}}.dump(), false));
    }
    ASSERT_TRUE(c.send(R"({"type":"session.finish"})", false));
    auto ev = until(c, "session.ended");
    ASSERT_EQ(ev.back()["type"], "session.ended");

    std::vector<int> frames;
    std::vector<std::string> decisions;
    int created_at = -1, first_audio_at = -1, done_at = -1, n_audio = 0, n_text = 0;
    size_t audio_bytes = 0;
    std::string rid;
    for (size_t i = 0; i < ev.size(); ++i) {
        const json &e = ev[i];
        const std::string t = e["type"];
        if (t == "rtf.frame") {
            frames.push_back(e["frame"]);
            decisions.push_back(e["decision"]);
            EXPECT_GE(e["timings"]["latency_ms"].get<double>(), 0.0);
            EXPECT_GE(e["timings"]["t_done_ms"].get<double>(), e["timings"]["t_push_ms"].get<double>());
        } else if (t == "response.created") {
            EXPECT_EQ(created_at, -1) << "one reply";
            created_at = static_cast<int>(i);
            rid = e["response"]["id"];
        } else if (t == "response.audio_transcript.delta") {
            EXPECT_EQ(e["response_id"], rid);
            EXPECT_GE(created_at, 0);
            ++n_text;
        } else if (t == "response.audio.delta") {
            EXPECT_EQ(e["response_id"], rid);
            if (first_audio_at < 0) first_audio_at = static_cast<int>(i);
            auto b = serve::base64_decode(e["delta"].get<std::string>());
            ASSERT_TRUE(b);
            EXPECT_EQ(b->size() % 2, 0u);
            audio_bytes += b->size();
            ++n_audio;
        } else if (t == "response.done") {
            EXPECT_EQ(e["response"]["status"], "completed");
            done_at = static_cast<int>(i);
        } else if (t == "error") {
            ADD_FAILURE() << e.dump();
        }
    }
    EXPECT_EQ(frames, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(decisions, (std::vector<std::string>{"listen", "listen", "listen", "speak", "speak", "listen"}));
    ASSERT_GE(created_at, 0);
    EXPECT_EQ(n_text, 2) << "one transcript delta per speaking frame";
    EXPECT_GT(n_audio, 0);
    EXPECT_GT(first_audio_at, created_at);
    EXPECT_GT(done_at, first_audio_at);
    const json &s = ev.back()["session"];
    EXPECT_EQ(s["frames"], 6);
    EXPECT_EQ(s["replies"], 1);
    EXPECT_TRUE(s["completed"].get<bool>());
    EXPECT_NEAR(s["audio_s_sent"].get<double>(), static_cast<double>(audio_bytes / 2) / 24000.0, 1e-6);
    EXPECT_EQ(ev.back()["timeline"]["schema"], "rtfkit.duplex/1");
    // The server closes after session.ended.
    for (int i = 0; i < 50 && !c.closed(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(c.closed());
    EXPECT_EQ(c.close_code(), 1000);
}

TEST_F(Realtime, BargeInStopsTheReplyWithinOneChunk) {
    start();
    serve::ws::Client c;
    ASSERT_EQ(open(c), 101);
    ASSERT_EQ(next(c)["type"], "session.created");
    // A long scheduled reply (frames 3-9), cancelled at its first audio.
    ASSERT_TRUE(c.send(json{{"type", "session.update"}, {"session", {{"speak_frames", "3-9"}}}}.dump(), false));
    ASSERT_EQ(next(c)["type"], "session.updated");
    // Frames 0-4 first (the reply starts at 3), the rest once the cancel is out: the LLM cannot
    // have run ahead through the schedule.
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(c.send(pcm16(1.0), true));
    std::string rid;
    auto ev = until(c, "response.audio.delta");
    ASSERT_EQ(ev.back()["type"], "response.audio.delta");
    rid = ev.back()["response_id"];
    ASSERT_TRUE(c.send(R"({"type":"response.cancel"})", false));
    for (int i = 5; i < 12; ++i) ASSERT_TRUE(c.send(pcm16(1.0), true));
    ASSERT_TRUE(c.send(R"({"type":"session.finish"})", false));
    int deltas_before_done = 0, deltas_after_done = 0, speak_after = 0;
    bool done = false;
    json ended;
    while (true) {
        json e = next(c, 120000);
        const std::string t = e["type"];
        if (t == "(none)") break;
        if (t == "response.audio.delta") {
            EXPECT_EQ(e["response_id"], rid) << "no new reply after the cancel (the schedule's range ends at 9)";
            (done ? deltas_after_done : deltas_before_done)++;
        } else if (t == "response.done") {
            EXPECT_EQ(e["response"]["id"], rid);
            EXPECT_EQ(e["response"]["status"], "cancelled");
            done = true;
        } else if (t == "rtf.frame" && done && e["decision"] == "speak") {
            ++speak_after;
        } else if (t == "session.ended") {
            ended = e;
            break;
        }
    }
    int spoke = 0;
    for (const auto &f : ended["timeline"]["frames"]) spoke += f["is_speak"].get<bool>() ? 1 : 0;
    std::printf("barge-in: %d delta(s) between the cancel and its response.done, %d after; %d speaking frame(s) after it; "
                "%d of the schedule's 7 spoke\n", deltas_before_done, deltas_after_done, speak_after, spoke);
    EXPECT_EQ(spoke, 2) << "frames 3 and 4 spoke before the cancel, 5-9 listened";
    EXPECT_TRUE(done);
    EXPECT_LE(deltas_before_done, 1) << "the cancel takes effect within one chunk";
    EXPECT_EQ(deltas_after_done, 0);
    EXPECT_EQ(speak_after, 0) << "the LLM listens to the end of the scheduled range once the cancel reached it";
    ASSERT_EQ(ended["type"], "session.ended");
    EXPECT_EQ(ended["session"]["frames"], 12);
}

TEST_F(Realtime, MalformedMessagesGetErrorsAndTheSessionGoesOn) {
    start();
    serve::ws::Client c;
    ASSERT_EQ(open(c), 101);
    ASSERT_EQ(next(c)["type"], "session.created");
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"not json", "invalid_json"},
        {R"({"no_type":1})", "invalid_json"},
        {R"({"type":"bogus.event"})", "unknown_event"},
        {R"({"type":"input_audio_buffer.append","audio":"@@@"})", "invalid_base64"},
        {R"({"type":"input_audio_buffer.append"})", "missing_audio"},
        {R"({"type":"session.update","session":{"speak_frames":"1-2"}})", "invalid_speak_frames"},
        {R"({"type":"session.update","session":{"output_audio_format":"aiff"}})", "invalid_value"},
        {R"({"type":"response.cancel"})", "response_cancel_not_active"},
    };
    for (const auto &[msg, code] : bad) {
        ASSERT_TRUE(c.send(msg, false));
        json e = next(c, 10000);
        EXPECT_EQ(e["type"], "error") << msg;
        EXPECT_EQ(e["error"]["code"], code) << msg;
    }
    ASSERT_TRUE(c.send(std::string(3, '\0'), true));  // odd byte count
    EXPECT_EQ(next(c, 10000)["error"]["code"], "invalid_audio");
    // Still serving: a short session runs to its end.
    ASSERT_TRUE(c.send(pcm16(2.0), true));
    ASSERT_TRUE(c.send(R"({"type":"session.finish"})", false));
    auto ev = until(c, "session.ended");
    ASSERT_EQ(ev.back()["type"], "session.ended");
    EXPECT_EQ(ev.back()["session"]["frames"], 2);
}

TEST_F(Realtime, FullServiceRefusesAndADroppedClientFreesItsSlot) {
    start(1);
    {  // a wrong path: 404
        serve::ws::Client x;
        EXPECT_EQ(x.connect("127.0.0.1", port_, "/v1/nope", 10000), 404);
    }
    auto a = std::make_unique<serve::ws::Client>();
    ASSERT_EQ(open(*a), 101);
    ASSERT_EQ(next(*a)["type"], "session.created");
    ASSERT_TRUE(a->send(json{{"type", "session.update"}, {"session", {{"speak_frames", "3-20"}}}}.dump(), false));
    ASSERT_EQ(next(*a)["type"], "session.updated");
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(a->send(pcm16(1.0), true));
    {  // every session busy: 429 with a JSON body
        serve::ws::Client b;
        std::string body;
        EXPECT_EQ(open(b, &body), 429);
        EXPECT_NE(body.find("rate_limit_exceeded"), std::string::npos) << body;
    }
    // Mid-reply, the client vanishes without a close handshake.
    auto ev = until(*a, "response.audio.delta");
    ASSERT_EQ(ev.back()["type"], "response.audio.delta");
    a->drop();
    // The slot frees within a bounded time: a new session is admitted.
    int status = 0;
    for (int i = 0; i < 100 && status != 101; ++i) {
        serve::ws::Client c;
        status = open(c);
        if (status != 101) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_EQ(status, 101);
    a.reset();
}

TEST_F(Realtime, AnIdleSessionIsClosed) {
    start(1, 0.5);
    serve::ws::Client c;
    ASSERT_EQ(open(c), 101);
    ASSERT_EQ(next(c)["type"], "session.created");
    json e = next(c, 10000);
    EXPECT_EQ(e["error"]["code"], "session_idle");
    for (int i = 0; i < 50 && !c.closed(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(c.closed());
    EXPECT_EQ(c.close_code(), 1008);
    serve::ws::Client d;  // and its slot is free
    int status = 0;
    for (int i = 0; i < 50 && status != 101; ++i) {
        status = open(d);
        if (status != 101) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(status, 101);
}

}  // namespace

namespace {
TEST_F(Realtime, OpusRepliesAreOneOggStreamEach) {
    start();
    serve::ws::Client c;
    ASSERT_EQ(open(c), 101);
    ASSERT_EQ(next(c)["type"], "session.created");
    ASSERT_TRUE(c.send(json{{"type", "session.update"}, {"session", {{"speak_frames", "3-4"}, {"output_audio_format", "opus"}}}}.dump(),
                       false));
    json up = next(c);
    ASSERT_EQ(up["type"], "session.updated") << up.dump();
    EXPECT_EQ(up["session"]["output_audio_format"], "opus");
    ASSERT_TRUE(c.send(pcm16(6.0), true));
    ASSERT_TRUE(c.send(R"({"type":"session.finish"})", false));
    auto ev = until(c, "session.ended");
    ASSERT_EQ(ev.back()["type"], "session.ended");
    std::string ogg;
    double audio_s = -1;
    for (const auto &e : ev) {
        if (e["type"] == "response.audio.delta") ogg += *serve::base64_decode(e["delta"].get<std::string>());
        if (e["type"] == "response.done") audio_s = e["response"]["audio_s"].get<double>();
    }
    // One Ogg stream: it opens with the OpusHead page and holds the end-of-stream flag once.
    ASSERT_GT(ogg.size(), 100u);
    EXPECT_EQ(ogg.substr(0, 4), "OggS");
    EXPECT_NE(ogg.find("OpusHead"), std::string::npos);
    size_t eos = 0;
    for (size_t p = ogg.find("OggS"); p != std::string::npos && p + 5 < ogg.size(); p = ogg.find("OggS", p + 4))
        if (static_cast<unsigned char>(ogg[p + 5]) & 0x04) ++eos;
    EXPECT_EQ(eos, 1u);
    EXPECT_GT(audio_s, 0.0);
}
}  // namespace
