#include "report/json-view.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace rtf::report {

namespace {
const json &null_json() {
    static const json n;
    return n;
}
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

const json &at(const json &j, std::string_view key) {
    if (!j.is_object()) return null_json();
    auto it = j.find(key);
    return it == j.end() ? null_json() : *it;
}

double num(const json &j) { return j.is_number() ? j.get<double>() : kNaN; }
double num(const json &j, std::string_view key) { return num(at(j, key)); }

std::string str(const json &j) {
    if (j.is_string()) return j.get<std::string>();
    if (j.is_number_integer()) return std::to_string(j.get<int64_t>());
    if (j.is_number()) return fmt(j.get<double>(), 6);
    if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
    return "";
}
std::string str(const json &j, std::string_view key) { return str(at(j, key)); }

bool is_nonempty(const json &j) {
    if (j.is_object() || j.is_array()) return !j.empty();
    if (j.is_string()) return !j.get<std::string>().empty();
    return j.is_number() || j.is_boolean();
}

RunView run_view(const json &rr) {
    RunView v;
    v.metrics = at(rr, "metrics");
    v.schedule = str(rr, "schedule");
    const json &run = at(rr, "run");
    double t0 = num(run, "t0_ms");
    if (!std::isfinite(t0)) t0 = 0;
    v.profiled = at(run, "profiled").is_boolean() && at(run, "profiled").get<bool>();
    double end = num(run, "end_ms");
    v.end_ms = std::isfinite(end) ? end - t0 : 0;
    const json &stages = at(run, "stages");
    if (stages.is_array()) {
        for (const auto &s : stages) {
            StageView sv;
            sv.name = str(s, "name");
            sv.device = str(s, "device");
            double nt = num(s, "n_threads");
            sv.n_threads = std::isfinite(nt) ? static_cast<int>(nt) : 1;
            sv.busy_ms = num(s, "busy_ms");
            sv.get_wait_ms = num(s, "get_wait_ms");
            sv.put_wait_ms = num(s, "put_wait_ms");
            sv.rtf_stage = num(v.metrics, "rtf_stage." + sv.name);
            const json &ev = at(s, "events");
            if (ev.is_array()) {
                for (const auto &e : ev) {
                    double a = num(e, "start_ms"), b = num(e, "end_ms");
                    if (std::isfinite(a) && std::isfinite(b)) sv.events.push_back({a - t0, b - t0});
                }
            }
            v.stages.push_back(std::move(sv));
        }
    }
    const json &chunks = at(run, "chunks");
    if (chunks.is_array()) {
        for (const auto &c : chunks) {
            ChunkView cv;
            double idx = num(c, "index");
            cv.index = std::isfinite(idx) ? static_cast<int64_t>(idx) : static_cast<int64_t>(v.chunks.size());
            cv.arrival_ms = num(c, "arrival_ms") - t0;
            cv.duration_ms = num(c, "duration_ms");
            const json &per = at(c, "stages");
            cv.stages.resize(v.stages.size());
            for (size_t s = 0; s < v.stages.size(); ++s) {
                const json &sp = at(per, v.stages[s].name);
                double a = num(sp, "start_ms"), b = num(sp, "end_ms");
                if (std::isfinite(a) && std::isfinite(b)) cv.stages[s] = Span{a - t0, b - t0};
            }
            if (std::isfinite(cv.arrival_ms) && std::isfinite(cv.duration_ms)) v.chunks.push_back(std::move(cv));
        }
    }
    const json &starv = at(v.metrics, "starvation");
    double ps = num(starv, "playback_start_ms");
    v.playback_start_ms = std::isfinite(ps) ? ps - t0 : kNaN;
    const json &gaps = at(starv, "gaps");
    if (gaps.is_array()) {
        for (const auto &g : gaps) {
            GapView gv;
            double c = num(g, "chunk");
            gv.chunk = std::isfinite(c) ? static_cast<int64_t>(c) : -1;
            gv.start_ms = num(g, "start_ms") - t0;
            gv.length_ms = num(g, "length_ms");
            if (std::isfinite(gv.start_ms) && std::isfinite(gv.length_ms)) v.gaps.push_back(gv);
        }
    }
    v.present = !v.chunks.empty() || !v.stages.empty();
    return v;
}

std::vector<double> chunk_rtf(const RunView &v) {
    std::vector<double> r;
    for (size_t i = 0; i < v.chunks.size(); ++i) {
        const auto &c = v.chunks[i];
        double dt = i == 0 ? c.arrival_ms : c.arrival_ms - v.chunks[i - 1].arrival_ms;
        r.push_back(c.duration_ms > 0 ? dt / c.duration_ms : kNaN);
    }
    return r;
}

std::vector<double> cumulative_rtf(const RunView &v) {
    std::vector<double> r;
    double audio = 0;
    for (const auto &c : v.chunks) {
        audio += c.duration_ms;
        r.push_back(audio > 0 ? c.arrival_ms / audio : kNaN);
    }
    return r;
}

}  // namespace rtf::report
