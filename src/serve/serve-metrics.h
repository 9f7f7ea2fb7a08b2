#pragma once
// The server's counters, in the Prometheus text exposition format (version 0.0.4) for
// GET /metrics. Thread-safe: every handler thread records here.
//
//   rtf_streams_active / rtf_streams_queued / rtf_streams_max      gauges
//   rtf_requests_total{endpoint,code}                              counter
//   rtf_rejected_total{reason="queue_full"|"queue_timeout"}        counter (429 / 503)
//   rtf_cancelled_total                                            streams whose client left
//   rtf_abandoned_total                                            queued requests whose client left
//   rtf_stream_errors_total                                        streams a stage failure ended
//   rtf_audio_seconds_total, rtf_stage_busy_seconds_total{stage}   counters
//   rtf_starved_streams_total, rtf_starvation_seconds_total        playback gaps (jitter buffer of the run)
//   rtf_first_audio_seconds, rtf_stream_rtf                        histograms (per finished stream)
//   rtf_uptime_seconds                                             gauge
//   rtf_batch_enabled                                              gauge (1 = --batch on)
//   rtf_batch_decodes_total{stage}, rtf_batch_requests_total{stage}  counters (requests / decodes = mean batch)
//   rtf_batch_mean_streams{stage}                                  gauge, since start
//   rtf_batch_step_decodes_total{stage,streams}, rtf_batch_step_seconds_total{stage,streams}
//                                                                  one-row-per-stream decode steps by batch size
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "profile/metrics.h"

namespace rtf::serve {

// The batch lines above from DecodeBatching::stats_json() ({"llm": BatcherStats, "tts": ...}).
std::string render_batch_metrics(bool enabled, const nlohmann::json &stats);

class Histogram {
public:
    explicit Histogram(std::vector<double> upper_bounds);
    void observe(double v);
    // `name`_bucket{le=...}, _sum, _count lines (cumulative buckets, +Inf last).
    std::string render(const std::string &name) const;

private:
    std::vector<double> bounds_;
    std::vector<uint64_t> counts_;  // per bucket, not cumulative; last = +Inf
    double sum_ = 0;
    uint64_t count_ = 0;
};

class ServeMetrics {
public:
    ServeMetrics();
    void request(const std::string &endpoint, int code);
    void rejected(const std::string &reason);
    void set_streams(int active, int queued, int max);
    // A stream that ran: its metrics (audio, stage busy, first audio, RTF, starvation).
    void stream_done(const prof::Metrics &m, bool cancelled, bool failed);
    std::string render() const;

private:
    mutable std::mutex mu_;
    std::chrono::steady_clock::time_point t0_;
    std::map<std::pair<std::string, int>, uint64_t> requests_;
    std::map<std::string, uint64_t> rejected_;
    std::map<std::string, double> stage_busy_s_;
    int active_ = 0, queued_ = 0, max_ = 0;
    uint64_t cancelled_ = 0, errors_ = 0, starved_streams_ = 0;
    double audio_s_ = 0, starvation_s_ = 0;
    Histogram first_audio_s_, rtf_;
};

}  // namespace rtf::serve
