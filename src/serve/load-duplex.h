#pragma once
// `rtf load --duplex`: N concurrent duplex sessions against `rtf serve`'s /v1/realtime, each
// streaming a recording paced in real time, as N users talking at once would.
//
//   DuplexLoadConfig c;  c.url = "http://127.0.0.1:8080";  c.input = "speech.wav";
//   c.frames = 30;  c.speak_frames = "4-12,20-28";  c.sessions = 2;
//   DuplexLoadResult r = run_duplex_load(c);   // r.sessions[i].timeline: the server's
//                                              // rtfkit.duplex/1 result of session i
//
// The realtime port comes from the server's GET /health (`realtime.port`). Each session opens
// its WebSocket, sets the forced schedule (twins), then sends the recording's frames in
// `chunk_ms` pieces, each when it would have been recorded (piece k at t0 + (k+1) x chunk_ms),
// then session.finish, and keeps every event until session.ended. The five checks of a session
// are the duplex analyzer's on its timeline (bench/duplex-analysis.h, applied by the caller);
// what this layer measures on the client side is each reply's first audio after the frame
// that began it was fully sent, and the event counts.
// A session refused at the handshake (429/503) is counted as refused, not as failed.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/load-gen.h"

namespace rtf::serve {

struct DuplexLoadConfig {
    std::string url = "http://127.0.0.1:8080";  // the server's HTTP address (its /health names the realtime port)
    int realtime_port = 0;        // skip the /health lookup: connect here (0 = ask /health)
    std::string input;            // the recording each session streams (any rate / channels)
    int frames = 0;               // frames per session; 0 = the recording's (more: silence after it)
    std::string speak_frames;     // forced schedule (twins; "" = the model decides)
    int sessions = 1;             // concurrent sessions
    double chunk_ms = 100;        // audio per message, sent at real-time pace
    double stagger_ms = 0;        // session i starts i x stagger_ms after the first
    double timeout_s = 600;       // per session, for everything after the last frame is sent
    void validate() const;        // rtf::Error(Usage) naming the flag
    nlohmann::json to_json() const;
};

struct DuplexSessionOutcome {
    int client = 0;
    int status = 0;               // handshake HTTP status: 101 opened; 429/503 refused; 0 = no answer
    std::string error;            // transport error or the server's error events (joined)
    bool ended = false;           // session.ended arrived
    double t_start_ms = 0;        // since the run started
    double wall_s = 0;            // connect -> session.ended
    int n_frames_sent = 0;
    int n_events = 0, n_frame_events = 0, n_audio_deltas = 0, n_errors = 0;
    double audio_s = 0;           // audio received (pcm16 24 kHz)
    // Per reply: ms from the moment the reply's first speaking frame was fully sent to its
    // first audio delta, as the client saw it.
    std::vector<double> first_audio_ms;
    nlohmann::json timeline;      // the server's rtfkit.duplex/1 result (session.ended), null if none
    nlohmann::json to_json() const;
};

struct DuplexLoadResult {
    DuplexLoadConfig config;
    std::vector<DuplexSessionOutcome> sessions;
    double wall_s = 0;
    int n_opened = 0, n_refused = 0, n_ended = 0;
    nlohmann::json to_json() const;
};

// Throws rtf::Error(Usage/Setup) for a bad config, an unreadable recording, or a server
// without realtime sessions; a session's own failure is in its outcome.
DuplexLoadResult run_duplex_load(const DuplexLoadConfig &c, const LoadProgress &progress = {});

}  // namespace rtf::serve
