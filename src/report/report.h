#pragma once
// rtf::report — renderings of a result JSON, the one source of truth (STYLE.md): Markdown
// for pull requests and terminals, one self-contained HTML file with inline SVG charts, and
// CSV of bench results. All are made from the JSON alone, so a stored result can be
// re-rendered at any time, and no other layer renders: `rtf bench --md/--csv`, `rtf compare`
// and `rtf report` all call these, so the same JSON always gives the same tables.
//
//   auto doc = report::read_result("r.json");            // rtf::Error(Usage) naming the file
//   report::write_report(doc, "report.html", report::format_for_path("report.html"));
//
// Results understood (detect_kind):
//   speak     `rtf speak --json`: {"schedule", "depths", "metrics", "run", "config", "engines", "output"}
//   simulate  `rtf simulate --json`: {"command": "simulate", "simulate", "pipeline", "result": {...}}
//   tune      `rtf tune --json` (schema rtfkit.tune/1): Markdown only
//   predict   `rtf predict --json` (schema rtfkit.predict/1): Markdown only
//   history   `rtf report --history` (schema rtfkit.history-series/1, history::metric_series):
//             one metric over the results, oldest first — a table and, in HTML, a line chart
//   bench     `rtf bench --json` (schema rtfkit.bench/1): verdicts, targets, per-config medians,
//             per-run values and quality, leverage, device duty cycles, A/B comparison, machine.
//   load      `rtf load --json` (schema rtfkit.load/1): a load run or a capacity search.
//   duplex    `rtf duplex --json` (schema rtfkit.duplex/1): the session's frames[], audio_chunks[],
//             stages and its "analysis" (a duplex-report) — Markdown: the analysis; HTML: the
//             analysis plus the session timeline
//   duplex-report `rtf duplex-report --json` (schema rtfkit.duplex-report/1): Markdown only
// Any optional section may be absent (no device samples, no A/B, no profiling, a failed run,
// zero chunks): the report says it is absent and renders the rest.
//
// Markdown of a bench result: a headline (exit code, protocol, targets, machine), one summary
// row per config (knobs, verdict, rtf median [min, max] (MAD), rtf_steady, first_audio_ms,
// starvation, xrt, rtf_stage.<s>), then per config its targets, INVALID reasons, warnings,
// runs, stage shares, leverage table, device duty cycles and run detail; the A/B comparison
// (comparison_markdown); machine and protocol as key/value tables. Every string taken from
// the JSON goes through escape.h.
//
// HTML contract: one file, no external resource of any kind (a Content-Security-Policy of
// default-src 'none' enforces it), charts drawn as inline SVG by charts.h, every string from
// the JSON escaped (escape.h). Two tiny inline scripts (CSP nonce) only mark the page:
// <html data-report="ok"> once the body has loaded, data-report-error="1" if any script
// error or CSP violation happened — the browser test reads both.
// Thread-safety: all functions are pure; call from any thread.
#include <string>

#include <nlohmann/json.hpp>

namespace rtf::report {

// Duplex = an `rtf duplex-report` analysis, DuplexRun = an `rtf duplex` session result.
enum class ResultKind { Speak, Simulate, Bench, Tune, Predict, HistorySeries, Load, Duplex, DuplexRun };
enum class Format { Html, Markdown };

// Throws rtf::Error(Usage) when `doc` is none of the kinds above (`what` names the input; the
// message lists every kind).
ResultKind detect_kind(const nlohmann::json &doc, const std::string &what = "result");
const char *to_string(ResultKind k);

// `source` (optional) is shown in the header, e.g. the input file name.
std::string render_html(const nlohmann::json &doc, const std::string &source = "");
std::string render_markdown(const nlohmann::json &doc, const std::string &source = "");
// An `rtf tune` result (schema rtfkit.tune/1): descent, kept changes, every trial.
std::string tune_markdown(const nlohmann::json &doc);
// The machine profile a bench or tune result ran from (its "profile": MachineProfile::to_json)
// as one paragraph: name, source, each choice (math-changing ones with their fidelity; a choice
// the user's knobs overrode marked so). "" for a null or missing profile.
std::string profile_markdown(const nlohmann::json &profile);
// An `rtf load` result (schema rtfkit.load/1): a load run (summary, every stream) or a
// capacity search (one row per concurrency level).
std::string load_markdown(const nlohmann::json &doc);
// An `rtf predict` result (schema rtfkit.predict/1): per-stage floors on the described machine
// (memory / compute / launch / transfer terms, bound), the calibration beside them (floor here,
// measured here, efficiency, likely), bottleneck, hard limits, prefill, levers, and the plain
// statement that the floor is a bound and the likely figure an extrapolation.
std::string predict_markdown(const nlohmann::json &doc);
// A metric over the history (schema rtfkit.history-series/1): one row per result.
std::string history_markdown(const nlohmann::json &doc);
// An `rtf duplex-report` result (schema rtfkit.duplex-report/1, bench/duplex-analysis.h): the
// verdict, the five checks with their rules, decision latency, the speak/audio matching, per
// matched turn first audio / RTF / playback, chunk durations. `rtf duplex-report` prints it.
std::string duplex_markdown(const nlohmann::json &doc);

// The A/B comparison section: a "comparison" object (bench/compare.h to_json, the body of
// `rtf compare --json` and the "comparison" of an A/B bench result). Per metric the medians
// of A and B, delta and ratio; percentiles other than the maximum, means and counts are
// left to the JSON.
std::string comparison_markdown(const nlohmann::json &comparison);

// CSV of a bench result, one row per config (llama-bench style): label, every knob any
// config sets as its own column, verdict, exit_code, runs_counted, rtf median/min/max/mad,
// the medians of rtf_steady, first_audio_ms, starvation.count, xrt, bound_overlap,
// bound_serial, pipeline_efficiency and every rtf_stage.<s>; 4 decimals, "n/a" when absent;
// RFC 4180 quoting. rtf::Error(Usage) when `doc` is not a bench result.
std::string render_csv(const nlohmann::json &doc);

// .html/.htm -> Html, .md/.markdown -> Markdown; anything else: rtf::Error(Usage) naming `what`.
Format format_for_path(const std::string &path, const std::string &what = "-o");
Format parse_format(const std::string &name, const std::string &what = "--format");  // "html" | "md"

// Reads and parses a result file: rtf::Error(Usage) naming the path when unreadable or not JSON.
nlohmann::json read_result(const std::string &path);
// Renders and writes ("-" = stdout); rtf::Error(Setup) naming the path when it cannot be written.
void write_report(const nlohmann::json &doc, const std::string &path, Format format, const std::string &source = "");

}  // namespace rtf::report
