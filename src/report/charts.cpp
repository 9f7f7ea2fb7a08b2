#include "report/charts.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/robust-stats.h"
#include "report/svg.h"

namespace rtf::report {

namespace {

constexpr double kW = 1040;  // chart width, px (the page is ~1100 px wide)
const char *kRed = "#d62728";

double finite_max(const std::vector<double> &v, double fallback) {
    double m = -std::numeric_limits<double>::infinity();
    for (double x : v)
        if (std::isfinite(x)) m = std::max(m, x);
    return std::isfinite(m) ? m : fallback;
}

std::string empty_chart(const std::string &label, const std::string &why) {
    Svg s(kW, 60, label);
    s.rect(0, 0, kW, 60, "#fafafa");
    s.text(kW / 2, 35, why, "middle", 12, "#888");
    return s.str();
}

// A legend row at y: coloured squares with names.
void legend(Svg &s, double x, double y, const std::vector<std::pair<std::string, std::string>> &items) {
    for (const auto &[name, color] : items) {
        s.rect(x, y - 9, 10, 10, color);
        s.text(x + 14, y, name, "start", 11);
        x += 24 + 7.0 * static_cast<double>(name.size());
    }
}

std::string stage_tip(const std::string &stage, int64_t chunk, const Span &sp) {
    return stage + " chunk " + std::to_string(chunk) + ": " + fmt(sp.start_ms, 1) + " - " + fmt(sp.end_ms, 1) +
           " ms (" + fmt(sp.end_ms - sp.start_ms, 1) + " ms)";
}

}  // namespace

std::string chunk_rtf_chart(const RunView &v) {
    const std::string label = "Per-chunk RTF";
    if (v.chunks.empty()) return empty_chart(label, "no per-chunk records in this result");
    auto pace = chunk_rtf(v), cum = cumulative_rtf(v);
    double steady = num(v.metrics, "rtf_steady");
    // Clip the y range so one slow first chunk does not flatten the rest. The series are finite
    // or NaN (zero-length chunks), which percentile() skips; all NaN gives NaN, and max() keeps 1.25.
    std::vector<double> all = pace;
    all.insert(all.end(), cum.begin(), cum.end());
    double top = std::max({1.25, percentile(all, 95) * 1.15, std::isfinite(steady) ? steady * 1.15 : 0.0});
    double vmax = finite_max(all, 1);
    if (vmax < top) top = std::max(1.25, vmax * 1.1);
    const double H = 300, L = 60, R = kW - 20, T = 28, B = H - 44;
    Svg s(kW, H, label);
    size_t n = v.chunks.size();
    Scale x(0, static_cast<double>(std::max<size_t>(n, 2) - 1), L, R), y(0, top, B, T);
    auto yt = nice_ticks(0, top, 6);
    s.y_axis(y, L, R, yt, "RTF (s of compute per s of audio)");
    auto xt = nice_ticks(0, static_cast<double>(std::max<size_t>(n, 2) - 1), static_cast<int>(std::min<size_t>(10, std::max<size_t>(n, 2) - 1)));
    std::vector<double> xti;
    for (double t : xt)
        if (std::fabs(t - std::round(t)) < 1e-9 && t <= static_cast<double>(n - 1) + 1e-9) xti.push_back(std::round(t));
    s.x_axis(x, B, xti, "chunk index");
    // Real time boundary.
    if (1.0 <= top) {
        s.line(L, y(1), R, y(1), kRed, 1.5, "6 4");
        s.text(R - 4, y(1) - 4, "RTF = 1 (real time)", "end", 10, kRed);
    }
    if (std::isfinite(steady) && steady <= top) {
        s.line(L, y(steady), R, y(steady), "#555", 1, "2 3");
        s.text(L + 4, y(steady) - 4, "rtf_steady " + fmt(steady), "start", 10, "#555");
    }
    auto series = [&](const std::vector<double> &vals, const char *color, const char *name) {
        std::vector<std::pair<double, double>> pts;
        for (size_t i = 0; i < vals.size(); ++i)
            pts.emplace_back(x(static_cast<double>(i)), std::isfinite(vals[i]) ? y(std::min(vals[i], top)) : NAN);
        s.polyline(pts, color, n > 200 ? 1.0 : 1.6);
        for (size_t i = 0; i < vals.size(); ++i) {
            if (!std::isfinite(vals[i])) continue;
            bool clipped = vals[i] > top;
            if (n <= 60 || clipped)
                s.circle(x(static_cast<double>(i)), y(std::min(vals[i], top)), clipped ? 3.5 : 2.5, color,
                         std::string(name) + " chunk " + std::to_string(v.chunks[i].index) + ": " + fmt(vals[i]));
            if (clipped)
                s.text(x(static_cast<double>(i)) + 5, y(top) + 11, "\xE2\x96\xB2 " + fmt(vals[i], 2), "start", 9, color);
        }
    };
    series(pace, series_color(0), "pace");
    series(cum, series_color(1), "running rtf");
    legend(s, L, 16,
           {{"pace: chunk i arrived (out[i] - out[i-1]) / dur[i] after the previous; chunk 0 from t0",
             series_color(0)},
            {"running end-to-end RTF", series_color(1)}});
    return s.str();
}

std::string gantt_chart(const RunView &v, size_t max_rows) {
    const std::string label = "Gantt: stages per chunk";
    if (v.chunks.empty()) return empty_chart(label, "no per-chunk records in this result");
    size_t rows = std::min(v.chunks.size(), std::max<size_t>(max_rows, 1));
    bool any_span = false;
    for (size_t i = 0; i < rows; ++i)
        for (const auto &sp : v.chunks[i].stages) any_span = any_span || sp.has_value();
    double row_h = std::clamp(640.0 / static_cast<double>(rows), 1.0, 16.0);
    const double L = 60, R = kW - 20, T = 30;
    double B = T + row_h * static_cast<double>(rows);
    double H = B + 46 + (rows < v.chunks.size() ? 16 : 0);
    Svg s(kW, H, label);
    double tmax = std::max(v.end_ms, finite_max({v.chunks[rows - 1].arrival_ms}, 1));
    for (size_t i = 0; i < rows; ++i)
        for (const auto &sp : v.chunks[i].stages)
            if (sp) tmax = std::max(tmax, sp->end_ms);
    Scale x(0, tmax, L, R);
    auto xt = nice_ticks(0, tmax, 10);
    for (double t : xt) s.line(x(t), T, x(t), B, "#eee", 1);
    s.x_axis(x, B, xt, "time since request, ms");
    std::vector<std::pair<std::string, std::string>> items;
    for (size_t k = 0; k < v.stages.size(); ++k) items.emplace_back(v.stages[k].name, series_color(k));
    items.emplace_back("chunk reaches the sink", "#222");
    legend(s, L, 16, items);
    size_t label_every = std::max<size_t>(1, static_cast<size_t>(std::ceil(14.0 / row_h)));
    double bar_h = row_h > 3 ? row_h - 1.5 : row_h;
    for (size_t i = 0; i < rows; ++i) {
        const auto &c = v.chunks[i];
        double y0 = T + row_h * static_cast<double>(i);
        if (i % label_every == 0) s.text(L - 6, y0 + std::min(row_h, 12.0) - 1, std::to_string(c.index), "end", 9, "#666");
        for (size_t k = 0; k < c.stages.size() && k < v.stages.size(); ++k) {
            if (!c.stages[k]) continue;
            const auto &sp = *c.stages[k];
            s.rect(x(sp.start_ms), y0, std::max(0.8, x(sp.end_ms) - x(sp.start_ms)), bar_h, series_color(k),
                   stage_tip(v.stages[k].name, c.index, sp));
        }
        s.rect(x(c.arrival_ms) - 0.75, y0, 1.5, bar_h, "#222",
               "chunk " + std::to_string(c.index) + " reached the sink at " + fmt(c.arrival_ms, 1) + " ms, " +
                   fmt(c.duration_ms, 0) + " ms of audio");
    }
    if (!any_span)
        s.text((L + R) / 2, T + 14, "(no per-stage spans: the run was not profiled; sink arrivals only)", "middle", 11,
               "#888");
    if (rows < v.chunks.size())
        s.text(L, H - 4, "showing the first " + std::to_string(rows) + " of " + std::to_string(v.chunks.size()) + " chunks",
               "start", 10, "#888");
    s.text(12, T - 4, "chunk", "start", 9, "#666");
    return s.str();
}

std::string lanes_chart(const RunView &v) {
    const std::string label = "Stage lanes and playback";
    if (v.stages.empty() && v.chunks.empty()) return empty_chart(label, "no run record in this result");
    size_t lanes = v.stages.size() + (v.chunks.empty() ? 0 : 1);
    const double L = 90, R = kW - 20, T = 30, lane_h = 26;
    double B = T + lane_h * static_cast<double>(lanes);
    Svg s(kW, B + 44, label);
    double tmax = std::max(1.0, v.end_ms);
    for (const auto &st : v.stages)
        for (const auto &e : st.events) tmax = std::max(tmax, e.end_ms);
    double play_t = std::isfinite(v.playback_start_ms) ? v.playback_start_ms : (v.chunks.empty() ? 0 : v.chunks[0].arrival_ms);
    // Playback intervals: chunk i plays from max(arrival, end of chunk i-1) (playback.h).
    std::vector<Span> play;
    for (size_t i = 0; i < v.chunks.size(); ++i) {
        double st = i == 0 ? std::max(play_t, v.chunks[0].arrival_ms) : std::max(v.chunks[i].arrival_ms, play.back().end_ms);
        play.push_back({st, st + v.chunks[i].duration_ms});
    }
    if (!play.empty()) tmax = std::max(tmax, play.back().end_ms);
    Scale x(0, tmax, L, R);
    auto xt = nice_ticks(0, tmax, 10);
    for (double t : xt) s.line(x(t), T, x(t), B, "#eee", 1);
    s.x_axis(x, B, xt, "time since request, ms");
    for (size_t k = 0; k < v.stages.size(); ++k) {
        const auto &st = v.stages[k];
        double y0 = T + lane_h * static_cast<double>(k);
        s.text(L - 6, y0 + 16, st.name, "end", 11);
        s.rect(L, y0 + 3, R - L, lane_h - 6, "#f6f6f6");
        for (const auto &e : st.events)
            s.rect(x(e.start_ms), y0 + 3, std::max(0.6, x(e.end_ms) - x(e.start_ms)), lane_h - 6, series_color(k),
                   st.name + ": " + fmt(e.start_ms, 1) + " - " + fmt(e.end_ms, 1) + " ms");
        if (st.events.empty())
            s.text(L + 6, y0 + 17, "no work segments recorded (profiling off)", "start", 10, "#888");
    }
    if (!v.chunks.empty()) {
        double y0 = T + lane_h * static_cast<double>(v.stages.size());
        s.text(L - 6, y0 + 16, "playback", "end", 11);
        for (size_t i = 0; i < play.size(); ++i)
            s.rect(x(play[i].start_ms), y0 + 3, std::max(0.6, x(play[i].end_ms) - x(play[i].start_ms)), lane_h - 6,
                   i % 2 ? "#9ecf98" : "#7fbf77", "chunk " + std::to_string(v.chunks[i].index) + " plays " +
                                                     fmt(play[i].start_ms, 1) + " - " + fmt(play[i].end_ms, 1) + " ms");
        for (const auto &g : v.gaps)
            s.rect(x(g.start_ms), y0 + 1, std::max(1.5, x(g.start_ms + g.length_ms) - x(g.start_ms)), lane_h - 2, kRed,
                   "starvation: " + fmt(g.length_ms, 1) + " ms of silence before chunk " + std::to_string(g.chunk));
    }
    std::vector<std::pair<std::string, std::string>> items;
    for (size_t k = 0; k < v.stages.size(); ++k) items.emplace_back(v.stages[k].name + " busy", series_color(k));
    if (!v.chunks.empty()) {
        items.emplace_back("audio playing", "#7fbf77");
        items.emplace_back("starvation gap", kRed);
    }
    legend(s, L, 16, items);
    return s.str();
}

std::string stage_share_chart(const std::vector<ShareRow> &rows, const std::vector<std::string> &order) {
    const std::string label = "Stage shares (rtf_stage)";
    bool any = false;
    double xmax = 1.05;
    for (const auto &r : rows) {
        double sum = 0;
        for (const auto &[n, val] : r.stages)
            if (std::isfinite(val)) {
                sum += val;
                any = true;
            }
        xmax = std::max({xmax, sum * 1.05, std::isfinite(r.rtf) ? r.rtf * 1.05 : 0.0});
    }
    if (rows.empty() || !any) return empty_chart(label, "no per-stage figures in this result");
    const double L = 230, R = kW - 30, T = 30, row_h = 32;
    double B = T + row_h * static_cast<double>(rows.size());
    Svg s(kW, B + 44, label);
    Scale x(0, xmax, L, R);
    auto xt = nice_ticks(0, xmax, 8);
    for (double t : xt) s.line(x(t), T, x(t), B, "#eee", 1);
    s.x_axis(x, B, xt, "seconds of stage work per second of audio (RTF)");
    auto color_of = [&](const std::string &stage) {
        auto it = std::find(order.begin(), order.end(), stage);
        return series_color(it == order.end() ? order.size() : static_cast<size_t>(it - order.begin()));
    };
    for (size_t i = 0; i < rows.size(); ++i) {
        const auto &r = rows[i];
        double y0 = T + row_h * static_cast<double>(i), acc = 0, biggest = 0;
        std::string label_text = r.label.size() > 30 ? r.label.substr(0, 29) + "\xE2\x80\xA6" : r.label;
        s.text(L - 6, y0 + 14, label_text, "end", 11);
        for (const auto &[stage, val] : r.stages) {
            if (!std::isfinite(val) || val <= 0) continue;
            biggest = std::max(biggest, val);
            double px0 = x(acc), px1 = x(acc + val);
            s.rect(px0, y0 + 5, px1 - px0, row_h - 10, color_of(stage),
                   r.label + ": rtf_stage." + stage + " = " + fmt(val));
            if (px1 - px0 > 60) s.text((px0 + px1) / 2, y0 + 19, stage + " " + fmt(val, 2), "middle", 10, "#fff");
            acc += val;
        }
        s.text(L - 6, y0 + 26, "serial " + fmt(acc, 2) + " \xC2\xB7 overlap " + fmt(biggest, 2) +
                                   (std::isfinite(r.rtf) ? " \xC2\xB7 rtf " + fmt(r.rtf, 2) : ""),
               "end", 9, "#666");
        if (std::isfinite(r.rtf)) {
            s.rect(x(r.rtf) - 1.5, y0 + 1, 3, row_h - 2, "#111", r.label + ": measured rtf = " + fmt(r.rtf));
        }
    }
    s.line(x(1), T - 4, x(1), B, kRed, 1.5, "6 4");
    std::vector<std::pair<std::string, std::string>> items;
    for (size_t k = 0; k < order.size(); ++k) items.emplace_back(order[k], series_color(k));
    items.emplace_back("measured rtf", "#111");
    items.emplace_back("RTF = 1", kRed);
    legend(s, L, 16, items);
    return s.str();
}

std::string leverage_chart(const json &rows) {
    const std::string label = "Leverage: gain = share x reducible";
    if (!rows.is_array() || rows.empty()) return empty_chart(label, "no leverage table in this result");
    double gmax = 0;
    for (const auto &r : rows) gmax = std::max(gmax, std::isfinite(num(r, "gain")) ? num(r, "gain") : 0.0);
    if (gmax <= 0) gmax = 1;
    const double L = 220, R = kW - 260, T = 28, row_h = 26;
    double B = T + row_h * static_cast<double>(rows.size());
    Svg s(kW, B + 44, label);
    Scale x(0, gmax * 1.05, L, R);
    auto xt = nice_ticks(0, gmax * 1.05, 6);
    for (double t : xt) s.line(x(t), T, x(t), B, "#eee", 1);
    s.x_axis(x, B, xt, "gain (RTF that would be removed)");
    size_t i = 0;
    for (const auto &r : rows) {
        double y0 = T + row_h * static_cast<double>(i++);
        double g = num(r, "gain");
        bool known = at(r, "floor_known").is_boolean() && at(r, "floor_known").get<bool>();
        std::string what = str(r, "what");
        s.text(L - 6, y0 + 17, std::to_string(i) + ". " + (what.size() > 28 ? what.substr(0, 27) + "\xE2\x80\xA6" : what),
               "end", 11);
        std::string tip = what + ": share " + fmt(num(r, "share")) + " x reducible " + fmt(num(r, "reducible")) +
                          (known ? "" : " (upper bound: floor unknown)") + " = gain " + fmt(g) + "; " + str(r, "advice");
        if (std::isfinite(g))
            s.rect(L, y0 + 4, std::max(1.0, x(g) - L), row_h - 8, known ? series_color(0) : "#9db3cf", tip,
                   known ? "" : "stroke=\"#4e79a7\" stroke-dasharray=\"3 2\"");
        std::string layer = str(r, "layer_name");
        s.text(R + 8, y0 + 17,
               "gain " + fmt(g) + (known ? "" : " (upper bound)") + (layer.empty() ? "" : " \xC2\xB7 " + layer), "start",
               10, "#444");
    }
    legend(s, L, 16, {{"floor known", series_color(0)}, {"floor unknown: upper bound", "#9db3cf"}});
    return s.str();
}

std::string duty_chart(const std::vector<DeviceSeries> &devices) {
    const std::string label = "Device duty cycle";
    if (devices.empty()) return empty_chart(label, "no device samples in this result");
    const double L = 60, R = kW - 20, lane_h = 130;
    double H = 30 + lane_h * static_cast<double>(devices.size()) + 30;
    Svg s(kW, H, label);
    double t0 = std::numeric_limits<double>::infinity(), t1 = -t0;
    for (const auto &d : devices)
        for (double t : d.t_ms) {
            t0 = std::min(t0, t);
            t1 = std::max(t1, t);
        }
    if (!std::isfinite(t0)) return empty_chart(label, "no device samples in this result");
    Scale x(0, (t1 - t0) / 1000.0, L, R);
    legend(s, L, 16, {{"compute %", series_color(0)}, {"memory traffic %", series_color(1)},
                      {"sample counted active (both above threshold)", "#dfeedd"}});
    for (size_t k = 0; k < devices.size(); ++k) {
        const auto &d = devices[k];
        double T = 30 + lane_h * static_cast<double>(k), B = T + lane_h - 34;
        Scale y(0, 100, B, T + 24);
        for (size_t i = 0; i < d.t_ms.size(); ++i) {
            bool mem_ok = !std::isfinite(d.memory[i]) || d.memory[i] > d.memory_threshold;
            if (std::isfinite(d.compute[i]) && d.compute[i] > d.compute_threshold && mem_ok) {
                double a = x((d.t_ms[i] - t0) / 1000.0);
                double b = i + 1 < d.t_ms.size() ? x((d.t_ms[i + 1] - t0) / 1000.0) : a + 2;
                s.rect(a, T + 24, std::max(1.0, b - a), B - T - 24, "#dfeedd");
            }
        }
        s.y_axis(y, L, R, {0, 50, 100}, "");
        s.text(L, T + 14, d.device + " \xE2\x80\x94 duty cycle " + fmt(d.duty_cycle * 100, 0) + " % of samples active",
               "start", 11, "#222");
        s.line(L, y(d.compute_threshold), R, y(d.compute_threshold), "#999", 1, "2 3");
        std::vector<std::pair<double, double>> pc, pm;
        for (size_t i = 0; i < d.t_ms.size(); ++i) {
            double px = x((d.t_ms[i] - t0) / 1000.0);
            pc.emplace_back(px, std::isfinite(d.compute[i]) ? y(d.compute[i]) : NAN);
            pm.emplace_back(px, std::isfinite(d.memory[i]) ? y(d.memory[i]) : NAN);
        }
        s.polyline(pc, series_color(0), 1.4);
        s.polyline(pm, series_color(1), 1.2);
        auto xt = nice_ticks(0, (t1 - t0) / 1000.0, 10);
        if (k + 1 == devices.size()) s.x_axis(x, B, xt, "time since first sample, s");
        else s.line(L, B, R, B, "#999");
    }
    return s.str();
}

std::string runs_chart(const std::vector<ConfigRuns> &configs, double noise, double target) {
    const std::string label = "RTF per run and config";
    double vmax = 1.05;
    bool any = false;
    for (const auto &c : configs)
        for (const auto &r : c.runs)
            if (std::isfinite(r.rtf)) {
                vmax = std::max(vmax, r.rtf * 1.1);
                any = true;
            }
    if (configs.empty() || !any) return empty_chart(label, "no run reached a result (every run failed)");
    // Zoom on the runs (noise bands must stay visible); the target joins the scale only
    // when it is near them, else a note says where it is.
    vmax = 0;
    for (const auto &c : configs)
        for (const auto &r : c.runs)
            if (std::isfinite(r.rtf)) vmax = std::max(vmax, r.rtf);
    vmax = vmax * 1.15 + (std::isfinite(noise) ? noise : 0);
    bool target_shown = std::isfinite(target) && target <= vmax * 2;
    if (target_shown) vmax = std::max(vmax, target * 1.08);
    const double L = 60, R = kW - 20, T = 28, B = 260;
    double slot = (R - L) / static_cast<double>(configs.size());
    double H = B + 40 + (configs.size() > 6 ? 60 : 20);
    Svg s(kW, H, label);
    Scale y(0, vmax, B, T);
    s.y_axis(y, L, R, nice_ticks(0, vmax, 6), "RTF");
    s.line(L, B, R, B, "#999");
    for (size_t i = 0; i < configs.size(); ++i) {
        const auto &c = configs[i];
        double cx = L + slot * (static_cast<double>(i) + 0.5), half = std::min(60.0, slot * 0.35);
        if (std::isfinite(c.median)) {
            if (std::isfinite(noise) && noise > 0)
                s.rect(cx - half, y(c.median + noise), 2 * half, y(c.median - noise) - y(c.median + noise), "#4e79a7",
                       c.label + ": noise band median +- " + fmt(noise), "fill-opacity=\"0.15\"");
            s.rect(cx - half, y(c.median) - 1.5, 2 * half, 3, "#4e79a7", c.label + ": median rtf " + fmt(c.median));
        }
        size_t m = c.runs.size();
        for (size_t k = 0; k < m; ++k) {
            const auto &r = c.runs[k];
            if (!std::isfinite(r.rtf)) continue;
            double px = cx + (m > 1 ? (static_cast<double>(k) / static_cast<double>(m - 1) - 0.5) * half * 1.4 : 0);
            if (!r.counted) {
                double py = y(r.rtf);
                s.line(px - 4, py - 4, px + 4, py + 4, kRed, 2);
                s.line(px - 4, py + 4, px + 4, py - 4, kRed, 2);
                s.circle(px, py, 6, "transparent", r.note);
            } else {
                s.circle(px, y(r.rtf), 3.5, r.warmup ? "#bbb" : "#222", r.note);
            }
        }
        std::string lab = c.label.size() > 40 ? c.label.substr(0, 39) + "\xE2\x80\xA6" : c.label;
        if (configs.size() > 6)
            s.text(cx, B + 14, lab, "end", 10, "#333",
                   "transform=\"rotate(-30 " + fmt(cx, 1) + " " + fmt(B + 14, 1) + ")\"");
        else
            s.text(cx, B + 16, lab, "middle", 11, "#333");
        if (std::isfinite(c.median)) s.text(cx + half + 4, y(c.median) + 4, fmt(c.median), "start", 10, "#4e79a7");
    }
    if (std::isfinite(target) && !target_shown) {
        s.text(R - 4, T + 4, "target rtf <= " + fmt(target) + " (above this scale)", "end", 10, kRed);
    } else if (std::isfinite(target)) {
        s.line(L, y(target), R, y(target), kRed, 1.5, "6 4");
        s.text(R - 4, y(target) - 4, "target rtf <= " + fmt(target), "end", 10, kRed);
    }
    legend(s, L, 16, {{"measured run", "#222"}, {"warm-up", "#bbb"}, {"not counted (failed run or quality gate)", kRed},
                      {"median and noise band", "#4e79a7"}});
    return s.str();
}

std::string series_chart(const std::vector<SeriesPoint> &points, const std::string &metric) {
    const std::string label = metric + " over the history";
    double lo = INFINITY, hi = -INFINITY;
    for (const auto &p : points)
        if (std::isfinite(p.value)) lo = std::min(lo, p.value), hi = std::max(hi, p.value);
    if (!std::isfinite(lo)) return empty_chart(label, "no result in the history has " + metric);
    const double pad = (hi - lo) * 0.1 + std::abs(hi) * 0.02 + 1e-9;
    lo = std::max(0.0, lo - pad);
    hi += pad;
    const double L = 60, R = kW - 20, T = 20, B = 250;
    Svg s(kW, B + 70, label);
    Scale y(lo, hi, B, T);
    s.y_axis(y, L, R, nice_ticks(lo, hi, 6), metric);
    s.line(L, B, R, B, "#999");
    const size_t n = points.size();
    auto xo = [&](size_t i) { return n == 1 ? (L + R) / 2 : L + 10 + (R - L - 20) * static_cast<double>(i) / static_cast<double>(n - 1); };
    std::vector<std::pair<double, double>> line;
    for (size_t i = 0; i < n; ++i) line.emplace_back(xo(i), std::isfinite(points[i].value) ? y(points[i].value) : NAN);
    s.polyline(line, series_color(0), 1.5);
    const size_t every = std::max<size_t>(1, n / 40);  // at most ~40 axis labels
    for (size_t i = 0; i < n; ++i) {
        if (std::isfinite(points[i].value)) s.circle(xo(i), y(points[i].value), 3.5, series_color(0), points[i].note);
        if (i % every == 0)
            s.text(xo(i), B + 14, points[i].label, "end", 10, "#333",
                   "transform=\"rotate(-40 " + fmt(xo(i), 1) + " " + fmt(B + 14, 1) + ")\"");
    }
    return s.str();
}

}  // namespace rtf::report
