// The Markdown view of an `rtf load` result (schema rtfkit.load/1, serve/load-gen.h): one
// load run (kind "load": summary + every stream) or a capacity search (kind "capacity":
// one row per concurrency level, then the levels).
#include <sstream>

#include "report/escape.h"
#include "report/json-view.h"
#include "report/report.h"

namespace rtf::report {

namespace {

void summary_rows(std::ostringstream &o, const json &s) {
    const json &fa = at(s, "first_audio_ms"), &rtf = at(s, "rtf");
    o << "| requests | complete | refused | errors | first audio p50 / p95 / p99 ms | stream RTF p50 / p95 | real time | audio s / wall s |\n"
         "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    o << "| " << fmt(num(s, "requests"), 0) << " | " << fmt(num(s, "complete"), 0) << " | " << fmt(num(s, "refused"), 0)
      << " | " << fmt(num(s, "errors"), 0) << " | " << fmt(num(fa, "p50"), 0) << " / " << fmt(num(fa, "p95"), 0) << " / "
      << fmt(num(fa, "p99"), 0) << " | " << fmt(num(rtf, "p50")) << " / " << fmt(num(rtf, "p95")) << " | "
      << fmt(100 * num(s, "real_time_share"), 1) << " % | " << fmt(num(s, "audio_s_per_wall_s")) << " |\n";
}

std::string mode_text(const json &cfg) {
    return str(cfg, "mode") == "poisson" ? "Poisson arrivals, " + fmt(num(cfg, "rate")) + " / s"
                                         : fmt(num(cfg, "streams"), 0) + " concurrent client(s)";
}

}  // namespace

std::string load_markdown(const json &doc) {
    std::ostringstream o;
    auto me = [](const std::string &s) { return md_escape(s); };
    if (str(doc, "kind") == "capacity") {
        o << "## rtfkit load: capacity\n\n**" << fmt(num(doc, "capacity"), 0)
          << "** concurrent stream(s) meet p95 first audio <= " << fmt(num(doc, "target_first_audio_ms"), 0) << " ms and >= "
          << fmt(100 * num(doc, "min_real_time_share"), 1) << " % of streams real time (no refusals, no errors).\n\n";
        o << "| concurrency | meets | requests | first audio p95 ms | stream RTF p50 | real time | audio s / wall s |\n"
             "|---:|---|---:|---:|---:|---:|---:|\n";
        for (const auto &l : at(doc, "levels")) {
            const json &s = at(l, "summary");
            o << "| " << fmt(num(at(l, "config"), "streams"), 0) << " | " << (at(l, "meets").is_boolean() && at(l, "meets").get<bool>() ? "yes" : "no")
              << " | " << fmt(num(s, "requests"), 0) << " | " << fmt(num(at(s, "first_audio_ms"), "p95"), 0) << " | "
              << fmt(num(at(s, "rtf"), "p50")) << " | " << fmt(100 * num(s, "real_time_share"), 1) << " % | "
              << fmt(num(s, "audio_s_per_wall_s")) << " |\n";
        }
        return o.str();
    }
    const json &cfg = at(doc, "config");
    o << "## rtfkit load\n\n" << me(str(cfg, "url")) << me(str(cfg, "path")) << ": " << me(mode_text(cfg)) << " for "
      << fmt(num(doc, "wall_s"), 1) << " s; startup buffer " << fmt(num(cfg, "startup_buffer_ms"), 0)
      << " ms. A stream is real time when it completed and its playback never starved after the first audio.\n\n";
    summary_rows(o, at(doc, "summary"));
    o << "\n### Streams\n\n| # | client | sent at s | status | first audio ms | audio s | RTF | starvation | error |\n"
         "|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
    int i = 0;
    for (const auto &s : at(doc, "streams")) {
        const json &st = at(s, "starvation");
        o << "| " << i++ << " | " << fmt(num(s, "client"), 0) << " | " << fmt(num(s, "t_sent_ms") / 1000.0, 2) << " | "
          << fmt(num(s, "status"), 0) << " | " << fmt(num(s, "first_audio_ms"), 0) << " | " << fmt(num(s, "audio_s"), 2) << " | "
          << fmt(num(s, "rtf")) << " | " << fmt(num(st, "count"), 0) << " (" << fmt(num(st, "total_ms"), 0) << " ms) | "
          << me(str(s, "error")) << " |\n";
    }
    return o.str();
}

}  // namespace rtf::report
