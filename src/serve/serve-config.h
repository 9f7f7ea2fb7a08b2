#pragma once
// ServeConfig — how `rtf serve` listens and admits streams (the speak knobs of its
// utterances are a speak::SpeakConfig beside it).
//
// Capacity model: `max_streams` slots, each an engine set (a warm Token2Wav stream; the
// Token2Wav weights are shared), so up to max_streams utterances run at once, each on its
// own pipeline. `batch` off: every slot has its own LLM and TTS contexts (independent
// streams). `batch` on: the slots' LLMs are sequences of one shared LLM context and their
// TTSs of one shared TTS context, and the decode steps of all running streams go into one
// decode call per stage (models/lm/decode-batcher.h; docs/serve.md "Batching"). A request finding every
// slot busy waits in a queue of at most `max_queue` requests for at most
// `queue_timeout_ms`; a full queue answers 429 at once and a wait that runs out answers
// 503, both with Retry-After. Nothing waits unbounded: the HTTP worker pool is sized so
// that every admitted or queued request has a thread and `spare_threads` remain for
// /health and /metrics.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "speak/duplex.h"
#include "speak/speak-config.h"

namespace rtf::serve {

// The duplex sessions over a WebSocket (realtime.h): how many, and their limits.
struct RealtimeConfig {
    int sessions = -1;            // --realtime-sessions: duplex engine sets = concurrent sessions;
                                  // -1 = 1 when the kit has an audio encoder, else 0 (off)
    int port = -1;                // --realtime-port: -1 = the HTTP port + 1 (any free port with --port 0); 0 = any free
    double max_session_s = 600;   // --realtime-max-s: input audio one session may stream
    double idle_timeout_s = 30;   // --realtime-idle-s: no message for this long (before session.finish) -> closed
    size_t max_message_bytes = 1 << 20;
    speak::DuplexConfig duplex;   // the sessions' duplex knobs (models_dir "" = the served kit)
    void validate() const;        // throws rtf::Error(Usage) naming the flag
};

struct ServeConfig {
    std::string host = "127.0.0.1";
    int port = 8080;                  // 0 = any free port (printed, and written to port_file)
    std::string port_file;            // "" = none; the bound port, once listening (scripts, tests)
    int agent_port = 0;               // --agent-port: HAProxy's agent check on this port (agent-check.h); 0 = none
    int max_streams = 1;              // concurrent utterances = engine slots loaded
    int max_queue = 4;                // requests that may wait for a slot
    double queue_timeout_ms = 30000;  // a queued request's longest wait -> 503
    int max_input_chars = 4096;       // OpenAI's limit for `input`
    size_t max_body_bytes = 1 << 20;  // larger bodies -> 413
    double read_timeout_s = 10;       // a client that sends its request slower -> dropped
    double write_timeout_s = 10;      // a reader that stops reading this long -> stream cancelled
    // The kernel's send buffer per connection (SO_SNDBUF), in KiB; 0 = the kernel's own, which
    // on Linux grows to megabytes: a reader that stops reading is only noticed once the
    // buffers between it and us are full, i.e. after this much audio (plus its receive
    // buffer) and then write_timeout_s. A small buffer notices a stalled reader sooner.
    int send_buffer_kb = 0;
    int keep_alive_s = 2;             // idle keep-alive connections hold a worker: keep it short
    int spare_threads = 4;            // workers beyond max_streams + max_queue
    int runs_kept = 64;               // GET /v1/runs/ID keeps this many results
    // --batch on|off: merge the streams' LLM/TTS decode steps. Off by default: on this 2-core
    // machine it did not raise capacity (docs/measurements.md §10.1: the streams' steps rarely
    // coincide while Token2Wav is the wall, and the ones that do not run one after another).
    RealtimeConfig realtime;          // /v1/realtime (duplex over a WebSocket)
    bool batch = false;
    double batch_gather_ms = 2.0;     // --batch-gather-ms: a decode waits at most this long for the other streams
    // --slot-threads auto|knobs|N: compute threads of every stage (LLM/TTS decode and batch,
    // token2mel, vocoder) in every slot. auto (-1, the default) = max(1, CPUs / max_streams):
    // the slots' stages share the cores instead of each taking all of them, since on a
    // saturated machine threads beyond the cores wait at each other's barriers
    // (docs/measurements.md §10.4: tiny kit on 2 cores, 1 thread per stage against the
    // single-stream defaults of 2: +8 % audio per wall second at 3 streams, 4 of 4 pairs, and
    // at 4 streams in 8 of 11 pairs; first audio p50 -15 % at 3 streams). knobs (0):
    // the thread knobs as given. A thread knob given on the command line or in --config
    // (named in `thread_knobs_given`) is kept whatever this says. One the machine profile chose
    // (named in `thread_knobs_profile`) is kept when it is below the share: the profile's count
    // was measured for one stream on this CPU (the `avx2` row's one TTS thread on 2 CPUs), and
    // the share only caps it.
    int slot_threads = -1;
    std::vector<std::string> thread_knobs_given;
    std::vector<std::string> thread_knobs_profile;
    // The threads per stage `slot_threads` asks for on a machine with `cpus` CPUs; 0 = keep the knobs.
    int resolved_slot_threads(int cpus) const;

    // Throws rtf::Error(Usage) naming the flag.
    void validate() const;
    int worker_threads() const { return max_streams + max_queue + spare_threads; }
    nlohmann::json to_json() const;
};

// The speak knobs `--slot-threads` sets (each stage's compute threads).
const std::vector<std::string> &slot_thread_knobs();
// Sets every slot thread knob not named in `given` to `threads` (> 0), except that a knob named
// in `capped` keeps a smaller count (> 0) it already has. Returns the knobs set.
std::vector<std::string> apply_slot_threads(speak::SpeakConfig &cfg, int threads, const std::vector<std::string> &given,
                                            const std::vector<std::string> &capped = {});
// CPUs this process may run on (its affinity mask), at least 1.
int usable_cpus();

}  // namespace rtf::serve
