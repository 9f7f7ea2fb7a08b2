#include "serve/load-duplex.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/format.h"
#include "core/wav.h"
#include "models/apm/audio-input.h"
#include "serve/base64.h"
#include "serve/websocket.h"

namespace rtf::serve {

using json = nlohmann::json;

namespace {
using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

int realtime_port_of(const Target &t) {
    httplib::Client cli(t.host, t.port);
    cli.set_connection_timeout(5);
    cli.set_read_timeout(10);
    auto res = cli.Get("/health");
    if (!res) throw_setup("rtf load --duplex: no answer from " + t.host + ":" + std::to_string(t.port) + "/health (is rtf serve running?)");
    json j = json::parse(res->body, nullptr, false);
    if (j.is_discarded() || !j.contains("realtime")) throw_setup("rtf load --duplex: " + t.host + ":" + std::to_string(t.port) + " is not rtf serve (/health has no realtime)");
    if (j["realtime"].is_null())
        throw_setup("rtf load --duplex: the server has no realtime sessions (its kit has no audio encoder, or --realtime-sessions 0)");
    return j["realtime"]["port"].get<int>();
}

DuplexSessionOutcome one_session(const DuplexLoadConfig &c, const std::string &host, int port, const std::vector<float> &pcm,
                                 int client, Clock::time_point run_t0) {
    DuplexSessionOutcome o;
    o.client = client;
    const auto t_start = Clock::now();
    o.t_start_ms = ms_between(run_t0, t_start);
    ws::Client ws;
    std::string body;
    o.status = ws.connect(host, port, "/v1/realtime", 10000, &body);
    if (o.status != 101) {
        o.error = o.status == 0 ? "no answer to the WebSocket handshake" : "handshake refused: HTTP " + std::to_string(o.status) + " " + body;
        return o;
    }
    int frame_ms = 1000;
    std::vector<double> frame_sent_ms;  // when each frame's last sample left
    std::map<std::string, int> reply_first_frame;
    std::map<std::string, bool> reply_has_audio;
    auto handle = [&](const ws::Message &m) {
        ++o.n_events;
        json e = json::parse(m.data, nullptr, false);
        if (e.is_discarded()) return;
        const std::string type = e.value("type", "");
        const double now = ms_between(t_start, Clock::now());
        if (type == "session.created") {
            frame_ms = e["session"].value("frame_ms", 1000);
        } else if (type == "rtf.frame") {
            ++o.n_frame_events;
            if (e["response_id"].is_string() && e["decision"] == "speak") {
                const std::string r = e["response_id"];
                if (!reply_first_frame.count(r)) reply_first_frame[r] = e["frame"].get<int>();
            }
        } else if (type == "response.audio.delta") {
            ++o.n_audio_deltas;
            o.audio_s += e.value("samples", 0) / 24000.0;
            const std::string r = e.value("response_id", "");
            if (!reply_has_audio[r]) {
                reply_has_audio[r] = true;
                auto it = reply_first_frame.find(r);
                if (it != reply_first_frame.end() && static_cast<size_t>(it->second) < frame_sent_ms.size())
                    o.first_audio_ms.push_back(now - frame_sent_ms[static_cast<size_t>(it->second)]);
            }
        } else if (type == "error") {
            ++o.n_errors;
            if (!o.error.empty()) o.error += "; ";
            o.error += e["error"].value("message", "error");
        } else if (type == "session.ended") {
            o.ended = true;
            o.timeline = e.value("timeline", json(nullptr));
            o.wall_s = now / 1000.0;
        }
    };
    // session.created first: it says the frame length.
    if (auto m = ws.receive(10000)) handle(*m);
    if (!c.speak_frames.empty()) ws.send(json{{"type", "session.update"}, {"session", {{"speak_frames", c.speak_frames}}}}.dump(), false);
    const size_t frame_samples = static_cast<size_t>(frame_ms) * 16;
    const size_t n_frames = c.frames > 0 ? static_cast<size_t>(c.frames) : (pcm.size() + frame_samples - 1) / frame_samples;
    std::vector<float> audio(n_frames * frame_samples, 0.0f);
    std::copy(pcm.begin(), pcm.begin() + static_cast<std::ptrdiff_t>(std::min(pcm.size(), audio.size())), audio.begin());
    const size_t piece = std::max<size_t>(1, static_cast<size_t>(c.chunk_ms * 16));
    const auto t0 = Clock::now();
    size_t sent = 0;
    int k = 0;
    while (sent < audio.size() && !ws.closed()) {
        const double due = (k + 1) * c.chunk_ms;  // piece k exists once it has been "recorded"
        const double wait = due - ms_between(t0, Clock::now());
        if (wait > 0) {
            if (auto m = ws.receive(std::min(wait, 50.0))) handle(*m);
            continue;
        }
        const size_t n = std::min(piece, audio.size() - sent);
        ws.send(to_s16le(audio.data() + sent, n), true);
        sent += n;
        ++k;
        while (frame_sent_ms.size() < sent / frame_samples) frame_sent_ms.push_back(ms_between(t_start, Clock::now()));
    }
    o.n_frames_sent = static_cast<int>(sent / frame_samples);
    ws.send(R"({"type":"session.finish"})", false);
    const auto t_end = Clock::now() + std::chrono::duration<double>(c.timeout_s);
    while (!o.ended && Clock::now() < t_end) {
        auto m = ws.receive(200);
        if (m) handle(*m);
        else if (ws.closed()) break;
    }
    if (!o.ended && o.error.empty()) o.error = ws.closed() ? "closed before session.ended" : "no session.ended within --timeout";
    return o;
}
}  // namespace

void DuplexLoadConfig::validate() const {
    if (input.empty()) throw_usage("--input: give the recording each duplex session streams (WAV, any rate)");
    if (sessions < 1 || sessions > 256) throw_usage("--sessions: must be in [1, 256]");
    if (frames < 0 || frames > 100000) throw_usage("--frames: must be in [0, 100000] (0 = the recording's)");
    if (!(chunk_ms >= 10 && chunk_ms <= 10000)) throw_usage("--chunk-ms: must be in [10, 10000]");
    if (!(stagger_ms >= 0 && stagger_ms <= 600000)) throw_usage("--stagger-ms: must be in [0, 600000]");
    if (!(timeout_s > 0 && timeout_s <= 86400)) throw_usage("--timeout: must be in (0, 86400] s");
    if (realtime_port < 0 || realtime_port > 65535) throw_usage("--realtime-port: must be in [0, 65535]");
}

json DuplexLoadConfig::to_json() const {
    return {{"url", url}, {"realtime_port", realtime_port}, {"input", input}, {"frames", frames}, {"speak_frames", speak_frames},
            {"sessions", sessions}, {"chunk_ms", chunk_ms}, {"stagger_ms", stagger_ms}, {"timeout_s", timeout_s}};
}

json DuplexSessionOutcome::to_json() const {
    return {{"client", client}, {"status", status}, {"error", error.empty() ? json(nullptr) : json(error)}, {"ended", ended},
            {"t_start_ms", t_start_ms}, {"wall_s", wall_s}, {"frames_sent", n_frames_sent}, {"events", n_events},
            {"frame_events", n_frame_events}, {"audio_deltas", n_audio_deltas}, {"error_events", n_errors}, {"audio_s", audio_s},
            {"client_first_audio_ms", first_audio_ms}, {"timeline", timeline}};
}

json DuplexLoadResult::to_json() const {
    json s = json::array();
    for (const auto &x : sessions) s.push_back(x.to_json());
    return {{"schema", "rtfkit.load-duplex/1"}, {"config", config.to_json()}, {"wall_s", wall_s}, {"opened", n_opened},
            {"refused", n_refused}, {"ended", n_ended}, {"sessions", s}};
}

DuplexLoadResult run_duplex_load(const DuplexLoadConfig &c, const LoadProgress &progress) {
    c.validate();
    const Target t = parse_url(c.url);
    const apm::AudioInput audio = apm::load_audio_16k(c.input);  // names the file when unreadable
    const int port = c.realtime_port > 0 ? c.realtime_port : realtime_port_of(t);
    DuplexLoadResult r;
    r.config = c;
    r.sessions.resize(static_cast<size_t>(c.sessions));
    std::vector<std::thread> th;
    std::mutex mu;
    const auto run_t0 = Clock::now();
    for (int i = 0; i < c.sessions; ++i)
        th.emplace_back([&, i] {
            if (c.stagger_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(i * c.stagger_ms));
            DuplexSessionOutcome o = one_session(c, t.host, port, audio.samples, i, run_t0);
            std::lock_guard<std::mutex> l(mu);
            if (progress)
                progress("session " + std::to_string(i) + ": " +
                         (o.status != 101 ? "refused (" + std::to_string(o.status) + ")"
                                          : std::to_string(o.n_frames_sent) + " frames, " + std::to_string(o.n_audio_deltas) +
                                                " audio deltas (" + fmt(o.audio_s, 1) + " s), " + (o.ended ? "ended" : "NOT ended: " + o.error)));
            r.sessions[static_cast<size_t>(i)] = std::move(o);
        });
    for (auto &x : th) x.join();
    r.wall_s = ms_between(run_t0, Clock::now()) / 1000.0;
    for (const auto &o : r.sessions) {
        if (o.status == 101) ++r.n_opened;
        if (o.status == 429 || o.status == 503) ++r.n_refused;
        if (o.ended) ++r.n_ended;
    }
    return r;
}

}  // namespace rtf::serve
