#pragma once
// The pieces every HTML page of `rtf report` is built from (html.cpp and one html-<kind>.cpp
// per result kind, as the Markdown renderers are): the page frame with its style and CSP,
// the header line, cards, JSON as key/value tables, and the per-run sections (cards, per-chunk
// RTF, Gantt, lanes, stage shares and tables) that a run result and a bench run detail share.
// Internal to src/report; the public entry point is report.h's render_html().
#include <string>

#include <nlohmann/json.hpp>

#include "report/bench-view.h"

namespace rtf::report::html {

using json = nlohmann::json;

std::string e(const std::string &s);  // HTML-escaped text
std::string card(const std::string &value, const std::string &name);
// A JSON value as nested key/value tables; long arrays are cut (the JSON has them all).
std::string kv_table(const json &j, int depth = 0);
// Per-stage, sub-stage and queue tables of one run's metrics.
std::string stage_tables(const RunView &v);
// The per-run sections: headline cards, per-chunk RTF, Gantt, lanes, stage shares.
std::string run_sections(const RunView &v, const std::string &heading_suffix);
// The whole page around `body` (style, CSP nonce, the error hook the e2e test reads).
std::string page(const std::string &title, const std::string &body);
std::string header(const std::string &kind, const std::string &source, const std::string &extra);

// One page per result kind.
std::string render_run_doc(const json &doc, ResultKind kind, const std::string &source);
std::string render_bench_doc(const json &doc, const std::string &source);
std::string render_load_doc(const json &doc, const std::string &source);
std::string render_duplex_doc(const json &doc, const std::string &source);
std::string render_history_doc(const json &doc);

}  // namespace rtf::report::html
