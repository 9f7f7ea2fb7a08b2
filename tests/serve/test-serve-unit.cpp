// The serve layer without a model: request parsing (every refusal names its field), the
// admission gate (FIFO, queue limit, timeout, close), the HAProxy agent check, base64, the PCM bytes a stream
// carries (the same as a WAV file's), the Prometheus text, and the load generator's
// config checks and capacity rule.
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
#include <nlohmann/json.hpp>

#include "common/eventually.h"
#include "common/scratch-dir.h"
#include "core/error.h"
#include "core/wav.h"
#include "serve/admission.h"
#include "serve/agent-check.h"
#include "serve/base64.h"
#include "serve/load-gen.h"
#include "serve/serve-config.h"
#include "serve/serve-metrics.h"
#include "serve/speech-request.h"
#include "speak/knobs.h"

using namespace rtf;
using namespace rtf::serve;

namespace {

speak::SpeakConfig base_config() {
    speak::SpeakConfig c = speak::default_config();
    c.models_dir = "kit";
    c.text = "Hello.";
    speak::finalize(c);
    return c;
}

std::string field_of(const std::function<void()> &f) {
    try {
        f();
    } catch (const RequestError &e) {
        return e.field();
    }
    ADD_FAILURE() << "no RequestError";
    return {};
}

}  // namespace

TEST(SpeechRequest, OpenAiDefaultsAndInput) {
    const auto base = base_config();
    auto r = parse_openai_speech(R"({"model":"tts-1","input":"Good morning","voice":"alloy"})", base, 4096);
    EXPECT_EQ(r.cfg.text, "Good morning");
    EXPECT_TRUE(r.cfg.prompt.empty());
    EXPECT_EQ(r.format, AudioFormat::Wav);
    EXPECT_EQ(r.stream, StreamFormat::Audio);
    EXPECT_EQ(r.model, "tts-1");
    r = parse_openai_speech(R"({"input":"x","response_format":"pcm","stream_format":"sse","speed":1})", base, 4096);
    EXPECT_EQ(r.format, AudioFormat::Pcm);
    EXPECT_EQ(r.stream, StreamFormat::Sse);
}

TEST(SpeechRequest, VoicesAndSpeed) {
    const auto base = base_config();
    const std::vector<std::string> voices{"default", "twin-a", "twin-b"};
    auto r = parse_openai_speech(R"({"input":"x","voice":"twin-b","speed":2})", base, 100, voices);
    EXPECT_EQ(r.cfg.voice, "twin-b");
    EXPECT_EQ(r.cfg.speed, 2.0);
    r = parse_openai_speech(R"({"input":"x","voice":"alloy"})", base, 100, voices);  // OpenAI's names: the default
    EXPECT_EQ(r.cfg.voice, "");
    EXPECT_EQ(r.voice, "alloy");
    EXPECT_EQ(r.cfg.speed, 1.0);
    r = parse_openai_speech(R"({"input":"x","voice":"default"})", base, 100, voices);
    EXPECT_EQ(r.cfg.voice, "");
    try {
        parse_openai_speech(R"({"input":"x","voice":"twin-c"})", base, 100, voices);
        ADD_FAILURE() << "no RequestError";
    } catch (const RequestError &e) {
        EXPECT_EQ(e.field(), "voice");
        EXPECT_NE(std::string(e.what()).find("default, twin-a, twin-b"), std::string::npos) << e.what();
    }
    r = parse_speak_request(R"({"text":"x","knobs":{"voice":"twin-a","speed":0.5}})", base, 100, voices);
    EXPECT_EQ(r.cfg.voice, "twin-a");
    EXPECT_EQ(r.voice, "twin-a");
    EXPECT_EQ(r.cfg.speed, 0.5);
    EXPECT_EQ(field_of([&] { parse_speak_request(R"({"text":"x","knobs":{"voice":"nobody"}})", base, 100, voices); }),
              "knobs.voice");
    EXPECT_EQ(field_of([&] { parse_speak_request(R"({"text":"x","knobs":{"speed":9}})", base, 100, voices); }),
              "knobs.speed");
}

TEST(SpeechRequest, OpenAiRefusalsNameTheField) {
    const auto base = base_config();
    auto f = [&](const std::string &body, int max_chars = 4096) {
        return field_of([&] { parse_openai_speech(body, base, max_chars); });
    };
    EXPECT_EQ(f(""), "body");
    EXPECT_EQ(f("{not json"), "body");
    EXPECT_EQ(f("[1,2]"), "body");
    EXPECT_EQ(f("{\"input\":\"\xff\xfe\"}"), "body");  // invalid UTF-8
    EXPECT_EQ(f(R"({"model":"x"})"), "input");
    EXPECT_EQ(f(R"({"input":""})"), "input");
    EXPECT_EQ(f(R"({"input":42})"), "input");
    EXPECT_EQ(f(R"({"input":"abcdef"})", 5), "input");
    EXPECT_NO_THROW(parse_openai_speech(R"({"input":"\u00e9\u00e9\u00e9\u00e9\u00e9"})", base, 5));  // 5 characters, 10 bytes
    EXPECT_EQ(f(R"({"input":"x","voice":"bob"})"), "voice");
    EXPECT_EQ(f(R"({"input":"x","response_format":"aac"})"), "response_format");
    EXPECT_EQ(f(R"({"input":"x","response_format":"opus","stream_format":"sse"})"), "response_format");  // sse: pcm only
    EXPECT_EQ(f(R"({"input":"x","stream_format":"sse"})"), "response_format");  // sse needs pcm
    EXPECT_EQ(f(R"({"input":"x","stream_format":"ws"})"), "stream_format");
    EXPECT_EQ(f(R"({"input":"x","speed":0.2})"), "speed");
    EXPECT_EQ(f(R"({"input":"x","speed":4.5})"), "speed");
    EXPECT_EQ(f(R"({"input":"x","speed":"fast"})"), "speed");
    EXPECT_EQ(f(R"({"input":"x","temperature":1})"), "temperature");
}

TEST(SpeechRequest, SpeakKnobsPerUtteranceOnly) {
    const auto base = base_config();
    auto r = parse_speak_request(R"({"prompt":"Tell me","knobs":{"max-audio-s":2,"d1":4,"first-audio-priority":true}})", base, 100);
    EXPECT_EQ(r.cfg.prompt, "Tell me");
    EXPECT_EQ(r.cfg.max_audio_s, 2);
    EXPECT_EQ(r.cfg.pipeline.depths.at(0), 4);
    EXPECT_TRUE(r.cfg.first_audio_priority);
    EXPECT_EQ(r.stream, StreamFormat::Sse);
    EXPECT_EQ(r.format, AudioFormat::Pcm);
    auto f = [&](const std::string &body) { return field_of([&] { parse_speak_request(body, base, 100); }); };
    EXPECT_EQ(f(R"({"knobs":{}})"), "prompt");
    EXPECT_EQ(f(R"({"prompt":"a","text":"b"})"), "text");
    EXPECT_EQ(f(R"({"text":"a","knobs":{"seed":7}})"), "knobs.seed");          // the engines fix it
    EXPECT_EQ(f(R"({"text":"a","knobs":{"llm-threads":1}})"), "knobs.llm-threads");
    EXPECT_EQ(f(R"({"text":"a","knobs":{"models":"/etc"}})"), "knobs.models");
    EXPECT_EQ(f(R"({"text":"a","knobs":{"text-file":"/etc/passwd"}})"), "knobs.text-file");
    EXPECT_EQ(f(R"({"text":"a","knobs":{"no-such":1}})"), "knobs.no-such");
    EXPECT_EQ(f(R"({"text":"a","knobs":{"d1":"many"}})"), "knobs.d1");
    EXPECT_EQ(f(R"({"text":"a","knobs":[1]})"), "knobs");
    // the same value as the server's is no change
    EXPECT_NO_THROW(parse_speak_request(R"({"text":"a","knobs":{"seed":)" + speak::find_knob("seed")->get(base) + "}}", base, 100));
    const auto names = speak::run_knob_names();
    EXPECT_NE(std::find(names.begin(), names.end(), "max-audio-s"), names.end());
    EXPECT_NE(std::find(names.begin(), names.end(), "schedule"), names.end());
    EXPECT_EQ(std::find(names.begin(), names.end(), "seed"), names.end());
    EXPECT_EQ(std::find(names.begin(), names.end(), "t2w-threads-voc"), names.end());
}

TEST(Admission, AdmitsQueuesRefusesInOrder) {
    AdmissionGate g(1, 1);
    auto a = g.acquire(0);
    ASSERT_EQ(a.outcome, Admission::Admitted);
    EXPECT_EQ(g.active(), 1);
    // a second request waits (queue of 1); a third finds the queue full at once
    std::atomic<int> second{-1};
    std::thread t([&] {
        auto b = g.acquire(10000);
        second = static_cast<int>(b.outcome);
    });
    EXPECT_TRUE(rtf::test::eventually([&] { return g.queued() >= 1; })) << "the second request never queued (10 s)";
    EXPECT_EQ(g.acquire(10000).outcome, Admission::QueueFull);
    a.lease.reset();  // frees the slot: the waiter gets it
    t.join();
    EXPECT_EQ(second.load(), static_cast<int>(Admission::Admitted));
    EXPECT_EQ(g.active(), 0);  // the waiter's lease ended with its thread
}

TEST(Admission, TimeoutAndClose) {
    AdmissionGate g(1, 4);
    auto a = g.acquire(0);
    auto b = g.acquire(30);
    EXPECT_EQ(b.outcome, Admission::TimedOut);
    EXPECT_GE(b.waited_ms, 25);
    EXPECT_EQ(g.queued(), 0);
    std::atomic<int> waiting{-1};
    std::thread t([&] { waiting = static_cast<int>(g.acquire(60000).outcome); });
    EXPECT_TRUE(rtf::test::eventually([&] { return g.queued() >= 1; })) << "the waiter never queued (10 s)";
    g.close();
    t.join();
    EXPECT_EQ(waiting.load(), static_cast<int>(Admission::Closed));
    EXPECT_EQ(g.acquire(0).outcome, Admission::Closed);
}

TEST(Admission, FirstComeFirstServed) {
    AdmissionGate g(1, 8);
    auto held = std::make_unique<AdmissionGate::Ticket>(g.acquire(0));
    std::mutex mu;
    std::vector<int> order;
    std::vector<std::thread> ts;
    for (int i = 0; i < 4; ++i) {
        EXPECT_TRUE(rtf::test::eventually([&] { return g.queued() >= i; })) << "waiter " << i - 1 << " never queued (10 s)";
        ts.emplace_back([&, i] {
            auto t = g.acquire(60000);
            std::lock_guard<std::mutex> l(mu);
            order.push_back(i);
        });
    }
    EXPECT_TRUE(rtf::test::eventually([&] { return g.queued() >= 4; })) << "the 4 waiters never all queued (10 s)";
    held.reset();
    for (auto &t : ts) t.join();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Base64, RoundTripAndRejects) {
    EXPECT_EQ(base64_encode(""), "");
    EXPECT_EQ(base64_encode("f"), "Zg==");
    EXPECT_EQ(base64_encode("fo"), "Zm8=");
    EXPECT_EQ(base64_encode("foo"), "Zm9v");
    EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
    std::string bytes;
    for (int i = 0; i < 1000; ++i) bytes.push_back(static_cast<char>((i * 37) & 0xff));
    EXPECT_EQ(base64_decode(base64_encode(bytes)).value(), bytes);
    EXPECT_FALSE(base64_decode("Zg=").has_value());
    EXPECT_FALSE(base64_decode("Z===").has_value());
    EXPECT_FALSE(base64_decode("Zg=a").has_value());
    EXPECT_FALSE(base64_decode("Zm9*").has_value());
}

TEST(Pcm, StreamBytesEqualTheWavFile) {
    // the samples a stream carries are those a WAV file of the same run holds
    std::vector<float> s = {0.0f, 0.5f, -0.5f, 1.0f, -1.0f, 1.7f, -3.0f, 0.00002f, -0.00002f, 0.123456f, -0.999f};
    rtf::test::ScratchDir d("serve-pcm");
    write_wav(d.file("a.wav"), s, 24000);
    std::ifstream f(d.file("a.wav"), std::ios::binary);
    std::string file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const std::string pcm = to_s16le(s);
    ASSERT_EQ(pcm.size(), s.size() * 2);
    ASSERT_GE(file.size(), pcm.size());
    EXPECT_EQ(file.substr(file.size() - pcm.size()), pcm);
    const float nan = std::nanf("");
    EXPECT_EQ(to_s16le(&nan, 1), std::string(2, '\0'));
    const std::string h = wav_stream_header(24000, 1);
    ASSERT_EQ(h.size(), 44u);
    EXPECT_EQ(h.substr(0, 4), "RIFF");
    EXPECT_EQ(h.substr(8, 8), "WAVEfmt ");
    EXPECT_EQ(h.substr(36, 4), "data");
    uint32_t rate = 0;
    std::memcpy(&rate, h.data() + 24, 4);
    EXPECT_EQ(rate, 24000u);
}

TEST(ServeMetrics, PrometheusText) {
    ServeMetrics m;
    m.set_streams(1, 2, 4);
    m.request("speech", 200);
    m.request("speech", 400);
    m.rejected("queue_full");
    prof::Metrics run;
    run.n_chunks = 3;
    run.audio_ms = 2000;
    run.first_audio_ms = 700;
    run.rtf = 0.8;
    run.stages = {{"t2w", 1500, 0.75, {}}};
    m.stream_done(run, false, false);
    run.first_audio_ms = 3000;
    m.stream_done(run, true, false);  // cancelled: counted, not in the histograms
    const std::string t = m.render();
    EXPECT_NE(t.find("rtf_streams_active 1\n"), std::string::npos);
    EXPECT_NE(t.find("rtf_streams_queued 2\n"), std::string::npos);
    EXPECT_NE(t.find("rtf_requests_total{endpoint=\"speech\",code=\"400\"} 1\n"), std::string::npos);
    EXPECT_NE(t.find("rtf_rejected_total{reason=\"queue_full\"} 1\n"), std::string::npos);
    EXPECT_NE(t.find("rtf_rejected_total{reason=\"queue_timeout\"} 0\n"), std::string::npos);
    EXPECT_NE(t.find("rtf_cancelled_total 1\n"), std::string::npos);
    EXPECT_NE(t.find("rtf_stage_busy_seconds_total{stage=\"t2w\"} 3\n"), std::string::npos);
    EXPECT_NE(t.find("rtf_first_audio_seconds_bucket{le=\"0.5\"} 0\n"), std::string::npos);
    EXPECT_NE(t.find("rtf_first_audio_seconds_bucket{le=\"1\"} 1\n"), std::string::npos);
    EXPECT_NE(t.find("rtf_first_audio_seconds_bucket{le=\"+Inf\"} 1\n"), std::string::npos);
    EXPECT_NE(t.find("rtf_first_audio_seconds_count 1\n"), std::string::npos);
    EXPECT_NE(t.find("# TYPE rtf_stream_rtf histogram\n"), std::string::npos);
    // every sample line is "name{labels} value" or "name value"
    std::istringstream in(t);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        EXPECT_EQ(std::count(line.begin(), line.end(), ' '), 1) << line;
    }
}

TEST(ServeConfig, ValidateNamesTheFlag) {
    ServeConfig c;
    EXPECT_NO_THROW(c.validate());
    c.max_streams = 0;
    try {
        c.validate();
        FAIL();
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("--max-streams"), std::string::npos);
    }
    c = ServeConfig{};
    c.port = 70000;
    EXPECT_THROW(c.validate(), Error);
    c = ServeConfig{};
    for (int kb : {1, 3, 65537, -4}) {
        c.send_buffer_kb = kb;
        try {
            c.validate();
            FAIL() << kb;
        } catch (const Error &e) {
            EXPECT_NE(std::string(e.what()).find("--send-buffer-kb"), std::string::npos);
        }
    }
    c.send_buffer_kb = 16;
    EXPECT_NO_THROW(c.validate());
    EXPECT_EQ(ServeConfig{}.worker_threads(), 1 + 4 + 4);
    c = ServeConfig{};
    c.slot_threads = -2;
    EXPECT_THROW(c.validate(), Error);
    for (int p : {-1, 70000, 8080}) {  // 8080: the HTTP port itself
        c = ServeConfig{};
        c.agent_port = p;
        try {
            c.validate();
            FAIL() << p;
        } catch (const Error &e) {
            EXPECT_NE(std::string(e.what()).find("--agent-port"), std::string::npos) << e.what();
        }
    }
}

// HAProxy's agent protocol: the free-slot share as a weight (0 % when full), drain when stopping.
TEST(AgentCheck, ReplyIsTheFreeSlotShare) {
    EXPECT_EQ(agent_reply(0, 2, false), "ready up 100%\n");
    EXPECT_EQ(agent_reply(1, 2, false), "ready up 50%\n");
    EXPECT_EQ(agent_reply(2, 2, false), "ready up 0%\n");  // full: no new streams from the balancer
    EXPECT_EQ(agent_reply(1, 3, false), "ready up 67%\n");
    EXPECT_EQ(agent_reply(0, 1, true), "drain\n");
}

// A TCP connection to 127.0.0.1:port; -1 when nothing listens there.
static int connect_local(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0) return fd;
    ::close(fd);
    return -1;
}

// The listener answers each connection with one line from the callback, and stops with the object.
TEST(AgentCheck, AnswersEachConnectionOnce) {
    std::atomic<int> active{0}, calls{0};
    int port = 0;
    {
        AgentCheck agent("127.0.0.1", 0, [&] {
            ++calls;
            return agent_reply(active.load(), 2, false);
        });
        port = agent.port();
        ASSERT_GT(port, 0);
        auto ask = [&] {
            const int fd = connect_local(port);
            EXPECT_GE(fd, 0);
            std::string got;
            char buf[64];
            for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
            ::close(fd);
            return got;
        };
        EXPECT_EQ(ask(), "ready up 100%\n");
        active = 2;
        EXPECT_EQ(ask(), "ready up 0%\n");
        EXPECT_EQ(calls.load(), 2);
        EXPECT_THROW(AgentCheck("127.0.0.1", port, [] { return std::string(); }), Error);  // the port is taken
    }
    EXPECT_EQ(connect_local(port), -1);  // gone: nothing listens there any more
}

TEST(ServeConfig, SlotThreadsShareTheCores) {
    ServeConfig c;  // auto
    c.max_streams = 4;
    EXPECT_EQ(c.resolved_slot_threads(2), 1);   // more streams than cores: one each
    EXPECT_EQ(c.resolved_slot_threads(16), 4);
    c.max_streams = 1;
    EXPECT_EQ(c.resolved_slot_threads(2), 2);   // one stream keeps every core
    c.slot_threads = 0;
    EXPECT_EQ(c.resolved_slot_threads(2), 0);   // knobs: as given
    c.slot_threads = 3;
    EXPECT_EQ(c.resolved_slot_threads(2), 3);
    EXPECT_GE(usable_cpus(), 1);

    speak::SpeakConfig s = base_config();
    const int voc = s.t2w.threads_voc;
    const auto set = apply_slot_threads(s, 1, {"t2w-threads-voc"});  // the user's own voc threads stay
    EXPECT_EQ(set.size(), slot_thread_knobs().size() - 1);
    EXPECT_EQ(s.t2w.threads_voc, voc);
    EXPECT_EQ(s.t2w.threads_t2m, 1);
    EXPECT_EQ(s.llm.placement.n_threads, 1);
    EXPECT_EQ(s.tts.placement.n_threads_batch, 1);
    EXPECT_TRUE(apply_slot_threads(s, 0, {}).empty());  // knobs: nothing set

    // A thread count the machine profile chose stays when it is within the share (the avx2
    // row's one TTS thread in a one-stream server on 2 CPUs), and is capped when it is not.
    speak::SpeakConfig p = base_config();
    speak::apply_knobs(p, {{"tts-threads", "1"}, {"llm-threads", "4"}, {"llm-threads-batch", "0"}});
    const auto pset = apply_slot_threads(p, 2, {}, {"tts-threads", "llm-threads", "llm-threads-batch"});
    EXPECT_EQ(p.tts.placement.n_threads, 1);
    EXPECT_EQ(std::count(pset.begin(), pset.end(), "tts-threads"), 0);
    EXPECT_EQ(p.llm.placement.n_threads, 2);       // 4 > the share: capped
    EXPECT_EQ(p.llm.placement.n_threads_batch, 2); // 0 = all CPUs: capped
    EXPECT_EQ(p.tts.placement.n_threads_batch, 2); // not the profile's: the share
    speak::SpeakConfig q = base_config();
    speak::apply_knobs(q, {{"tts-threads", "1"}});
    apply_slot_threads(q, 2, {});                  // not named as the profile's: the share
    EXPECT_EQ(q.tts.placement.n_threads, 2);
    for (const auto &k : slot_thread_knobs()) EXPECT_NE(speak::find_knob(k), nullptr) << k;
}

TEST(LoadGen, ConfigAndCapacityRule) {
    LoadConfig c;
    EXPECT_NO_THROW(c.validate());
    auto msg = [&](auto mutate) {
        LoadConfig x;
        mutate(x);
        try {
            x.validate();
        } catch (const Error &e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(msg([](LoadConfig &x) { x.url = "https://a:1"; }).find("--url"), std::string::npos);
    EXPECT_NE(msg([](LoadConfig &x) { x.url = "http://a:99999"; }).find("--url"), std::string::npos);
    EXPECT_NE(msg([](LoadConfig &x) { x.path = "/v1/x"; }).find("--path"), std::string::npos);
    EXPECT_NE(msg([](LoadConfig &x) { x.streams = 0; }).find("--rate"), std::string::npos);
    EXPECT_NE(msg([](LoadConfig &x) { x.rate = 2; }).find("exclude"), std::string::npos);
    EXPECT_NE(msg([](LoadConfig &x) { x.prompt = "Why?"; }).find("--prompt"), std::string::npos);  // needs /v1/speak
    EXPECT_NO_THROW([] { LoadConfig x; x.prompt = "Why?"; x.path = "/v1/speak"; x.validate(); }());
    LoadResult r;
    r.wall_s = 10;
    StreamOutcome ok;
    ok.status = 200;
    ok.complete = true;
    ok.first_audio_ms = 400;
    ok.audio_s = 2;
    ok.rtf = 0.5;
    r.streams = {ok, ok};
    StreamOutcome starved = ok;
    starved.starvation.count = 1;
    starved.first_audio_ms = 900;
    r.streams.push_back(starved);
    StreamOutcome refused;
    refused.status = 429;
    summarize(r);
    EXPECT_EQ(r.n_complete, 3);
    EXPECT_EQ(r.n_real_time, 2);
    EXPECT_NEAR(r.real_time_share, 2.0 / 3, 1e-12);
    EXPECT_NEAR(r.audio_s_per_wall_s, 0.6, 1e-12);
    EXPECT_FALSE(meets(r, 1000, 0.99));  // one stream starved
    EXPECT_TRUE(meets(r, 1000, 0.5));
    EXPECT_FALSE(meets(r, 800, 0.5));    // p95 first audio 850
    r.streams.push_back(refused);
    summarize(r);
    EXPECT_EQ(r.n_refused, 1);
    EXPECT_FALSE(meets(r, 1000, 0.5));   // refusals miss capacity
    const auto j = r.to_json();
    EXPECT_EQ(j["schema"], "rtfkit.load/1");
    EXPECT_EQ(j["streams"].size(), 4u);
}

// The server links every layer's libraries (ggml, oneDNN, libllama, libsndfile, Sonic, ...):
// none may set flush-to-zero / denormals-are-zero for the process (core/time-stretch.h).
TEST(FloatEnvironment, NothingTheServerLinksSetsFlushToZero) {
#if defined(__x86_64__) || defined(__i386__)
    EXPECT_EQ(_mm_getcsr() & 0x8040u, 0u) << "MXCSR " << std::hex << _mm_getcsr();
#else
    GTEST_SKIP() << "x86 only";
#endif
}
