#include "serve/realtime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/audio-stream.h"
#include "core/elapsed.h"
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
constexpr const char *kPath = "/v1/realtime";

json error_event(const std::string &type, const std::string &code, const std::string &message) {
    return {{"type", "error"}, {"error", {{"type", type}, {"code", code}, {"message", message}}}};
}

std::string dump(const json &j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// s16le mono -> floats; false for an odd byte count.
bool pcm16_floats(const std::string &bytes, std::vector<float> &out) {
    if (bytes.size() % 2 != 0) return false;
    out.resize(bytes.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) {
        int16_t s;
        std::memcpy(&s, bytes.data() + 2 * i, 2);
        out[i] = static_cast<float>(s) / 32768.0f;
    }
    return true;
}
}  // namespace

// ---- one session -----------------------------------------------------------------------------

struct Realtime::Session final : speak::DuplexObserver {
    Realtime &rt;
    uint64_t conn;
    std::unique_ptr<AdmissionGate::Lease> lease;
    std::string id;
    speak::DuplexConfig cfg;
    std::unique_ptr<speak::LiveFrames> live;
    speak::DuplexReplyControl replies;
    pipe::CancelToken cancel;
    std::thread th;
    AudioFormat format = AudioFormat::Pcm;
    std::atomic<bool> started{false}, finishing{false}, done{false}, gone{false};
    std::atomic<int64_t> last_msg_ms{0};  // since the session opened
    Clock::time_point t_open = Clock::now();

    struct Reply {
        bool created = false, done = false;
        int64_t samples = 0;
        std::unique_ptr<AudioStreamEncoder> enc;
    };
    std::mutex mu;  // sends of the pipeline's events, and the replies' state
    std::map<int, Reply> reply;

    Session(Realtime &r, uint64_t c) : rt(r), conn(c) {}
    std::string reply_id(int r) const { return id + "_r" + std::to_string(r); }
    int64_t now_ms() const { return static_cast<int64_t>(ms_since(t_open)); }
    void send(const json &j) { rt.ws_->send(conn, dump(j), false); }

    // Under mu.
    Reply &ensure_created(int r) {
        Reply &st = reply[r];
        if (!st.created) {
            st.created = true;
            send({{"type", "response.created"}, {"response", {{"id", reply_id(r)}, {"status", "in_progress"}}}});
        }
        return st;
    }
    void send_done(int r, Reply &st, const char *status) {
        st.done = true;
        const double audio_s = static_cast<double>(st.samples) / t2w::T2wModel::sample_rate();
        send({{"type", "response.done"},
              {"response", {{"id", reply_id(r)}, {"status", status}, {"audio_s", audio_s}}}});
    }

    void on_frame(int frame, const speak::DuplexFrameRecord &f, int r) override {
        std::lock_guard<std::mutex> l(mu);
        const auto &x = f.llm;
        json ev = {{"type", "rtf.frame"},
                   {"frame", frame},
                   {"decision", x.is_speak ? "speak" : "listen"},
                   {"forced", x.forced},
                   {"force_listen", x.force_listen},
                   {"response_id", r >= 0 ? json(reply_id(r)) : json(nullptr)},
                   {"text", x.text},
                   {"end_of_turn", x.end_of_turn},
                   {"timings",
                    {{"t_push_ms", f.t_push_ms},
                     {"t_encoded_ms", f.t_encoded_ms},
                     {"t_done_ms", f.t_done_ms},
                     {"latency_ms", f.t_done_ms - f.t_push_ms},
                     {"apm_ms", f.apm_ms},
                     {"llm_prefill_ms", x.prefill_ms},
                     {"llm_decode_ms", x.decode_ms}}}};
        send(ev);
        if (r < 0 || replies.cancelled(r)) return;
        Reply &st = ensure_created(r);
        if (!x.text.empty() && !st.done)
            send({{"type", "response.audio_transcript.delta"}, {"response_id", reply_id(r)}, {"delta", x.text}});
    }

    void on_audio(const speak::DuplexChunkRecord &c, int r, std::span<const float> pcm) override {
        std::lock_guard<std::mutex> l(mu);
        if (r < 0) return;  // audio of no reply cannot happen (the LLM numbers every message's frame)
        if (replies.cancelled(r)) return;  // barge-in: its response.done went out with the cancel
        Reply &st = ensure_created(r);
        if (st.done) return;
        std::string bytes;
        if (format == AudioFormat::Pcm) {
            bytes = to_s16le(pcm.data(), pcm.size());
        } else {
            if (!st.enc) {
                st.enc = std::make_unique<AudioStreamEncoder>(format, t2w::T2wModel::sample_rate());
                bytes = st.enc->begin();
            }
            bytes += st.enc->encode(pcm.data(), pcm.size());
            if (c.is_final) bytes += st.enc->finish();
        }
        st.samples += static_cast<int64_t>(pcm.size());
        if (!bytes.empty())
            send({{"type", "response.audio.delta"}, {"response_id", reply_id(r)}, {"delta", base64_encode(bytes)},
                  {"t_ms", c.t_complete_ms}, {"samples", pcm.size()}});
        if (c.is_final) {
            send({{"type", "response.audio.done"}, {"response_id", reply_id(r)}});
            send_done(r, st, "completed");
        }
    }

    // The network thread: barge-in.
    void cancel_reply() {
        std::lock_guard<std::mutex> l(mu);
        const int r = replies.current();
        auto it = reply.find(r);
        if (r < 0 || replies.cancelled(r) || (it != reply.end() && it->second.done)) {
            send(error_event("invalid_request_error", "response_cancel_not_active", "no reply is being spoken"));
            return;
        }
        replies.cancel_current();
        Reply &st = ensure_created(r);
        send_done(r, st, "cancelled");
    }

    // The session's own thread: the duplex run over the live input, then the summary and close.
    void run(speak::DuplexEngines &engines) {
        json ended;
        try {
            speak::DuplexResult res = speak::run_duplex(engines, cfg, *live);
            json timeline = speak::to_json(res);
            int n_replies = 0;
            int64_t samples = 0;
            {
                std::lock_guard<std::mutex> l(mu);
                n_replies = static_cast<int>(reply.size());
                for (auto &[k, v] : reply) samples += v.samples;
            }
            ended = {{"type", "session.ended"},
                     {"session",
                      {{"id", id},
                       {"frames", res.frames.size()},
                       {"replies", n_replies},
                       {"audio_s_sent", static_cast<double>(samples) / t2w::T2wModel::sample_rate()},
                       {"session_ms", res.session_ms},
                       {"completed", res.completed && !gone},
                       {"error", res.error.empty() ? json(nullptr) : json(res.error)},
                       {"failed_stage", res.failed_stage.empty() ? json(nullptr) : json(res.failed_stage)}}},
                     {"timeline", std::move(timeline)}};
        } catch (const std::exception &e) {
            ended = error_event("server_error", "session_failed", e.what());
        }
        if (!gone) {
            send(ended);
            rt.ws_->close(conn, 1000, "session ended");
        }
        done = true;
        rt.janitor_cv_.notify_all();
    }
};

// ---- the service -----------------------------------------------------------------------------

Realtime::Realtime(RealtimeConfig cfg, const std::function<void(const std::string &)> &progress)
    : cfg_(std::move(cfg)), gate_(std::max(1, cfg_.sessions), 0) {
    cfg_.validate();
    if (cfg_.sessions < 1) throw_usage("realtime: no sessions to load (--realtime-sessions 0 turns the endpoint off)");
    speak::DuplexConfig base = cfg_.duplex;
    if (base.input.empty()) base.input = "(live)";  // the input is each session's client
    base.validate();
    base.finalize();
    for (int i = 0; i < cfg_.sessions; ++i) {
        const auto t0 = Clock::now();
        slots_.push_back(speak::load_duplex_engines(base));
        if (progress)
            progress("realtime session " + std::to_string(i + 1) + "/" + std::to_string(cfg_.sessions) + " loaded in " +
                     fmt(ms_since(t0) / 1000.0, 1) + " s");
    }
    ws::Server::Handlers h;
    h.on_handshake = [this](ws::ConnId id, const std::string &resource) {
        ws::HandshakeReply r;
        const std::string path = resource.substr(0, resource.find('?'));
        if (path != kPath) {
            r.status = 404;
            r.body = dump({{"error", {{"type", "not_found"}, {"message", "no WebSocket route " + path + " (" + kPath + ")"}}}});
            return r;
        }
        AdmissionGate::Ticket t = gate_.acquire(0);
        if (t.outcome == Admission::Admitted) {
            std::lock_guard<std::mutex> l(mu_);
            pending_[id] = std::move(t.lease);
            return r;  // 101
        }
        const bool closed = t.outcome == Admission::Closed;
        r.status = closed ? 503 : 429;
        r.body = dump({{"error",
                        {{"type", closed ? "unavailable" : "rate_limit_exceeded"},
                         {"message", closed ? "the server is stopping"
                                            : "every realtime session (" + std::to_string(cfg_.sessions) +
                                                  ") is in use; try again later (--realtime-sessions)"}}}});
        if (!closed) r.headers.emplace_back("Retry-After", "5");
        return r;
    };
    h.on_open = [this](ws::ConnId id) { on_open(id); };
    h.on_message = [this](ws::ConnId id, ws::Message &&m) { on_message(id, m.binary, std::move(m.data)); };
    h.on_close = [this](ws::ConnId id) { on_close(id); };
    ws_ = std::make_unique<ws::Server>(std::move(h), cfg_.max_message_bytes);
}

Realtime::~Realtime() { stop(); }

int Realtime::bind(const std::string &host, int port) {
    try {
        port_ = ws_->bind(host, port);
    } catch (const std::exception &e) {
        throw_setup(std::string("rtf serve: realtime: ") + e.what() + " (--realtime-port 0 picks a free one)");
    }
    return port_;
}

void Realtime::start() {
    net_ = std::thread([this] { ws_->run(); });
    janitor_ = std::thread([this] { janitor(); });
}

void Realtime::stop() {
    {
        std::lock_guard<std::mutex> l(mu_);
        if (stopping_) return;
        stopping_ = true;
        for (auto &[c, s] : sessions_) {
            s->gone = true;
            s->cancel.cancel();
            if (s->live) s->live->end();
        }
    }
    gate_.close();
    janitor_cv_.notify_all();
    ws_->stop();
    if (net_.joinable()) net_.join();
    if (janitor_.joinable()) janitor_.join();
    std::map<uint64_t, std::shared_ptr<Session>> left;
    {
        std::lock_guard<std::mutex> l(mu_);
        left.swap(sessions_);
        pending_.clear();
    }
    for (auto &[c, s] : left)
        if (s->th.joinable()) s->th.join();
}

json Realtime::status() const {
    return {{"port", port_}, {"path", kPath}, {"sessions_active", gate_.active()}, {"max_sessions", cfg_.sessions}};
}

void Realtime::on_open(uint64_t conn) {
    auto s = std::make_shared<Session>(*this, conn);
    {
        std::lock_guard<std::mutex> l(mu_);
        auto it = pending_.find(conn);
        if (it == pending_.end()) return;  // cannot happen: every accepted handshake holds a lease
        s->lease = std::move(it->second);
        pending_.erase(it);
        s->id = "rt_" + std::to_string(next_session_++);
        sessions_[conn] = s;
    }
    const int slot = s->lease->slot();
    s->cfg = slots_[static_cast<size_t>(slot)]->config;
    s->cfg.cancel = &s->cancel;
    s->cfg.observer = s.get();
    s->cfg.replies = &s->replies;
    const size_t frame_samples = static_cast<size_t>(s->cfg.frame_ms) * apm::kSampleRate / 1000;
    const size_t cap = static_cast<size_t>(std::ceil(cfg_.max_session_s * 1000.0 / s->cfg.frame_ms));
    s->live = std::make_unique<speak::LiveFrames>(frame_samples, cap);
    const auto &e = *slots_[static_cast<size_t>(slot)];
    s->send({{"type", "session.created"},
             {"session",
              {{"id", s->id},
               {"slot", slot},
               {"frame_ms", s->cfg.frame_ms},
               {"input_audio_format", {{"type", "pcm16"}, {"rate", apm::kSampleRate}, {"channels", 1}}},
               {"output_audio_format", {{"type", "pcm16"}, {"rate", t2w::T2wModel::sample_rate()}, {"channels", 1}}},
               {"output_audio_formats", audio_format_names()},
               {"speak_frames", s->cfg.speak_frames},
               {"max_session_s", cfg_.max_session_s},
               {"idle_timeout_s", cfg_.idle_timeout_s},
               {"kit", e.kit.dir},
               {"twin", e.kit.is_twin}}}});
}

void Realtime::on_message(uint64_t conn, bool binary, std::string &&data) {
    std::shared_ptr<Session> s;
    {
        std::lock_guard<std::mutex> l(mu_);
        auto it = sessions_.find(conn);
        if (it == sessions_.end()) return;
        s = it->second;
    }
    s->last_msg_ms = s->now_ms();
    auto fail = [&](const std::string &code, const std::string &msg) {
        std::lock_guard<std::mutex> l(s->mu);
        s->send(error_event("invalid_request_error", code, msg));
    };
    auto append = [&](const std::string &bytes) {
        if (s->finishing) return fail("session_finishing", "audio after session.finish is ignored");
        std::vector<float> pcm;
        if (!pcm16_floats(bytes, pcm)) return fail("invalid_audio", "audio must be s16le mono: an odd number of bytes");
        if (!s->live->append(pcm))
            fail("session_full", "the session's input limit (" + fmt(cfg_.max_session_s, 0) + " s, --realtime-max-s) is reached");
        if (!s->started.exchange(true)) {
            Session *raw = s.get();
            speak::DuplexEngines &eng = *slots_[static_cast<size_t>(s->lease->slot())];
            s->th = std::thread([raw, &eng] { raw->run(eng); });
        }
    };
    if (binary) return append(data);
    json j = json::parse(data, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("type") || !j["type"].is_string())
        return fail("invalid_json", "a message must be a JSON object with a string \"type\"");
    const std::string type = j["type"];
    if (type == "input_audio_buffer.append") {
        if (!j.contains("audio") || !j["audio"].is_string()) return fail("missing_audio", "input_audio_buffer.append needs \"audio\": base64 s16le");
        auto bytes = base64_decode(j["audio"].get<std::string>());
        if (!bytes) return fail("invalid_base64", "\"audio\" is not valid base64");
        return append(*bytes);
    }
    if (type == "session.update") {
        if (s->started) return fail("session_started", "session.update must come before the first audio (the run has started)");
        const json sess = j.value("session", json::object());
        if (!sess.is_object()) return fail("invalid_session", "\"session\" must be an object");
        try {
            if (sess.contains("speak_frames")) {
                if (!sess["speak_frames"].is_string()) return fail("invalid_speak_frames", "speak_frames must be a string like \"4-9,13-18\"");
                const std::string sf = sess["speak_frames"];
                if (!sf.empty()) {
                    auto r = speak::parse_frame_ranges(sf, "speak_frames");
                    if (r.front().first < s->cfg.llm.force_listen_count)
                        return fail("invalid_speak_frames", "speak_frames: the first " + std::to_string(s->cfg.llm.force_listen_count) +
                                                                " frames always listen (force_listen)");
                }
                s->cfg.speak_frames = sf;
            }
            if (sess.contains("output_audio_format")) {
                const json &f = sess["output_audio_format"];
                const std::string name = f.is_string() ? f.get<std::string>() : f.is_object() ? f.value("type", "") : "";
                s->format = name == "pcm16" ? AudioFormat::Pcm : parse_audio_format(name, "output_audio_format");
                if (s->format == AudioFormat::Wav) return fail("invalid_format", "output_audio_format wav: use pcm16 (a WAV header per reply is not offered)");
            }
        } catch (const Error &e) {
            return fail("invalid_value", e.what());
        }
        std::lock_guard<std::mutex> l(s->mu);
        s->send({{"type", "session.updated"},
                 {"session", {{"id", s->id}, {"speak_frames", s->cfg.speak_frames}, {"output_audio_format", s->format == AudioFormat::Pcm ? "pcm16" : to_string(s->format)}}}});
        return;
    }
    if (type == "response.cancel") return s->cancel_reply();
    if (type == "session.finish") {
        s->finishing = true;
        s->live->end();
        if (!s->started.exchange(true)) {  // no audio at all: an empty session
            std::lock_guard<std::mutex> l(s->mu);
            s->send({{"type", "session.ended"}, {"session", {{"id", s->id}, {"frames", 0}, {"replies", 0}, {"audio_s_sent", 0.0}, {"completed", true}}}});
            ws_->close(conn, 1000, "session ended");
            s->done = true;
        }
        return;
    }
    fail("unknown_event", "unknown event type '" + type +
                              "' (input_audio_buffer.append, session.update, response.cancel, session.finish)");
}

void Realtime::on_close(uint64_t conn) {
    std::lock_guard<std::mutex> l(mu_);
    pending_.erase(conn);  // accepted but never opened: its lease goes
    auto it = sessions_.find(conn);
    if (it == sessions_.end()) return;
    Session &s = *it->second;
    s.gone = true;
    s.cancel.cancel();
    s.live->end();
    if (!s.started.exchange(true)) s.done = true;
    janitor_cv_.notify_all();
}

// Joins finished sessions (their engine set is free when the lease goes) and closes idle ones.
void Realtime::janitor() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stopping_) {
        janitor_cv_.wait_for(l, std::chrono::milliseconds(200));
        std::vector<std::shared_ptr<Session>> finished;
        for (auto it = sessions_.begin(); it != sessions_.end();) {
            Session &s = *it->second;
            if (s.done) {
                finished.push_back(it->second);
                it = sessions_.erase(it);
                continue;
            }
            if (!s.finishing && !s.gone && s.now_ms() - s.last_msg_ms.load() > static_cast<int64_t>(cfg_.idle_timeout_s * 1000)) {
                s.finishing = true;
                {
                    std::lock_guard<std::mutex> sl(s.mu);
                    s.send(error_event("invalid_request_error", "session_idle",
                                       "no message for " + fmt(cfg_.idle_timeout_s, 1) + " s (--realtime-idle-s): closing"));
                }
                ws_->close(s.conn, 1008, "idle");
            }
            ++it;
        }
        l.unlock();
        for (auto &s : finished) {
            if (s->th.joinable()) s->th.join();
            s.reset();  // the lease goes with the last reference
        }
        l.lock();
    }
}

}  // namespace rtf::serve
