#include "profile/trace.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace rtf::prof {

namespace {
constexpr int kPid = 1;
}

nlohmann::json chrome_trace(const RunRecord &run, const Starvation *playback) {
    using nlohmann::json;
    auto us = [&](double ms) { return (ms - run.t0_ms) * 1000.0; };
    json ev = json::array();
    ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", kPid}, {"tid", 0},
                  {"args", {{"name", "rtf pipeline"}}}});
    const int n_stages = static_cast<int>(run.stages.size());
    for (int s = 0; s < n_stages; ++s) {
        const auto &st = run.stages[static_cast<size_t>(s)];
        const int tid = s + 1;
        ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", kPid}, {"tid", tid},
                      {"args", {{"name", st.name}}}});
        ev.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", kPid}, {"tid", tid},
                      {"args", {{"sort_index", tid}}}});
        // Values without a start time go into their event's args.
        std::vector<json> extra(st.events.size(), json::object());
        for (const auto &x : st.substages) {
            const std::string &name = st.substage_names.at(static_cast<size_t>(x.name));
            if (x.start_ms >= 0) {
                ev.push_back({{"name", name}, {"cat", "substage"}, {"ph", "X"}, {"pid", kPid}, {"tid", tid},
                              {"ts", us(x.start_ms)}, {"dur", x.value * 1000.0}});
            } else if (x.event >= 0 && static_cast<size_t>(x.event) < extra.size()) {
                extra[static_cast<size_t>(x.event)][name] = x.value;
            }
        }
        for (size_t i = 0; i < st.events.size(); ++i) {
            const auto &e = st.events[i];
            json args = extra[i];
            args["in_seq"] = e.in_seq;
            args["out_seq"] = e.out_seq;
            if (e.tail_ms > 0) args["tail_ms"] = e.tail_ms;
            std::string name = st.name + (e.out_seq >= 0 ? " #" + std::to_string(e.out_seq)
                                                          : (e.in_seq >= 0 ? " in#" + std::to_string(e.in_seq)
                                                                           : std::string(" flush")));
            ev.push_back({{"name", name}, {"cat", "stage"}, {"ph", "X"}, {"pid", kPid}, {"tid", tid},
                          {"ts", us(e.start_ms)}, {"dur", (e.end_ms - e.start_ms) * 1000.0}, {"args", args}});
        }
    }
    if (playback && !run.chunks.empty()) {
        const int tid = n_stages + 1;
        ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", kPid}, {"tid", tid},
                      {"args", {{"name", "playback"}}}});
        ev.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", kPid}, {"tid", tid},
                      {"args", {{"sort_index", tid}}}});
        // Replays the simulation to place each chunk (playback.h's rule). The simulation's
        // times are from the run's request (metrics.h), the record's on its clock.
        auto rel_us = [](double ms) { return ms * 1000.0; };
        double play = playback->playback_start_ms;
        size_t g = 0;
        for (size_t i = 0; i < run.chunks.size(); ++i) {
            const auto &c = run.chunks[i];
            if (g < playback->gaps.size() && playback->gaps[g].chunk == static_cast<int>(i)) {
                const auto &gap = playback->gaps[g++];
                ev.push_back({{"name", "starved"}, {"cat", "playback"}, {"ph", "X"}, {"pid", kPid}, {"tid", tid},
                              {"ts", rel_us(gap.start_ms)}, {"dur", gap.length_ms * 1000.0},
                              {"args", {{"before_chunk", gap.chunk}}}});
                play = c.arrival_ms - run.t0_ms;
            }
            ev.push_back({{"name", "chunk " + std::to_string(c.index)}, {"cat", "playback"}, {"ph", "X"},
                          {"pid", kPid}, {"tid", tid}, {"ts", rel_us(play)}, {"dur", c.duration_ms * 1000.0},
                          {"args", {{"arrival_ms", c.arrival_ms - run.t0_ms}}}});
            play += c.duration_ms;
        }
    }
    for (const auto &q : run.queues) {
        std::string name = "queue " + q.name + " (" + q.from + "->" + q.to + ")";
        for (const auto &[t, d] : q.depth)
            ev.push_back({{"name", name}, {"ph", "C"}, {"pid", kPid}, {"ts", us(t)}, {"args", {{"depth", d}}}});
    }
    return {{"traceEvents", ev}, {"displayTimeUnit", "ms"}};
}

void write_trace_file(const nlohmann::json &trace, const std::string &path) {
    std::ofstream f(path);
    if (!f) throw_setup("cannot write trace file '" + path + "'");
    f << trace.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    f.close();
    if (!f) throw_setup("writing trace file '" + path + "' failed");
}

}  // namespace rtf::prof
