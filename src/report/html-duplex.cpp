// The HTML page of an `rtf duplex` result (html-parts.h).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "report/bench-view.h"
#include "report/charts.h"
#include "report/escape.h"
#include "report/html-parts.h"
#include "report/report.h"
#include "report/svg.h"

namespace rtf::report::html {

// An `rtf duplex` result (schema rtfkit.duplex/1): the analyzer's verdict and checks, then the
// session timeline — per frame its push -> done bar (speak / listen / failed), per audio turn
// the chunks' ready times and their playback as the analyzer's [5] plays them (back to back
// from the first chunk + the startup buffer; a red gap where the next chunk was not ready) —
// then the per-stage busy shares and the meta.
namespace {

std::string duplex_timeline(const json &doc) {
    const json &frames = at(doc, "frames"), &chunks = at(doc, "audio_chunks"), &an = at(doc, "analysis");
    const double buffer = num(at(an, "options"), "startup_buffer_ms");
    const double start_buf = std::isfinite(buffer) ? buffer : 0.0;
    double t_max = 1;
    for (const auto &f : frames) t_max = std::max(t_max, num(f, "t_done_ms"));
    // playback per audio turn (chunks with duration > 0), the analyzer's [5] clause by clause
    struct Play { double ready, start, dur; int turn; };
    std::vector<Play> plays;
    std::vector<std::pair<double, double>> gaps;
    int turn = -1;
    double end = 0;
    bool first = true;
    for (const auto &c : chunks) {
        const double ready = num(c, "t_complete_ms"), dur = 1000.0 * num(c, "duration_s");
        const int id = static_cast<int>(num(c, "audio_turn_id"));
        t_max = std::max(t_max, ready);
        if (id != turn) { turn = id; first = true; }
        if (!(dur > 0)) continue;
        if (first) { end = ready + start_buf; first = false; }
        if (ready > end) { gaps.emplace_back(end, ready); end = ready; }
        plays.push_back({ready, end, dur, id});
        end += dur;
        t_max = std::max(t_max, end);
    }
    const double W = 1000, left = 70, right = 20, row = 9;
    const double n_rows = static_cast<double>(frames.size());
    const double audio_top = 30 + n_rows * row + 20;
    const double H = audio_top + 3 * 18 + 40;
    Svg svg(W, H, "duplex session timeline");
    Scale x(0, t_max, left, W - right);
    const auto ticks = nice_ticks(0, t_max);
    for (double t : ticks) svg.line(x(t), 20, x(t), H - 30, "#eee");
    svg.x_axis(x, H - 30, ticks, "session time, ms");
    svg.text(4, 26, "frames", "start", 11, "#333");
    size_t i = 0;
    for (const auto &f : frames) {
        const double y = 30 + static_cast<double>(i++) * row;
        const bool ok = at(f, "ok").is_boolean() && at(f, "ok").get<bool>();
        const bool sp = at(f, "is_speak").is_boolean() && at(f, "is_speak").get<bool>();
        const double t0 = num(f, "t_push_ms"), t1 = num(f, "t_done_ms");
        const std::string tip = "frame " + fmt(num(f, "frame_id"), 0) + ": pushed " + fmt(t0, 1) + " ms, done " + fmt(t1, 1) +
                                " ms (" + (ok ? (sp ? "speak" : "listen") : "FAILED") + ")";
        svg.rect(x(t0), y, std::max(1.0, x(t1) - x(t0)), row - 2, !ok ? "#c62828" : sp ? series_color(0) : "#b0bec5", tip);
        svg.circle(x(t0), y + (row - 2) / 2, 1.5, "#333");
    }
    svg.text(4, audio_top + 12, "audio", "start", 11, "#333");
    for (const auto &c : chunks) {
        const double t = num(c, "t_complete_ms");
        svg.line(x(t), audio_top, x(t), audio_top + 14, series_color(1), 1.5);
    }
    svg.text(4, audio_top + 30, "playback", "start", 11, "#333");
    for (const auto &p : plays)
        svg.rect(x(p.start), audio_top + 20, std::max(1.0, x(p.start + p.dur) - x(p.start)), 14,
                 series_color(2 + static_cast<size_t>(p.turn) % 6),
                 "audio turn " + std::to_string(p.turn) + ": ready " + fmt(p.ready, 1) + " ms, plays " + fmt(p.start, 1) +
                     " .. " + fmt(p.start + p.dur, 1) + " ms");
    for (const auto &g : gaps)
        svg.rect(x(g.first), audio_top + 38, std::max(2.0, x(g.second) - x(g.first)), 10, "#c62828",
                 "playback gap " + fmt(g.second - g.first, 1) + " ms");
    if (!gaps.empty()) svg.text(4, audio_top + 47, "gaps", "start", 11, "#c62828");
    return svg.str();
}

}  // namespace

std::string render_duplex_doc(const json &doc, const std::string &source) {
    const json &an = at(doc, "analysis"), &meta = at(doc, "meta");
    const std::string verdict = str(an, "verdict");
    std::string b = header("duplex", source,
                           e(fmt(num(meta, "stream_interval_ms"), 0)) + " ms interval, decision " + e(str(meta, "decision")) +
                               (str(meta, "speak_frames").empty() ? "" : " (--speak-frames " + e(str(meta, "speak_frames")) + ")"));
    b += "<h2>Verdict</h2><p><span class=\"badge " + std::string(verdict == "pass" ? "ok" : verdict == "fail" ? "miss" : "bad") +
         "\">" + e(verdict.empty() ? "n/a" : verdict) + "</span> " + e(str(an, "summary")) + "</p>";
    if (at(doc, "completed").is_boolean() && !at(doc, "completed").get<bool>())
        b += "<p class=\"fail\">Incomplete run: " + e(str(doc, "error")) + "</p>";
    const json &dl = at(an, "decision_latency_ms"), &fa = at(an, "first_audio_ms"), &rt = at(an, "rtf");
    b += "<div class=\"cards\">" + card(fmt(num(dl, "p95"), 1) + " ms", "decision latency P95") +
         card(fmt(num(fa, "e2e_p95"), 1) + " ms", "first audio P95") + card(fmt(num(rt, "tts_max")), "TTS RTF (worst turn)") +
         card(str(doc, "binding_stage"), "binding stage") + "</div>";
    b += "<h2>Checks</h2><table><tr><th>check</th><th>state</th><th>rule</th></tr>";
    for (const auto &c : at(an, "checks")) {
        const std::string st = str(c, "state");
        b += "<tr><td>" + e(str(c, "id")) + "</td><td class=\"" + (st == "FAIL" ? "fail" : st == "PASS" ? "pass" : "") + "\">" +
             e(st) + "</td><td>" + e(str(c, "rule")) + "</td></tr>";
    }
    b += "</table><h2>Timeline</h2><p class=\"sub\">Per frame a bar from push to done (blue speak, grey listen, red "
         "failed); audio chunks when ready; playback back to back from each turn's first chunk plus the startup buffer, "
         "red where the next chunk was not ready (a gap).</p>" +
         duplex_timeline(doc);
    b += "<h2>Stages</h2><table><tr><th>stage</th><th>busy ms</th><th>share of the session</th></tr>";
    for (const auto &s : at(doc, "stages"))
        b += "<tr><td>" + e(str(s, "name")) + "</td><td class=\"n\">" + e(fmt(num(s, "busy_ms"), 1)) + "</td><td class=\"n\">" +
             e(fmt(100 * num(s, "utilization"), 1)) + " %</td></tr>";
    b += "</table><h2>Turns</h2>" + kv_table(at(an, "turns")) + "<h2>Meta</h2>" + kv_table(meta);
    return page("rtf report: duplex, " + (verdict.empty() ? std::string("n/a") : verdict), b);
}

}  // namespace rtf::report::html
