#include "serve/load-gen.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <random>
#include <thread>

#include "core/elapsed.h"
#include "core/error.h"
#include "core/parse.h"
#include "core/format.h"

namespace rtf::serve {

Target parse_url(const std::string &url) {
    const std::string scheme = "http://";
    if (url.rfind(scheme, 0) != 0) throw_usage("--url: '" + url + "' must start with http:// (e.g. http://127.0.0.1:8080)");
    std::string rest = url.substr(scheme.size());
    if (auto slash = rest.find('/'); slash != std::string::npos) {
        if (rest.substr(slash) != "/") throw_usage("--url: give scheme, host and port only; the endpoint is --path");
        rest = rest.substr(0, slash);
    }
    Target t;
    if (auto colon = rest.rfind(':'); colon != std::string::npos) {
        t.host = rest.substr(0, colon);
        t.port = static_cast<int>(parse_int(rest.substr(colon + 1), "--url port", 1, 65535));
    } else {
        t.host = rest;
    }
    if (t.host.empty()) throw_usage("--url: no host in '" + url + "'");
    return t;
}

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
constexpr double kSampleRate = 24000;  // the served PCM (server.h)

std::string request_body(const LoadConfig &c) {
    if (!c.prompt.empty()) return json{{"prompt", c.prompt}, {"stream_format", "audio"}, {"response_format", "pcm"}}.dump();
    if (c.path == "/v1/speak") return json{{"text", c.input}, {"stream_format", "audio"}, {"response_format", "pcm"}}.dump();
    return json{{"model", "rtf"}, {"input", c.input}, {"response_format", "pcm"}, {"stream_format", "audio"}}.dump();
}

StreamOutcome one_request(const Target &t, const LoadConfig &c, const std::string &body, int client, Clock::time_point run_t0) {
    StreamOutcome o;
    o.client = client;
    httplib::Client cli(t.host, t.port);
    cli.set_connection_timeout(10);
    cli.set_read_timeout(std::chrono::duration<double>(c.timeout_s));
    cli.set_write_timeout(10);
    cli.set_keep_alive(false);
    httplib::Request req;
    req.method = "POST";
    req.path = c.path;
    req.body = body;
    req.set_header("Content-Type", "application/json");
    std::vector<double> arrival, duration;
    std::string err_body;
    int64_t bytes = 0;
    const auto t_sent = Clock::now();
    o.t_sent_ms = std::chrono::duration<double, std::milli>(t_sent - run_t0).count();
    req.response_handler = [&](const httplib::Response &res) {
        o.status = res.status;
        return true;
    };
    req.content_receiver = [&](const char *data, size_t n, uint64_t, uint64_t) {
        const double now = ms_since(t_sent);
        if (o.status != 200) {
            if (err_body.size() < 4096) err_body.append(data, std::min<size_t>(n, 4096 - err_body.size()));
            return true;
        }
        // whole samples only: a block may end inside one (TCP splits anywhere)
        const int64_t before = bytes / 2;
        bytes += static_cast<int64_t>(n);
        const int64_t samples = bytes / 2 - before;
        if (samples > 0) {
            if (o.first_audio_ms < 0) o.first_audio_ms = now;
            arrival.push_back(now);
            duration.push_back(1000.0 * static_cast<double>(samples) / kSampleRate);
        }
        return true;
    };
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    const bool ok = cli.send(req, res, err);
    o.end_ms = ms_since(t_sent);
    o.audio_s = static_cast<double>(bytes / 2) / kSampleRate;
    if (!ok) {
        o.error = "transport: " + httplib::to_string(err);
    } else if (o.status != 200) {
        try {
            o.error = json::parse(err_body).at("error").at("message").get<std::string>();
        } catch (...) {
            o.error = err_body.substr(0, 200);
        }
    }
    o.complete = ok && o.status == 200 && bytes > 0;
    if (!arrival.empty()) {
        o.starvation = prof::simulate_playback(arrival, duration, c.startup_buffer_ms);
        o.gapless_start_ms = prof::gapless_start_ms(arrival, duration);
        o.rtf = o.audio_s > 0 ? (arrival.back() / 1000.0) / o.audio_s : 0;
    }
    return o;
}

json outcome_json(const StreamOutcome &o) {
    json j = {{"client", o.client},       {"t_sent_ms", o.t_sent_ms},   {"status", o.status},
              {"complete", o.complete},   {"real_time", o.real_time()}, {"first_audio_ms", prof::json_number(o.first_audio_ms)},
              {"gapless_start_ms", o.gapless_start_ms >= 0 ? json(o.gapless_start_ms) : json(nullptr)},
              {"end_ms", o.end_ms},       {"audio_s", o.audio_s},       {"rtf", o.rtf},
              {"starvation", {{"count", o.starvation.count}, {"total_ms", o.starvation.total_ms}}}};
    if (!o.error.empty()) j["error"] = o.error;
    return j;
}

}  // namespace

void LoadConfig::validate() const {
    parse_url(url);
    if (path != "/v1/audio/speech" && path != "/v1/speak") throw_usage("--path: must be /v1/audio/speech or /v1/speak");
    if (input.empty()) throw_usage("--input: must not be empty");
    if (!prompt.empty() && path != "/v1/speak") throw_usage("--prompt: needs --path /v1/speak (the OpenAI endpoint takes text only)");
    if (streams < 0 || streams > 1024) throw_usage("--streams: must be in [0, 1024]");
    if (streams == 0 && !(rate > 0 && rate <= 1000)) throw_usage("--rate: give requests per second in (0, 1000], or --streams N");
    if (streams > 0 && rate > 0) throw_usage("--streams and --rate exclude each other (closed or open loop)");
    if (!(duration_s > 0 && duration_s <= 86400)) throw_usage("--duration: must be in (0 s, 24 h]");
    if (requests < 0) throw_usage("--requests: must be >= 0");
    if (!(startup_buffer_ms >= 0 && startup_buffer_ms <= 60000)) throw_usage("--startup-buffer-ms: must be in [0, 60000]");
    if (!(timeout_s > 0 && timeout_s <= 3600)) throw_usage("--timeout: must be in (0, 3600] s");
    if (max_in_flight < 1) throw_usage("--max-in-flight: must be >= 1");
}

json LoadConfig::to_json() const {
    return {{"url", url},          {"path", path},         {"input", input}, {"prompt", prompt},
            {"streams", streams},  {"rate", rate},         {"duration_s", duration_s},
            {"requests", requests}, {"startup_buffer_ms", startup_buffer_ms},
            {"timeout_s", timeout_s}, {"max_in_flight", max_in_flight}, {"seed", seed},
            {"mode", streams > 0 ? "closed_loop" : "poisson"}};
}

void summarize(LoadResult &r) {
    std::vector<double> fa, gs, rtf;
    r.n = static_cast<int64_t>(r.streams.size());
    r.n_complete = r.n_refused = r.n_errors = r.n_real_time = 0;
    double audio = 0;
    for (const auto &s : r.streams) {
        audio += s.audio_s;
        if (s.status == 429 || s.status == 503) ++r.n_refused;
        else if (!s.complete) ++r.n_errors;
        if (!s.complete) continue;
        ++r.n_complete;
        if (s.real_time()) ++r.n_real_time;
        fa.push_back(s.first_audio_ms);
        gs.push_back(s.gapless_start_ms);
        rtf.push_back(s.rtf);
    }
    r.first_audio_ms = prof::summarize(fa);
    r.gapless_start_ms = prof::summarize(gs);
    r.rtf = prof::summarize(rtf);
    r.real_time_share = r.n_complete > 0 ? static_cast<double>(r.n_real_time) / r.n_complete : 0;
    r.audio_s_per_wall_s = r.wall_s > 0 ? audio / r.wall_s : 0;
}

json LoadResult::to_json() const {
    json streams_j = json::array();
    for (const auto &s : streams) streams_j.push_back(outcome_json(s));
    return {{"schema", "rtfkit.load/1"},
            {"kind", "load"},
            {"config", config.to_json()},
            {"wall_s", wall_s},
            {"summary",
             {{"requests", n},
              {"complete", n_complete},
              {"refused", n_refused},
              {"errors", n_errors},
              {"not_sent", not_sent},
              {"real_time", n_real_time},
              {"real_time_share", real_time_share},
              {"first_audio_ms", prof::to_json(first_audio_ms)},
              {"gapless_start_ms", prof::to_json(gapless_start_ms)},
              {"rtf", prof::to_json(rtf)},
              {"audio_s_per_wall_s", audio_s_per_wall_s}}},
            {"streams", streams_j}};
}

LoadResult run_load(const LoadConfig &cfg, const LoadProgress &progress) {
    cfg.validate();
    const Target t = parse_url(cfg.url);
    const std::string body = request_body(cfg);
    LoadResult r;
    r.config = cfg;
    std::mutex mu;
    const auto t0 = Clock::now();
    auto record = [&](StreamOutcome o) {
        std::lock_guard<std::mutex> l(mu);
        if (progress) {
            progress("stream " + std::to_string(r.streams.size() + 1) + " (client " + std::to_string(o.client) + "): " +
                     (o.complete ? "200, first audio " + fmt(o.first_audio_ms, 0) + " ms, rtf " + fmt(o.rtf, 3) +
                                       (o.starvation.count ? ", starved " + std::to_string(o.starvation.count) + "x" : "")
                                 : "status " + std::to_string(o.status) + " " + o.error));
        }
        r.streams.push_back(std::move(o));
    };
    const auto deadline = t0 + std::chrono::duration<double>(cfg.duration_s);
    std::atomic<int> issued{0};
    auto take_request = [&] {
        if (Clock::now() >= deadline) return false;
        if (cfg.requests > 0 && issued.fetch_add(1) >= cfg.requests) return false;
        return true;
    };
    std::vector<std::thread> threads;
    if (cfg.streams > 0) {
        for (int c = 0; c < cfg.streams; ++c) {
            threads.emplace_back([&, c] {
                while (take_request()) record(one_request(t, cfg, body, c, t0));
            });
        }
    } else {
        std::mt19937_64 rng(cfg.seed);
        std::exponential_distribution<double> gap(cfg.rate);
        std::atomic<int> in_flight{0};
        double next_s = 0;
        int client = 0;
        while (true) {
            next_s += gap(rng);
            const auto at = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(next_s));
            if (at >= deadline) break;
            std::this_thread::sleep_until(at);  // absolute deadlines: no drift
            if (!take_request()) break;
            if (in_flight.load() >= cfg.max_in_flight) {
                ++r.not_sent;
                continue;
            }
            ++in_flight;
            threads.emplace_back([&, c = client++] {
                record(one_request(t, cfg, body, c, t0));
                --in_flight;
            });
        }
    }
    for (auto &th : threads) th.join();
    r.wall_s = ms_since(t0) / 1000.0;
    summarize(r);
    return r;
}

bool meets(const LoadResult &r, double target_first_audio_ms, double min_real_time_share) {
    return r.n_complete > 0 && r.n_errors == 0 && r.n_refused == 0 && r.first_audio_ms.p95 <= target_first_audio_ms &&
           r.real_time_share >= min_real_time_share;
}

json CapacityResult::to_json() const {
    json levels_j = json::array();
    for (const auto &l : levels) {
        json j = l.to_json();
        j["meets"] = meets(l, target_first_audio_ms, min_real_time_share);
        levels_j.push_back(std::move(j));
    }
    return {{"schema", "rtfkit.load/1"},
            {"kind", "capacity"},
            {"target_first_audio_ms", target_first_audio_ms},
            {"min_real_time_share", min_real_time_share},
            {"capacity", capacity},
            {"levels", levels_j}};
}

CapacityResult find_capacity(LoadConfig cfg, double target_first_audio_ms, int max_streams, double min_real_time_share,
                             const LoadProgress &progress) {
    if (max_streams < 1) throw_usage("--max-concurrency: must be >= 1");
    if (!(target_first_audio_ms > 0)) throw_usage("--target-first-audio-ms: must be > 0");
    CapacityResult c;
    c.target_first_audio_ms = target_first_audio_ms;
    c.min_real_time_share = min_real_time_share;
    const int per_stream = cfg.requests;  // --requests is per client at each level
    auto level = [&](int n) {
        cfg.streams = n;
        cfg.rate = 0;
        cfg.requests = per_stream > 0 ? per_stream * n : 0;
        if (progress) progress("capacity: " + std::to_string(n) + " concurrent stream(s)");
        c.levels.push_back(run_load(cfg, progress));
        const auto &l = c.levels.back();
        const bool ok = meets(l, target_first_audio_ms, min_real_time_share);
        if (progress)
            progress("capacity: " + std::to_string(n) + " -> " + (ok ? "meets" : "misses") + " (p95 first audio " +
                     fmt(l.first_audio_ms.p95, 0) + " ms, real time " + fmt(100 * l.real_time_share, 1) + " %)");
        return ok;
    };
    int lo = 0, hi = 0;  // lo meets (0 = none yet), hi misses (0 = none yet)
    for (int n = 1; n <= max_streams; n *= 2) {
        if (level(n)) {
            lo = n;
        } else {
            hi = n;
            break;
        }
        if (n * 2 > max_streams && n < max_streams) {
            if (level(max_streams)) lo = max_streams;
            else hi = max_streams;
            break;
        }
    }
    if (hi == 0) hi = max_streams + 1;
    while (lo > 0 && hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        if (level(mid)) lo = mid;
        else hi = mid;
    }
    c.capacity = lo;
    return c;
}

}  // namespace rtf::serve
