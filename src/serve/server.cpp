#include "serve/server.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <regex>

#include <sys/socket.h>
#include <sys/time.h>

#include "core/audio-stream.h"
#include "core/error.h"
#include "core/format.h"
#include "core/wav.h"
#include "serve/base64.h"
#include "serve/listen-page.h"
#include "speak/knobs.h"

namespace rtf::serve {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string safe_dump(const json &j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
std::string sse_data(const json &j) { return "data: " + safe_dump(j) + "\n\n"; }
std::string sse_event(const std::string &event, const json &j) { return "event: " + event + "\n" + sse_data(j); }

}  // namespace

struct Server::Stream {
    explicit Stream(ConnectionWatch &w) : watch(w) {}
    ~Stream() {
        unwatch();
        if (on_end) on_end();
    }
    // Before httplib may close the connection (the end of run_stream, or this stream's
    // destruction with the response, whichever is first).
    void unwatch() {
        if (watch_id >= 0) watch.remove(watch_id);
        watch_id = -1;
    }
    int64_t id = 0;
    SpeechRequest req;
    std::unique_ptr<AdmissionGate::Lease> lease;
    pipe::CancelToken cancel;
    std::atomic<bool> gone{false};  // the watch saw the client hang up
    ConnectionWatch &watch;
    int64_t watch_id = -1;
    Clock::time_point t_arrival;
    double queue_wait_ms = 0;
    bool ran = false;
    std::atomic<bool> cancel_requested{false};  // POST /v1/runs/ID/cancel
    std::atomic<int64_t> chunks_sent{0};        // as run_stream counts them
    int64_t chunks_at_cancel = -1;              // chunks_sent when the cancel came (under mu_)
    std::function<void()> on_end;               // leaves the server's live map (set once it has an id)
};

Server::Server(ServeConfig cfg, speak::SpeakConfig base, const std::function<void(const std::string &)> &progress)
    : cfg_(std::move(cfg)), base_(std::move(base)), gate_(cfg_.max_streams, cfg_.max_queue) {
    cfg_.validate();
    // An utterance's own input replaces this placeholder; the engines need a valid config.
    base_.prompt.clear();
    base_.text_file.clear();
    base_.text = "Hello.";
    slot_threads_ = cfg_.resolved_slot_threads(usable_cpus());
    apply_slot_threads(base_, slot_threads_, cfg_.thread_knobs_given, cfg_.thread_knobs_profile);
    speak::finalize(base_);
    if (cfg_.batch) {
        batching_ = std::make_unique<speak::DecodeBatching>();
        batching_->n_streams = cfg_.max_streams;
        batching_->gather_ms = cfg_.batch_gather_ms;
        // One shared context does the decoding of every slot: it gets the slots' shares
        // together (a thread knob the user gave is kept as given).
        if (slot_threads_ > 0) {
            const int shared = std::min(usable_cpus(), slot_threads_ * cfg_.max_streams);
            // A stage's shared context gets them unless the user gave one of its thread knobs.
            auto given_for = [&](const std::string &stage) {
                for (const auto &k : cfg_.thread_knobs_given) {
                    const auto *d = speak::find_knob(k);
                    if (d && d->facts.thread_count && d->facts.stage == stage) return true;
                }
                return false;
            };
            if (!given_for("llm")) batching_->llm_threads = shared;
            if (!given_for("tts")) batching_->tts_threads = shared;
        }
    }
    // A kit of another family (speak/family.h): one engine set per slot, nothing shared, no decode batching.
    const std::string family = speak::resolve_kit(base_.models_dir, false).family;
    const bool family_kit = family != "minicpmo45";
    if (family_kit && batching_)
        throw_usage("--batch on: decode batching is MiniCPM-o 4.5's; a " + family + " kit runs one engine set per slot");
    for (int i = 0; i < cfg_.max_streams; ++i) {
        const auto t0 = Clock::now();
        slots_.push_back(speak::load_engines(base_, i == 0 || family_kit ? nullptr : slots_.front().get(), batching_.get()));
        if (i == 0) base_ = slots_.front()->config;  // model paths and load-time derivations filled in
        if (progress)
            progress("slot " + std::to_string(i + 1) + "/" + std::to_string(cfg_.max_streams) + " loaded in " +
                     fmt(ms_between(t0, Clock::now()) / 1000.0, 1) + " s");
    }
    // Every voice of the kit now, not in a request: a voice's first use loads its prompt cache
    // (~1.7 s for the cpu twin's 211 MB; docs/measurements.md), which would land in that
    // request's first audio. A switch between loaded voices costs tens of ms.
    {
        const auto t0 = Clock::now();
        const auto names = voice_names();
        if (slots_.front()->voices)
            for (const auto &n : names) slots_.front()->voices->get(n);
        if (progress && names.size() > 1)
            progress("voices " + std::to_string(names.size()) + " loaded in " + fmt(ms_between(t0, Clock::now()) / 1000.0, 1) + " s");
    }
    // Duplex sessions (/v1/realtime): their own engine sets, on a kit with an audio encoder.
    const bool has_apm = !slots_.front()->kit.apm.empty();
    realtime_sessions_ = cfg_.realtime.sessions < 0 ? (has_apm ? 1 : 0) : cfg_.realtime.sessions;
    if (realtime_sessions_ > 0) {
        RealtimeConfig rc = cfg_.realtime;
        rc.sessions = realtime_sessions_;
        if (rc.duplex.models_dir.empty()) rc.duplex.models_dir = base_.models_dir;
        realtime_ = std::make_unique<Realtime>(std::move(rc), progress);
    }
    gate_.on_change([this](int active, int queued) { metrics_.set_streams(active, queued, cfg_.max_streams); });
    metrics_.set_streams(0, 0, cfg_.max_streams);

    http_ = std::make_unique<httplib::Server>();
    auto &h = *http_;
    const size_t workers = static_cast<size_t>(cfg_.worker_threads());
    h.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
    h.set_payload_max_length(cfg_.max_body_bytes);
    h.set_read_timeout(std::chrono::duration<double>(cfg_.read_timeout_s));
    h.set_write_timeout(std::chrono::duration<double>(cfg_.write_timeout_s));
    // httplib's write timeout guards the wait for the socket to become writable, but the
    // send that follows is blocking: with a stalled reader and a chunk larger than the free
    // buffer space it would block for ever and hold the slot. SO_SNDTIMEO bounds that send
    // too. Both options are set on the listening socket; Linux copies them to every
    // accepted connection.
    h.set_socket_options([sndbuf = cfg_.send_buffer_kb, wt = cfg_.write_timeout_s](socket_t sock) {
        httplib::default_socket_options(sock);
        timeval tv{};
        tv.tv_sec = static_cast<time_t>(wt);
        tv.tv_usec = static_cast<suseconds_t>((wt - static_cast<double>(tv.tv_sec)) * 1e6);
        setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (sndbuf > 0) {
            const int bytes = sndbuf * 1024;
            setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
        }
    });
    h.set_keep_alive_timeout(cfg_.keep_alive_s);

    h.Post("/v1/audio/speech", [this](const httplib::Request &q, httplib::Response &s) { handle_speech(q, s, true); });
    h.Post("/v1/speak", [this](const httplib::Request &q, httplib::Response &s) { handle_speech(q, s, false); });
    h.Get("/health", [this](const httplib::Request &, httplib::Response &s) {
        const bool ok = !stopping_;
        json j = {{"status", ok ? "ok" : "stopping"},
                  {"streams_active", gate_.active()},
                  {"streams_queued", gate_.queued()},
                  {"agent_port", cfg_.agent_port > 0 ? json(cfg_.agent_port) : json(nullptr)},
                  {"max_streams", cfg_.max_streams},
                  {"max_queue", cfg_.max_queue},
                  {"kit", slots_.front()->kit.dir},
                  {"family", slots_.front()->kit.family},
                  {"batch", batching_ != nullptr},
                  {"slot_threads", slot_threads_},
                  {"batch_threads", batching_ ? json{{"llm", batching_->llm_threads}, {"tts", batching_->tts_threads}} : json(nullptr)},
                  {"twin", slots_.front()->kit.is_twin},
                  {"realtime", realtime_ ? realtime_->status() : json(nullptr)}};
        s.status = ok ? 200 : 503;
        s.set_content(j.dump(), "application/json");
        metrics_.request("health", s.status);
    });
    h.Get("/", [this](const httplib::Request &, httplib::Response &s) {
        s.set_content(listen_page(), "text/html; charset=utf-8");
        // The page fetches nothing from anywhere but this server, and runs only its own script.
        s.set_header("Content-Security-Policy",
                     "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
                     "media-src 'self' blob:; img-src 'self' data:");
        metrics_.request("page", 200);
    });
    h.Get("/v1/realtime", [this](const httplib::Request &, httplib::Response &s) {
        if (!realtime_) {
            reply_error(s, 404, "not_found", "", "realtime sessions are off: the kit has no audio encoder, or --realtime-sessions 0");
        } else {
            s.status = 426;  // Upgrade Required: the WebSocket listens on its own port
            s.set_header("Upgrade", "websocket");
            s.set_content(json{{"error", {{"message", "duplex sessions are a WebSocket: connect to websocket_url"}, {"type", "upgrade_required"}}},
                               {"websocket_url", "ws://" + cfg_.host + ":" + std::to_string(realtime_->port()) + "/v1/realtime"}}
                              .dump(),
                          "application/json");
        }
        metrics_.request("realtime", s.status);
    });
    h.Get("/v1/audio/voices", [this](const httplib::Request &, httplib::Response &s) {
        s.set_content(voices_json().dump(2), "application/json");
        metrics_.request("voices", 200);
    });
    h.Get("/metrics", [this](const httplib::Request &, httplib::Response &s) {
        s.set_content(metrics_.render() + render_batch_metrics(batching_ != nullptr,
                                                               batching_ ? batching_->stats_json() : json::object()),
                      "text/plain; version=0.0.4; charset=utf-8");
        metrics_.request("metrics", 200);
    });
    h.Get("/v1/knobs", [this](const httplib::Request &, httplib::Response &s) {
        json j = {{"request_knobs", speak::run_knob_names()}, {"server_knobs", speak::knobs_json(base_)}};
        s.set_content(j.dump(2), "application/json");
        metrics_.request("knobs", 200);
    });
    h.Get(R"(/v1/runs/(\d{1,18}))", [this](const httplib::Request &q, httplib::Response &s) {
        const int64_t id = std::stoll(q.matches[1].str());
        std::lock_guard<std::mutex> l(mu_);
        auto it = runs_.find(id);
        if (it == runs_.end()) {
            reply_error(s, 404, "not_found", "id", "no finished run " + std::to_string(id) + " (the server keeps the last " +
                                                       std::to_string(cfg_.runs_kept) + ")");
        } else {
            s.set_content(safe_dump(it->second), "application/json");
        }
        metrics_.request("runs", s.status);
    });
    // Cancel by request: the stream stops within a chunk (its pipeline's cancel token, as a
    // hang-up trips it) and frees its slot; the client gets the chunk already under way and
    // the usual end of the stream.
    auto cancel_run = [this](int64_t id, httplib::Response &s) {
        std::lock_guard<std::mutex> l(mu_);
        if (auto it = live_.find(id); it != live_.end()) {
            Stream &st = *it->second;
            if (!st.cancel_requested.exchange(true)) st.chunks_at_cancel = st.chunks_sent.load();
            st.cancel.cancel();
            s.status = 202;
            s.set_content(json{{"id", id}, {"status", "cancelling"}}.dump(), "application/json");
        } else if (runs_.count(id)) {
            reply_error(s, 409, "conflict", "id", "run " + std::to_string(id) + " has already finished");
        } else {
            reply_error(s, 404, "not_found", "id", "no running stream " + std::to_string(id));
        }
        metrics_.request("cancel", s.status);
    };
    const std::string cancel_path = R"(/v1/runs/(\d{1,18})/cancel)";
    h.Post(cancel_path, [cancel_run](const httplib::Request &q, httplib::Response &s) {
        cancel_run(std::stoll(q.matches[1].str()), s);
    });
    auto no_route = [](const httplib::Request &q) {
        return "no route " + q.method + " " + q.path +
               " (GET /, POST /v1/audio/speech, GET /v1/audio/voices, POST /v1/speak, GET /v1/runs/ID, "
               "POST /v1/runs/ID/cancel, GET /v1/knobs, GET /health, GET /metrics)";
    };
    // A request whose method may carry a body (POST, PUT, PATCH, DELETE) but that says neither
    // Content-Length nor Transfer-Encoding (`curl -X POST URL`): httplib would read a body until
    // the client closed the connection, and answer 400 before any route once its read timed
    // out. Answered here, before httplib reads: the route that takes no body (cancel) runs as
    // with an empty one, a route that needs a body says so (411), anything else is the 404 of
    // an unknown route.
    h.set_pre_routing_handler([this, cancel_run, no_route, cancel_re = std::regex(cancel_path)](const httplib::Request &q,
                                                                                               httplib::Response &s) {
        const bool may_have_body = q.method == "POST" || q.method == "PUT" || q.method == "PATCH" || q.method == "DELETE";
        if (!may_have_body || q.has_header("Content-Length") || q.has_header("Transfer-Encoding"))
            return httplib::Server::HandlerResponse::Unhandled;
        std::smatch m;
        if (q.method == "POST" && std::regex_match(q.path, m, cancel_re)) {
            cancel_run(std::stoll(m[1].str()), s);
        } else if (q.method == "POST" && (q.path == "/v1/audio/speech" || q.path == "/v1/speak")) {
            reply_error(s, 411, "invalid_request_error", "",
                        "POST " + q.path + " needs a JSON body, sent with its Content-Length (or Transfer-Encoding: chunked)");
            metrics_.request(q.path == "/v1/speak" ? "speak" : "speech", 411);
        } else {
            reply_error(s, 404, "not_found", "", no_route(q));
        }
        return httplib::Server::HandlerResponse::Handled;
    });
    // What httplib answers by itself, before any route, in words: never a bare "HTTP 400".
    h.set_error_handler(httplib::Server::HandlerWithResponse([this, no_route](const httplib::Request &q, httplib::Response &s) {
        if (!s.body.empty()) return httplib::Server::HandlerResponse::Unhandled;  // ours, already JSON
        std::string msg;
        switch (s.status) {
        case 404: msg = no_route(q); break;
        case 413: msg = "request body larger than " + std::to_string(cfg_.max_body_bytes) + " bytes"; break;
        case 400:
            msg = "HTTP 400: the request could not be read: a malformed request line or header, a bad Content-Length, or "
                  "a body that did not arrive in full within the read timeout (" +
                  fmt(cfg_.read_timeout_s, 0) + " s)";
            break;
        case 414: msg = "HTTP 414: the request URI is too long"; break;
        case 416: msg = "HTTP 416: the requested range cannot be served"; break;
        default:
            msg = "HTTP " + std::to_string(s.status) + ": refused before reaching a route (" + q.method + " " + q.path + ")";
        }
        json j = {{"error", {{"message", msg}, {"type", s.status == 404 ? "not_found" : "invalid_request_error"}}}};
        s.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
        return httplib::Server::HandlerResponse::Handled;
    }));
    h.set_exception_handler([this](const httplib::Request &, httplib::Response &s, std::exception_ptr ep) {
        std::string msg = "internal error";
        try {
            if (ep) std::rethrow_exception(ep);
        } catch (const std::exception &e) {
            msg = e.what();
        } catch (...) {
        }
        reply_error(s, 500, "server_error", "", msg);
    });
}

Server::~Server() {
    stop();
}

int Server::bind() {
    const bool any_port = cfg_.port == 0;
    int port = cfg_.port;
    if (port == 0) {
        port = http_->bind_to_any_port(cfg_.host);
        if (port < 0) throw_setup("rtf serve: cannot bind " + cfg_.host + " (any port)");
    } else if (!http_->bind_to_port(cfg_.host, port)) {
        throw_setup("rtf serve: cannot bind " + cfg_.host + ":" + std::to_string(port) +
                    " (in use, or not an address of this machine; --port 0 picks a free one)");
    }
    cfg_.port = port;
    if (realtime_) {
        const int rp = cfg_.realtime.port >= 0 ? cfg_.realtime.port : any_port ? 0 : port + 1;
        realtime_->bind(cfg_.host, rp);
    }
    if (cfg_.agent_port > 0) {
        agent_ = std::make_unique<AgentCheck>(cfg_.host, cfg_.agent_port, [this] {
            return agent_reply(gate_.active(), cfg_.max_streams, stopping_.load());
        });
    }
    if (!cfg_.port_file.empty()) {
        std::ofstream f(cfg_.port_file);
        f << port << "\n";
        if (!f) throw_setup("rtf serve: cannot write --port-file " + cfg_.port_file);
    }
    return port;
}

void Server::run() {
    if (realtime_) realtime_->start();
    http_->listen_after_bind();
}

void Server::stop() {
    if (stopping_.exchange(true)) return;
    gate_.close();
    {
        std::lock_guard<std::mutex> l(mu_);
        for (auto &[id, st] : live_) st->cancel.cancel();
    }
    if (realtime_) realtime_->stop();
    if (http_) http_->stop();
}

void Server::reply_error(httplib::Response &res, int status, const std::string &type, const std::string &field,
                         const std::string &message) {
    json e = {{"message", message}, {"type", type}};
    if (!field.empty()) e["field"] = field;
    res.status = status;
    // A parser message may quote the client's invalid UTF-8: replace it, never throw here.
    res.set_content(json{{"error", e}}.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

std::vector<std::string> Server::voice_names() const {
    if (!slots_.front()->voices) {  // a family kit: the speaker given at load, and its voices/NAME.wav
        std::vector<std::string> n{"default"};
        for (const auto &v : slots_.front()->kit.voices) n.push_back(v.first);
        return n;
    }
    return slots_.front()->voices->names();
}

json Server::voices_json() const {
    if (!slots_.front()->voices) {
        const std::string spk = base_.family.speaker_file;
        json list = json::array({{{"name", "default"}, {"path", spk}}});
        for (const auto &[name, path] : slots_.front()->kit.voices) list.push_back({{"name", name}, {"path", path}});
        return {{"voices", list},
                {"openai_aliases", kOpenAiVoices},
                {"family", slots_.front()->kit.family},
                {"note", "a " + slots_.front()->kit.family + " kit clones reference recordings: 'default' is the one given at "
                         "load (--speaker-file" + (spk.empty() ? std::string(": none, the model's own voice)") : " " + spk + ")") +
                         ", each of the kit's voices/NAME.wav another (encoded once at load); OpenAI's names speak with "
                         "the default"}};
    }
    const auto &vs = *slots_.front()->voices;
    return {{"voices", vs.to_json()},
            {"openai_aliases", kOpenAiVoices},
            {"note", "a voice is a prompt cache (speaker vector and prompt state): the kit's token2wav-gguf/prompt_cache.gguf "
                     "is 'default', each voices/NAME/prompt_cache.gguf another; OpenAI's names speak with the default. "
                     "Cloning from a recording needs a speaker encoder and a speech tokenizer the kit does not hold"}};
}

void Server::keep_run(int64_t id, json result) {
    std::lock_guard<std::mutex> l(mu_);
    runs_[id] = std::move(result);
    run_order_.push_back(id);
    while (static_cast<int>(run_order_.size()) > cfg_.runs_kept) {
        runs_.erase(run_order_.front());
        run_order_.pop_front();
    }
}

void Server::handle_speech(const httplib::Request &req, httplib::Response &res, bool openai) {
    const auto t_arrival = Clock::now();
    const std::string ep = openai ? "speech" : "speak";
    auto refuse = [&](int status, const std::string &type, const std::string &field, const std::string &msg) {
        reply_error(res, status, type, field, msg);
        metrics_.request(ep, status);
        if (!quiet) {
            std::lock_guard<std::mutex> l(log_mu_);
            std::fprintf(stderr, "[serve] %s %d %s\n", ep.c_str(), status, msg.c_str());
        }
    };
    if (stopping_) {
        res.set_header("Retry-After", "5");
        return refuse(503, "unavailable", "", "the server is stopping");
    }
    SpeechRequest sr;
    try {
        const auto voices = voice_names();
        sr = openai ? parse_openai_speech(req.body, base_, cfg_.max_input_chars, voices)
                    : parse_speak_request(req.body, base_, cfg_.max_input_chars, voices);
    } catch (const RequestError &e) {
        return refuse(400, "invalid_request_error", e.field(), e.what());
    }
    if (!slots_.front()->voices && !sr.cfg.prompt.empty())  // a family kit: a TTS without an LLM
        return refuse(400, "invalid_request_error", "prompt",
                      "prompt: this server's kit (" + slots_.front()->kit.family +
                          ") speaks given text and has no LLM to answer a prompt: send `text`");
    // Watch the connection from here on: a client that hangs up while queued leaves the
    // queue, and one that hangs up before its first audio stops its stream at once.
    auto st = std::make_shared<Stream>(watch_);
    const int fd = ConnectionWatch::find_socket(req.local_port, req.remote_addr, req.remote_port);
    st->watch_id = watch_.add(fd, [s = st.get()] {
        s->gone = true;
        s->cancel.cancel();
    });
    auto ticket = gate_.acquire(cfg_.queue_timeout_ms, [s = st.get()] { return s->gone.load(); });
    if (ticket.outcome == Admission::Abandoned) {
        metrics_.rejected(to_string(ticket.outcome));
        return refuse(499, "client_gone", "", "the client hung up while queued");
    }
    if (ticket.outcome != Admission::Admitted) {
        // Retry when a slot is likely free: the mean stream length, at least a second.
        const double mean_s = stream_s_.load();
        res.set_header("Retry-After", std::to_string(std::max(1, static_cast<int>(std::ceil(mean_s)))));
        metrics_.rejected(to_string(ticket.outcome));
        if (ticket.outcome == Admission::QueueFull)
            return refuse(429, "rate_limit_exceeded", "", "all " + std::to_string(cfg_.max_streams) + " streams busy and " +
                                                               std::to_string(cfg_.max_queue) + " requests queued");
        if (ticket.outcome == Admission::TimedOut)
            return refuse(503, "unavailable", "", "no stream slot became free within " + fmt(cfg_.queue_timeout_ms, 0) + " ms");
        return refuse(503, "unavailable", "", "the server is stopping");
    }
    st->id = next_id_++;
    st->on_end = [this, id = st->id] {  // set before it is listed: whatever happens next, it leaves
        std::lock_guard<std::mutex> l(mu_);
        live_.erase(id);
    };
    {
        std::lock_guard<std::mutex> l(mu_);
        live_[st->id] = st.get();
    }
    st->req = std::move(sr);
    st->lease = std::move(ticket.lease);
    st->t_arrival = t_arrival;
    st->queue_wait_ms = ticket.waited_ms;
    res.set_header("X-Rtf-Run-Id", std::to_string(st->id));
    res.set_header("Cache-Control", "no-cache");
    const bool s16 = st->req.format == AudioFormat::Pcm || st->req.format == AudioFormat::Wav;
    res.set_header("X-Audio-Format", std::string(s16 ? "s16le" : to_string(st->req.format)) + "; rate=" +
                                         std::to_string(t2w::T2wModel::sample_rate()) + "; channels=1");
    const char *ct = st->req.stream == StreamFormat::Sse ? "text/event-stream" : content_type(st->req.format);
    res.set_chunked_content_provider(ct, [this, st](size_t, httplib::DataSink &sink) { return run_stream(*st, sink); });
}

bool Server::run_stream(Stream &st, httplib::DataSink &sink) {
    if (st.ran) {  // everything was written in the first call
        sink.done();
        return true;
    }
    st.ran = true;
    if (stopping_) st.cancel.cancel();
    const auto t_start = Clock::now();
    speak::Engines &engines = *slots_[static_cast<size_t>(st.lease->slot())];
    speak::SpeakConfig cfg = st.req.cfg;
    cfg.pipeline.cancel = &st.cancel;
    const bool sse = st.req.stream == StreamFormat::Sse, openai = st.req.endpoint == "speech";
    const int rate = t2w::T2wModel::sample_rate();

    bool client_ok = true;
    double first_ms = -1;
    int64_t n_chunks = 0, n_samples = 0;
    auto write = [&](const std::string &bytes) {
        if (client_ok && st.gone) client_ok = false;  // hung up: write nothing more
        if (!client_ok) return;
        if (!sink.write(bytes.data(), bytes.size())) {
            client_ok = false;  // gone or not reading within the write timeout: stop the utterance
            st.cancel.cancel();
        }
    };
    // The audio body in its format, encoded chunk by chunk (sse carries raw PCM deltas).
    std::optional<AudioStreamEncoder> enc;
    if (!sse) {
        enc.emplace(st.req.format, rate);
        write(enc->begin());
    }
    auto on_chunk = [&](const pipe::Item &c) {
        if (c.pcm.empty()) return;
        if (first_ms < 0) first_ms = ms_between(st.t_arrival, Clock::now());
        if (!sse) {
            write(enc->encode(c.pcm.data(), c.pcm.size()));
            st.chunks_sent.store(++n_chunks);
            n_samples += static_cast<int64_t>(c.pcm.size());
            return;
        }
        const std::string pcm = to_s16le(c.pcm);
        if (openai) {
            write(sse_data({{"type", "speech.audio.delta"}, {"audio", base64_encode(pcm)}}));
        } else {
            write(sse_event("audio", {{"chunk", n_chunks}, {"samples", c.pcm.size()}, {"audio", base64_encode(pcm)}}));
        }
        st.chunks_sent.store(++n_chunks);
        n_samples += static_cast<int64_t>(c.pcm.size());
    };

    // SSE: which text is spoken from which sample (speak.h TextTiming), just before the audio
    // that starts it.
    auto on_text = [&](const speak::TextTiming &t) {
        if (!sse) return;
        if (openai) {
            write(sse_data({{"type", "speech.audio.transcript.delta"},
                            {"delta", t.text},
                            {"audio_start_sample", t.start_sample},
                            {"audio_start_s", static_cast<double>(t.start_sample) / rate},
                            {"in_audio", t.in_audio}}));
        } else {
            write(sse_event("text", speak::to_json(t, rate)));
        }
    };

    speak::SpeakResult r;
    std::string failure;
    try {
        r = speak::speak(engines, cfg, on_chunk, on_text);
    } catch (const std::exception &e) {
        failure = e.what();
    }
    if (st.gone) client_ok = false;
    const bool cancelled = failure.empty() && r.run.cancelled;
    int64_t chunks_after_cancel = -1;  // sent after POST /v1/runs/ID/cancel arrived
    {
        std::lock_guard<std::mutex> l(mu_);
        if (st.chunks_at_cancel >= 0) chunks_after_cancel = n_chunks - st.chunks_at_cancel;
    }
    if (enc && failure.empty()) write(enc->finish());  // the encoder's last page/frames
    json result = failure.empty() ? speak::to_json(r) : json{{"error", failure}};
    // Whether this stream's decodes were merged with others', and how many streams a decode
    // served on average (1 = it ran alone every time).
    json batch = {{"on", batching_ != nullptr}};
    if (failure.empty() && batching_) {
        batch["llm_mean_batch"] = r.engines["llm"].value("mean_batch", 0.0);
        batch["tts_mean_batch"] = r.engines["tts"].value("mean_batch", 0.0);
    }
    result["serve"] = {{"id", st.id},
                       {"endpoint", st.req.endpoint},
                       {"slot", st.lease->slot()},
                       {"queue_wait_ms", st.queue_wait_ms},
                       {"first_audio_ms_from_request", first_ms},
                       {"n_chunks_sent", n_chunks},
                       {"audio_s_sent", static_cast<double>(n_samples) / rate},
                       {"client_disconnected", !client_ok},
                       {"cancelled", cancelled},
                       {"cancel_requested", st.cancel_requested.load()},
                       {"chunks_after_cancel", chunks_after_cancel},
                       {"failed", !failure.empty()},
                       {"knobs", st.req.knobs},
                       {"model", st.req.model},
                       {"voice", st.req.voice},
                       {"voice_spoken", st.req.cfg.voice.empty() ? "default" : st.req.cfg.voice},
                       {"batch", batch}};
    if (sse && client_ok) {
        if (!failure.empty() && openai) {  // the OpenAI stream's error event
            write(sse_data({{"type", "speech.audio.error"}, {"error", {{"message", failure}, {"type", "server_error"}}}}));
        } else if (!failure.empty()) {
            write(sse_event("error", {{"error", {{"message", failure}, {"type", "server_error"}}}}));
        } else if (openai) {
            const auto &m = result["metrics"];
            write(sse_data({{"type", "speech.audio.done"},
                            {"usage", {{"input_tokens", r.text_tokens.size()},
                                       {"output_tokens", r.audio_codes.size()},
                                       {"total_tokens", r.text_tokens.size() + r.audio_codes.size()}}},
                            {"rtf_run_id", st.id},
                            {"metrics", {{"rtf", m.value("rtf", 0.0)},
                                         {"first_audio_ms", first_ms},
                                         {"audio_s", static_cast<double>(n_samples) / rate},
                                         {"starvation", m.value("starvation", json::object())}}}}));
        } else {
            write(sse_event("result", result));
        }
    }
    // The histograms take first audio as the client saw it: queue wait included.
    prof::Metrics m = r.run.metrics;
    if (first_ms >= 0) m.first_audio_ms = first_ms;
    metrics_.stream_done(m, cancelled || !client_ok, !failure.empty());
    metrics_.request(st.req.endpoint, 200);
    const double wall_s = ms_between(t_start, Clock::now()) / 1000.0;
    stream_s_.store(0.8 * stream_s_.load() + 0.2 * wall_s);
    keep_run(st.id, std::move(result));
    {
        std::lock_guard<std::mutex> l(mu_);
        live_.erase(st.id);
    }
    st.unwatch();
    const int slot = st.lease->slot();
    st.lease.reset();  // the slot is free now, not when httplib drops the response
    if (!quiet) {
        std::lock_guard<std::mutex> l(log_mu_);
        std::fprintf(stderr, "[serve] #%lld %s slot %d wait %.0f ms first audio %.0f ms audio %.2f s wall %.2f s%s%s\n",
                     static_cast<long long>(st.id), st.req.endpoint.c_str(), slot, st.queue_wait_ms, first_ms,
                     static_cast<double>(n_samples) / rate, wall_s, client_ok ? "" : " (client gone: cancelled)",
                     failure.empty() ? "" : (" FAILED: " + failure).c_str());
    }
    // A failed or abandoned stream ends without the chunked terminator: the client sees
    // an incomplete body, not a short "complete" one.
    if (!client_ok || (!failure.empty() && !sse)) return false;
    sink.done();
    return true;
}

}  // namespace rtf::serve
