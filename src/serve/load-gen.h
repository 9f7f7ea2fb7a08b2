#pragma once
// `rtf load`: a load generator for `rtf serve` (or any server of POST /v1/audio/speech),
// in the spirit of MLPerf LoadGen's server scenario: every figure is what a client sees.
//
//   LoadConfig c; c.url = "http://127.0.0.1:8080"; c.streams = 4; c.duration_s = 60;
//   LoadResult r = run_load(c);          // 4 clients, requests back to back, for 60 s
//   c.streams = 0; c.rate = 0.5;         // or: Poisson arrivals, 0.5 requests per second
//
// Per request (a "stream"): first audio = request sent -> first audio byte; the arrival
// time of every received block of PCM (s16le, 24 kHz mono: response_format pcm), from
// which the playback simulation (profile/playback.h, with --startup-buffer-ms) gives the
// stream's starvation; RTF = (last byte - request sent) / audio seconds. A stream is
// "real time" when it completed and playback never starved after its first audio.
// Refusals (429/503) are counted apart: they are the server's planned answer to overload.
//
// find_capacity(): the largest fixed concurrency whose p95 first audio <= a target and
// whose real-time share >= 99 % (doubling, then bisection), each level a run_load().
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/playback.h"
#include "profile/stats.h"

namespace rtf::serve {

// The server a load generator drives: --url http://host:port.
struct Target {
    std::string host;
    int port = 80;
};
// Throws rtf::Error(Usage) naming --url for anything but http://host[:port][/].
Target parse_url(const std::string &url);

struct LoadConfig {
    std::string url = "http://127.0.0.1:8080";  // http://host:port
    std::string path = "/v1/audio/speech";
    std::string input = "Real time means the listener never waits.";
    // Prompt mode: the LLM writes each reply to this prompt (POST /v1/speak {"prompt"}), so its
    // token-by-token decode is part of the load; "" = text mode (`input` spoken as given).
    std::string prompt;
    int streams = 1;            // fixed concurrency (closed loop); 0 = use `rate`
    double rate = 0;            // Poisson arrivals per second (open loop), when streams == 0
    double duration_s = 30;     // no new request after this
    int requests = 0;           // stop after this many requests in total; 0 = duration only
    double startup_buffer_ms = 0;  // playback starts this long after the first audio byte
    double timeout_s = 300;     // per request (connect, read)
    int max_in_flight = 256;    // open loop: more outstanding requests than this are not sent (counted)
    uint64_t seed = 1;          // Poisson arrivals

    void validate() const;      // rtf::Error(Usage) naming the flag
    nlohmann::json to_json() const;
};

struct StreamOutcome {
    int client = 0;
    double t_sent_ms = 0;       // since the run started
    int status = 0;             // HTTP status; 0 = no response (connection failed)
    std::string error;          // transport error or the server's error message
    double first_audio_ms = -1; // request sent -> first audio byte
    double gapless_start_ms = -1; // request sent -> earliest playback start with no gap after it (metrics.h)
    double end_ms = 0;          // request sent -> last byte
    double audio_s = 0;
    double rtf = 0;
    bool complete = false;      // 200 and a complete body
    prof::Starvation starvation;
    bool real_time() const { return complete && starvation.count == 0; }
};

struct LoadResult {
    LoadConfig config;
    std::vector<StreamOutcome> streams;
    double wall_s = 0;
    int64_t not_sent = 0;       // open loop: arrivals dropped at max_in_flight
    // summary
    int64_t n = 0, n_complete = 0, n_refused = 0, n_errors = 0, n_real_time = 0;
    prof::Summary first_audio_ms, gapless_start_ms, rtf;
    double real_time_share = 0;      // of complete streams
    double audio_s_per_wall_s = 0;   // throughput: audio delivered per second of the run

    nlohmann::json to_json() const;
};

using LoadProgress = std::function<void(const std::string &line)>;

// Throws rtf::Error(Usage) for a bad URL/config; per-request failures are outcomes.
LoadResult run_load(const LoadConfig &cfg, const LoadProgress &progress = {});
void summarize(LoadResult &r);

struct CapacityResult {
    double target_first_audio_ms = 0, min_real_time_share = 0.99;
    int capacity = 0;                        // 0 = not even one stream meets the targets
    std::vector<LoadResult> levels;          // in the order run
    nlohmann::json to_json() const;
};
bool meets(const LoadResult &r, double target_first_audio_ms, double min_real_time_share);
CapacityResult find_capacity(LoadConfig cfg, double target_first_audio_ms, int max_streams,
                             double min_real_time_share = 0.99, const LoadProgress &progress = {});

}  // namespace rtf::serve
