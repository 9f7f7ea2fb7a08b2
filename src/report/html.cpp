// The HTML rendering (report.h): one self-contained page, sections in the order a reader
// asks the questions — did it meet the target, where did each chunk spend its time, which
// stage is the wall, what would help most, was the device busy, how do A and B differ,
// and under which config and machine.
#include <cmath>

#include "core/error.h"
#include "report/bench-view.h"
#include "report/charts.h"
#include "report/escape.h"
#include "report/html-parts.h"
#include "report/report.h"
#include "report/svg.h"

namespace rtf::report {

namespace html {

std::string render_run_doc(const json &doc, ResultKind kind, const std::string &source) {
    const json &rr = run_result_of(doc, kind);
    RunView v = run_view(rr);
    std::string b = header(to_string(kind), source, "one run, no bench protocol (warm-up, N runs, median): use "
                                                      "<code>rtf bench</code> for a verdict");
    double rtf = num(v.metrics, "rtf");
    b += "<h2>Verdict</h2><p>";
    if (!std::isfinite(rtf)) b += "<span class=\"badge bad\">NO AUDIO</span> the run produced no audio: rtf is undefined";
    else if (rtf < 1) b += "<span class=\"badge ok\">REAL TIME</span> rtf " + e(fmt(rtf)) + " &lt; 1";
    else b += "<span class=\"badge miss\">SLOWER THAN REAL TIME</span> rtf " + e(fmt(rtf)) + " \xE2\x89\xA5 1";
    if (at(rr, "cancelled").is_boolean() && at(rr, "cancelled").get<bool>())
        b += " <span class=\"badge bad\">INTERRUPTED</span> partial result";
    b += "</p>";
    b += run_sections(v, "");
    const json &out = at(doc, "output");
    if (out.is_object()) {
        b += "<h2>Output</h2>";
        if (is_nonempty(at(out, "reply_text")))
            b += "<p>Reply text (LLM):</p><pre>" + e(str(out, "reply_text")) + "</pre>";
        b += kv_table(out);
    }
    b += "<h2>Config</h2>";
    if (kind == ResultKind::Simulate) {
        b += "<h3>simulate</h3>" + kv_table(at(doc, "simulate")) + "<h3>pipeline</h3>" + kv_table(at(doc, "pipeline"));
    } else {
        b += "<p>schedule " + e(str(doc, "schedule")) + ", queue depths " + kv_table(at(doc, "depths")) + "</p>" +
             kv_table(at(doc, "config"));
    }
    if (at(doc, "engines").is_object()) b += "<h2>Engines and kit</h2>" + kv_table(at(doc, "engines"));
    return page("rtf report: " + std::string(to_string(kind)) + ", rtf " + fmt(rtf), b);
}

}  // namespace html

std::string render_html(const json &doc, const std::string &source) {
    ResultKind kind = detect_kind(doc, source.empty() ? "result" : source);
    if (kind == ResultKind::DuplexRun) return html::render_duplex_doc(doc, source);
    if (kind == ResultKind::Tune || kind == ResultKind::Predict || kind == ResultKind::Duplex) {
        throw_usage((source.empty() ? std::string("result") : source) + ": a " + to_string(kind) +
                    " result renders as Markdown (-o FILE.md); its HTML page is not written yet");
    }
    if (kind == ResultKind::Load) return html::render_load_doc(doc, source);
    if (kind == ResultKind::HistorySeries) return html::render_history_doc(doc);
    return kind == ResultKind::Bench ? html::render_bench_doc(doc, source) : html::render_run_doc(doc, kind, source);
}

}  // namespace rtf::report
