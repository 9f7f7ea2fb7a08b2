#pragma once
// `rtf serve`'s duplex sessions over a WebSocket: ws://HOST:RPORT/v1/realtime (websocket.h).
// A client streams 16 kHz PCM in while the model listens and speaks; events come back as the
// session runs. docs/serve.md "Realtime (duplex)" has the full event schema; in short:
//
//   client -> server (JSON text messages; a binary message = raw s16le 16 kHz mono PCM)
//     session.update              {"session": {"speak_frames": "4-9", "output_audio_format": "pcm16"}}
//                                 before the first audio only (the run starts with it)
//     input_audio_buffer.append   {"audio": base64 s16le 16 kHz mono}
//     response.cancel             barge-in: the reply being spoken stops within one chunk
//     session.finish              no more input: the session drains, sends session.ended, closes
//   server -> client
//     session.created             {"session": {id, slot, frame_ms, input/output rates, formats}}
//     rtf.frame                   one per input frame: decision, text, timings (ms, session clock)
//     response.created            a reply (speak turn) began: {"response": {"id"}}
//     response.audio_transcript.delta   {"response_id", "delta": text}
//     response.audio.delta        {"response_id", "delta": base64 audio (pcm16 24 kHz or an encoded stream)}
//     response.audio.done, response.done   {"response": {"id", "status": completed|cancelled, "audio_s"}}
//     session.ended               {"session": {...totals}, "timeline": the rtfkit.duplex/1 result}
//     error                       {"error": {"type", "code", "message"}}; the session goes on
// Event names follow OpenAI's realtime API where one fits (rtf.frame and session.finish are ours).
//
// Capacity: `sessions` duplex engine sets (audio encoder, duplex LLM, duplex TTS, Token2Wav),
// loaded at start; one session per set. A handshake finding every set busy is refused with
// 429 and Retry-After; a stopping server refuses with 503. A client that disconnects ends
// its session at once (its pipeline cancelled, the set freed); one that sends nothing for
// `idle_timeout_s` before session.finish is closed (1008) and freed the same way.
// Thread-safety: the WebSocket network thread parses messages; each session's pipeline runs
// on its own threads and sends through the thread-safe WebSocket server.
#include <functional>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "serve/admission.h"
#include "serve/serve-config.h"
#include "speak/duplex.h"

namespace rtf::serve {

namespace ws {
class Server;
}

class Realtime {
public:
    // Loads cfg.sessions (>= 1) duplex engine sets from cfg.duplex (its models_dir: a kit with an
    // audio encoder). `progress` gets one line per set. Throws rtf::Error like load_duplex_engines.
    explicit Realtime(RealtimeConfig cfg, const std::function<void(const std::string &)> &progress = {});
    ~Realtime();
    Realtime(const Realtime &) = delete;
    Realtime &operator=(const Realtime &) = delete;

    int bind(const std::string &host, int port);  // the bound port; throws rtf::Error(Setup)
    void start();                                 // serves on its own threads
    void stop();                                  // ends every session, closes, joins (idempotent)
    int port() const { return port_; }
    nlohmann::json status() const;                // for /health: port, path, sessions active / max

private:
    struct Session;
    void on_open(uint64_t conn);
    void on_message(uint64_t conn, bool binary, std::string &&data);
    void on_close(uint64_t conn);
    void janitor();

    RealtimeConfig cfg_;
    std::vector<std::unique_ptr<speak::DuplexEngines>> slots_;
    AdmissionGate gate_;
    std::unique_ptr<ws::Server> ws_;
    int port_ = 0;
    mutable std::mutex mu_;
    std::map<uint64_t, std::unique_ptr<AdmissionGate::Lease>> pending_;  // handshake accepted, not open yet
    std::map<uint64_t, std::shared_ptr<Session>> sessions_;
    std::condition_variable janitor_cv_;
    bool stopping_ = false;
    uint64_t next_session_ = 1;
    std::thread net_, janitor_;
};

}  // namespace rtf::serve
