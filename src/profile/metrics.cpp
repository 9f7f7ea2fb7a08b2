#include "profile/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include "core/robust-stats.h"

namespace rtf::prof {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}

void rebase(RunRecord &r) {
    const double t0 = r.t0_ms;
    if (t0 == 0) return;
    for (auto &s : r.stages) {
        for (auto &e : s.events) {
            e.start_ms -= t0;
            e.end_ms -= t0;
        }
        for (auto &x : s.substages)
            if (x.start_ms >= 0) x.start_ms = std::max(0.0, x.start_ms - t0);
    }
    for (auto &q : r.queues)
        for (auto &d : q.depth) d.first -= t0;
    for (auto &c : r.chunks) c.arrival_ms -= t0;
    r.end_ms -= t0;
    r.clock_origin_ms += t0;
    r.t0_ms = 0;
}

Metrics compute_metrics(const RunRecord &run, double jitter_ms) {
    Metrics m;
    m.n_chunks = static_cast<int64_t>(run.chunks.size());
    m.wall_ms = run.end_ms - run.t0_ms;
    std::vector<double> arrival, duration;
    for (const auto &c : run.chunks) {
        arrival.push_back(c.arrival_ms - run.t0_ms);  // the run's own origin, also for playback
        duration.push_back(c.duration_ms);
        m.audio_ms += c.duration_ms;
    }
    const bool have_audio = m.n_chunks > 0 && m.audio_ms > 0;
    if (have_audio) {
        m.rtf = arrival.back() / m.audio_ms;
        m.first_audio_ms = arrival.front();
        m.xrt = m.rtf > 0 ? 1.0 / m.rtf : kNaN;
        std::vector<double> steady;
        for (size_t i = 1; i < arrival.size(); ++i)
            if (duration[i] > 0) steady.push_back((arrival[i] - arrival[i - 1]) / duration[i]);
        m.rtf_steady = median_of(steady);  // NaN when empty
        m.starvation = simulate_playback(arrival, duration, jitter_ms);
        m.gapless_start_ms = gapless_start_ms(arrival, duration);
    } else {
        m.rtf = m.rtf_steady = m.xrt = m.gapless_start_ms = kNaN;
        m.first_audio_ms = m.n_chunks > 0 ? arrival.front() : kNaN;
        m.starvation.jitter_ms = jitter_ms;
    }

    std::map<std::string, std::vector<double>> sub;  // ordered: stable JSON
    double max_stage = 0, sum_stage = 0;
    for (const auto &s : run.stages) {
        StageMetrics sm;
        sm.name = s.name;
        sm.busy_ms = s.busy_ms;
        sm.rtf_stage = have_audio ? s.busy_ms / m.audio_ms : kNaN;
        std::vector<double> items;
        items.reserve(s.events.size());
        for (const auto &e : s.events) items.push_back(e.end_ms - e.start_ms + e.tail_ms);
        sm.item_ms = summarize(items);
        max_stage = std::max(max_stage, sm.rtf_stage);
        sum_stage += sm.rtf_stage;
        m.stages.push_back(sm);
        for (const auto &x : s.substages) sub[s.substage_names.at(static_cast<size_t>(x.name))].push_back(x.value);
    }
    for (auto &[name, values] : sub) m.substages.emplace_back(name, summarize(values));
    for (const auto &q : run.queues) m.queue_wait.emplace_back(q.name, summarize(q.wait_ms));
    m.bound_overlap = have_audio ? max_stage : kNaN;
    m.bound_serial = have_audio ? sum_stage : kNaN;
    m.pipeline_efficiency = have_audio && m.rtf > 0 ? m.bound_overlap / m.rtf : kNaN;
    return m;
}

nlohmann::json to_json(const Metrics &m) {
    nlohmann::json j;
    j["n_chunks"] = m.n_chunks;
    j["audio_ms"] = m.audio_ms;
    j["wall_ms"] = m.wall_ms;
    j["rtf"] = json_number(m.rtf);
    j["rtf_steady"] = json_number(m.rtf_steady);
    for (const auto &s : m.stages) j["rtf_stage." + s.name] = json_number(s.rtf_stage);
    j["first_audio_ms"] = json_number(m.first_audio_ms);
    j["gapless_start_ms"] = json_number(m.gapless_start_ms);
    j["xrt"] = json_number(m.xrt);
    j["starvation"] = to_json(m.starvation);
    for (const auto &s : m.stages) {
        auto sj = to_json(s.item_ms);
        sj["busy_ms"] = s.busy_ms;
        j[s.name + ".item_ms"] = sj;
    }
    for (const auto &[name, s] : m.substages) j[name] = to_json(s);
    for (const auto &[name, s] : m.queue_wait) j["queue_wait." + name] = to_json(s);
    j["bound_overlap"] = json_number(m.bound_overlap);
    j["bound_serial"] = json_number(m.bound_serial);
    j["pipeline_efficiency"] = json_number(m.pipeline_efficiency);
    return j;
}

nlohmann::json to_json(const RunRecord &r) {
    using nlohmann::json;
    json stages = json::array();
    for (const auto &s : r.stages) {
        json events = json::array();
        for (const auto &e : s.events)
            events.push_back({{"start_ms", e.start_ms}, {"end_ms", e.end_ms}, {"in_seq", e.in_seq},
                              {"out_seq", e.out_seq}, {"tail_ms", e.tail_ms}});
        json subs = json::array();
        for (const auto &x : s.substages)
            subs.push_back({{"name", s.substage_names.at(static_cast<size_t>(x.name))},
                            {"start_ms", x.start_ms < 0 ? json(nullptr) : json(x.start_ms)},
                            {"value", x.value},
                            {"event", x.event}});
        stages.push_back({{"name", s.name},
                          {"n_threads", s.n_threads},
                          {"cpus_requested", s.cpus_requested},
                          {"numa_node", s.numa_node},
                          {"device", s.device},
                          {"cpus_bound", s.cpus_bound},
                          {"busy_ms", s.busy_ms},
                          {"get_wait_ms", s.get_wait_ms},
                          {"put_wait_ms", s.put_wait_ms},
                          {"n_in", s.n_in},
                          {"n_out", s.n_out},
                          {"events", events},
                          {"substages", subs}});
    }
    json queues = json::array();
    for (const auto &q : r.queues) {
        json depth = json::array();
        for (const auto &[t, d] : q.depth) depth.push_back({t, d});
        queues.push_back({{"name", q.name},
                          {"from", q.from},
                          {"to", q.to},
                          {"capacity", q.capacity},
                          {"max_depth", q.max_depth},
                          {"n_items", q.n_items},
                          {"wait_ms", q.wait_ms},
                          {"depth", depth}});
    }
    json chunks = json::array();
    for (const auto &c : r.chunks) {
        json per_stage = json::object();
        for (size_t s = 0; s < c.events.size() && s < r.stages.size(); ++s) {
            int e = c.events[s];
            if (e < 0 || static_cast<size_t>(e) >= r.stages[s].events.size()) continue;
            const auto &ev = r.stages[s].events[static_cast<size_t>(e)];
            per_stage[r.stages[s].name] = {{"start_ms", ev.start_ms}, {"end_ms", ev.end_ms}};
        }
        chunks.push_back({{"index", c.index},
                          {"arrival_ms", c.arrival_ms},
                          {"duration_ms", c.duration_ms},
                          {"stages", per_stage}});
    }
    return {{"t0_ms", r.t0_ms}, {"clock_origin_ms", r.clock_origin_ms}, {"end_ms", r.end_ms}, {"profiled", r.profiled},
            {"stages", stages}, {"queues", queues}, {"chunks", chunks}};
}

}  // namespace rtf::prof
