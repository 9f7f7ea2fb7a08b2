#include "serve/serve-metrics.h"

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

namespace rtf::serve {

namespace {

std::string num(double v) {
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    if (std::isnan(v)) return "NaN";
    std::ostringstream o;
    o.precision(10);
    o << v;
    return o.str();
}

void help(std::ostringstream &o, const std::string &name, const std::string &type, const std::string &text) {
    o << "# HELP " << name << ' ' << text << "\n# TYPE " << name << ' ' << type << '\n';
}

}  // namespace

std::string render_batch_metrics(bool enabled, const nlohmann::json &stats) {
    std::ostringstream o;
    help(o, "rtf_batch_enabled", "gauge", "1 when the streams' LLM/TTS decode steps are batched (--batch on)");
    o << "rtf_batch_enabled " << (enabled ? 1 : 0) << '\n';
    if (!enabled) return o.str();
    help(o, "rtf_batch_decodes_total", "counter", "decode calls of the shared context");
    for (const auto &[stage, s] : stats.items()) o << "rtf_batch_decodes_total{stage=\"" << stage << "\"} " << s.value("decodes", 0) << '\n';
    help(o, "rtf_batch_requests_total", "counter", "stream decode requests served (merged into those calls)");
    for (const auto &[stage, s] : stats.items()) o << "rtf_batch_requests_total{stage=\"" << stage << "\"} " << s.value("requests", 0) << '\n';
    help(o, "rtf_batch_mean_streams", "gauge", "mean streams per decode since start");
    for (const auto &[stage, s] : stats.items())
        o << "rtf_batch_mean_streams{stage=\"" << stage << "\"} " << num(s.value("mean_batch", 0.0)) << '\n';
    help(o, "rtf_batch_step_decodes_total", "counter", "decode steps (one row per stream) by streams merged");
    for (const auto &[stage, s] : stats.items())
        for (const auto &k : s.value("steps", nlohmann::json::array()))
            o << "rtf_batch_step_decodes_total{stage=\"" << stage << "\",streams=\"" << k.value("streams", 0) << "\"} "
              << k.value("count", 0) << '\n';
    help(o, "rtf_batch_step_seconds_total", "counter", "time in those decode steps");
    for (const auto &[stage, s] : stats.items())
        for (const auto &k : s.value("steps", nlohmann::json::array()))
            o << "rtf_batch_step_seconds_total{stage=\"" << stage << "\",streams=\"" << k.value("streams", 0) << "\"} "
              << num(k.value("mean_ms", 0.0) * static_cast<double>(k.value("count", 0)) / 1000.0) << '\n';
    return o.str();
}

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double v) {
    size_t i = 0;
    while (i < bounds_.size() && v > bounds_[i]) ++i;
    ++counts_[i];
    sum_ += v;
    ++count_;
}

std::string Histogram::render(const std::string &name) const {
    std::ostringstream o;
    uint64_t cum = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
        cum += counts_[i];
        o << name << "_bucket{le=\"" << num(bounds_[i]) << "\"} " << cum << '\n';
    }
    cum += counts_.back();
    o << name << "_bucket{le=\"+Inf\"} " << cum << '\n' << name << "_sum " << num(sum_) << '\n' << name << "_count " << count_ << '\n';
    return o.str();
}

ServeMetrics::ServeMetrics()
    : t0_(std::chrono::steady_clock::now()),
      first_audio_s_({0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32}),
      rtf_({0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 4, 8}) {}

void ServeMetrics::request(const std::string &endpoint, int code) {
    std::lock_guard<std::mutex> l(mu_);
    ++requests_[{endpoint, code}];
}

void ServeMetrics::rejected(const std::string &reason) {
    std::lock_guard<std::mutex> l(mu_);
    ++rejected_[reason];
}

void ServeMetrics::set_streams(int active, int queued, int max) {
    std::lock_guard<std::mutex> l(mu_);
    active_ = active;
    queued_ = queued;
    max_ = max;
}

void ServeMetrics::stream_done(const prof::Metrics &m, bool cancelled, bool failed) {
    std::lock_guard<std::mutex> l(mu_);
    if (cancelled) ++cancelled_;
    if (failed) ++errors_;
    audio_s_ += m.audio_ms / 1000.0;
    for (const auto &s : m.stages) stage_busy_s_[s.name] += s.busy_ms / 1000.0;
    // Only complete streams enter the latency figures: a cancelled one says nothing about them.
    if (cancelled || failed || m.n_chunks == 0) return;
    first_audio_s_.observe(m.first_audio_ms / 1000.0);
    rtf_.observe(m.rtf);
    if (m.starvation.count > 0) ++starved_streams_;
    starvation_s_ += m.starvation.total_ms / 1000.0;
}

std::string ServeMetrics::render() const {
    std::lock_guard<std::mutex> l(mu_);
    std::ostringstream o;
    help(o, "rtf_uptime_seconds", "gauge", "Seconds since the server started");
    o << "rtf_uptime_seconds " << num(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count()) << '\n';
    help(o, "rtf_streams_active", "gauge", "Utterances being spoken now");
    o << "rtf_streams_active " << active_ << '\n';
    help(o, "rtf_streams_queued", "gauge", "Requests waiting for a free slot");
    o << "rtf_streams_queued " << queued_ << '\n';
    help(o, "rtf_streams_max", "gauge", "Slots (engine sets) loaded");
    o << "rtf_streams_max " << max_ << '\n';
    help(o, "rtf_requests_total", "counter", "Requests answered, by endpoint and HTTP status");
    for (const auto &[k, n] : requests_) o << "rtf_requests_total{endpoint=\"" << k.first << "\",code=\"" << k.second << "\"} " << n << '\n';
    help(o, "rtf_rejected_total", "counter", "Speech requests refused for capacity (429 queue_full, 503 queue_timeout)");
    for (const char *r : {"queue_full", "queue_timeout"}) {
        auto it = rejected_.find(r);
        o << "rtf_rejected_total{reason=\"" << r << "\"} " << (it == rejected_.end() ? 0 : it->second) << '\n';
    }
    help(o, "rtf_cancelled_total", "counter", "Streams cancelled because the client disconnected or stopped reading");
    o << "rtf_cancelled_total " << cancelled_ << '\n';
    help(o, "rtf_abandoned_total", "counter", "Requests whose client hung up while they waited in the queue");
    {
        auto it = rejected_.find("client_gone");
        o << "rtf_abandoned_total " << (it == rejected_.end() ? 0 : it->second) << '\n';
    }
    help(o, "rtf_stream_errors_total", "counter", "Streams ended by a stage failure");
    o << "rtf_stream_errors_total " << errors_ << '\n';
    help(o, "rtf_audio_seconds_total", "counter", "Seconds of audio streamed");
    o << "rtf_audio_seconds_total " << num(audio_s_) << '\n';
    help(o, "rtf_stage_busy_seconds_total", "counter", "Busy time per pipeline stage");
    for (const auto &[s, v] : stage_busy_s_) o << "rtf_stage_busy_seconds_total{stage=\"" << s << "\"} " << num(v) << '\n';
    help(o, "rtf_starved_streams_total", "counter", "Complete streams whose playback would have stalled after first audio");
    o << "rtf_starved_streams_total " << starved_streams_ << '\n';
    help(o, "rtf_starvation_seconds_total", "counter", "Total playback gap of complete streams");
    o << "rtf_starvation_seconds_total " << num(starvation_s_) << '\n';
    help(o, "rtf_first_audio_seconds", "histogram", "Request start to first audio chunk, complete streams");
    o << first_audio_s_.render("rtf_first_audio_seconds");
    help(o, "rtf_stream_rtf", "histogram", "Real-time factor per complete stream (wall / audio)");
    o << rtf_.render("rtf_stream_rtf");
    return o.str();
}

}  // namespace rtf::serve
