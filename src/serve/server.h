#pragma once
// `rtf serve`: the speak path as a streaming HTTP server (cpp-httplib), models loaded once.
//
//   speak::SpeakConfig base = ...;               // the knobs every utterance starts from
//   ServeConfig sc; sc.port = 0;
//   Server srv(sc, base, progress);              // loads max_streams engine sets (minutes on big kits)
//   int port = srv.bind();                       // throws rtf::Error(Setup) naming host:port
//   std::thread t([&] { srv.run(); });           // serves until stop()
//   ...; srv.stop(); t.join();
//
// Endpoints (docs/serve.md has the full contract):
//   POST /v1/audio/speech   OpenAI-compatible (speech-request.h): chunked WAV/PCM, or SSE deltas
//   POST /v1/speak          rtfkit's own: prompt or text + per-utterance knobs; SSE by default,
//                           the last event is the run's full result JSON
//   GET  /v1/runs/ID        a finished stream's result JSON (X-Rtf-Run-Id of its response)
//   POST /v1/runs/ID/cancel stops a running stream within a chunk and frees its slot: 202, or
//                           409 once it has finished, 404 for an id that is not running
//   GET  /health            200 {"status":"ok",...} while serving (503 "stopping" once stop() began)
//   --agent-port N: HAProxy's agent check (agent-check.h), the free-slot share as a weight
//   GET  /v1/realtime       426: duplex sessions are a WebSocket on their own port (realtime.h,
//                           ws://HOST:--realtime-port/v1/realtime; /health says where)
//   GET  /metrics           Prometheus text (serve-metrics.h; with --batch on the decode batchers' figures)
// Audio is 24 kHz mono s16le, one write per Token2Wav window as it is made. A client that
// disconnects cancels its utterance and frees its slot at once, also while it waits in the
// queue or before its first audio (connection-watch.h); one that stops reading is dropped
// after the write timeout.
// A bad request gets 400 {"error":{"message","field","type"}}; over capacity 429/503 with
// Retry-After (admission.h). Handlers never let an exception out (500 JSON instead).
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipeline/cancel.h"
#include "serve/admission.h"
#include "serve/connection-watch.h"
#include "serve/agent-check.h"
#include "serve/realtime.h"
#include "serve/serve-config.h"
#include "serve/serve-metrics.h"
#include "serve/speech-request.h"
#include "speak/speak.h"

namespace httplib {
class Server;
struct Request;
struct Response;
class DataSink;
}  // namespace httplib

namespace rtf::serve {

class Server {
public:
    // Loads cfg.max_streams engine sets from `base` (the Token2Wav weights once, shared).
    // `progress` gets one line per slot loaded. Throws rtf::Error like load_engines.
    Server(ServeConfig cfg, speak::SpeakConfig base, const std::function<void(const std::string &)> &progress = {});
    ~Server();
    Server(const Server &) = delete;
    Server &operator=(const Server &) = delete;

    int bind();   // the bound port; writes cfg.port_file
    void run();   // blocks, serving, until stop()
    // Thread-safe, idempotent: refuses new streams, cancels running ones and returns; realtime
    // sessions are cancelled and their threads joined first (each leaves within a chunk).
    void stop();

    const speak::SpeakConfig &base() const { return base_; }
    const ServeConfig &config() const { return cfg_; }
    // Compute threads per stage per slot that --slot-threads resolved to (0 = the knobs as given).
    int slot_threads() const { return slot_threads_; }
    // The realtime (duplex WebSocket) endpoint's port once bound; 0 when it is off.
    int realtime_port() const { return realtime_ ? realtime_->port() : 0; }
    int realtime_sessions() const { return realtime_sessions_; }
    bool quiet = false;  // no per-request log line on stderr

private:
    struct Stream;
    void handle_speech(const httplib::Request &req, httplib::Response &res, bool openai);
    bool run_stream(Stream &st, httplib::DataSink &sink);
    void reply_error(httplib::Response &res, int status, const std::string &type, const std::string &field,
                     const std::string &message);
    void keep_run(int64_t id, nlohmann::json result);
    nlohmann::json voices_json() const;  // GET /v1/audio/voices
    std::vector<std::string> voice_names() const;  // the kit's voices; {"default"} for a family kit

    ServeConfig cfg_;
    speak::SpeakConfig base_;
    int slot_threads_ = 0;
    int realtime_sessions_ = 0;
    std::unique_ptr<speak::DecodeBatching> batching_;  // --batch on: the shared LLM / TTS contexts
    std::vector<std::unique_ptr<speak::Engines>> slots_;
    AdmissionGate gate_;
    ServeMetrics metrics_;
    ConnectionWatch watch_;  // declared before http_: outlives every handler
    std::unique_ptr<httplib::Server> http_;
    std::atomic<bool> stopping_{false};
    std::atomic<int64_t> next_id_{1};
    std::atomic<double> stream_s_{1.0};              // recent mean stream wall time (Retry-After)
    std::mutex mu_;                                  // guards runs_, live_ and a Stream's chunks_at_cancel
    std::map<int64_t, nlohmann::json> runs_;
    std::deque<int64_t> run_order_;
    std::map<int64_t, Stream *> live_;               // admitted streams by id (cancel by request; stop() trips them)
    std::mutex log_mu_;
    std::unique_ptr<Realtime> realtime_;  // /v1/realtime; null when off
    std::unique_ptr<AgentCheck> agent_;  // last: it reads gate_ and stopping_, so it goes first
};

}  // namespace rtf::serve
