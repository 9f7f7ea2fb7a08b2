#include "report/report.h"

#include <fstream>
#include <iostream>

#include "core/error.h"
#include "report/json-view.h"

namespace rtf::report {

namespace {
// Every kind detect_kind() knows, as its error messages list them.
constexpr const char *kKnownResults =
    "the --json of rtf speak (metrics + run), rtf simulate, rtf bench (rtfkit.bench/1), rtf load (rtfkit.load/1), "
    "rtf duplex (rtfkit.duplex/1), rtf duplex-report (rtfkit.duplex-report/1), rtf tune (rtfkit.tune/1), "
    "rtf predict (rtfkit.predict/1), or rtf report --history (rtfkit.history-series/1)";
}  // namespace

ResultKind detect_kind(const json &doc, const std::string &what) {
    if (!doc.is_object()) throw_usage(what + ": a result must be a JSON object (" + std::string(kKnownResults) + ")");
    std::string schema = str(doc, "schema");
    if (schema.rfind("rtfkit.bench/", 0) == 0) {
        if (schema != "rtfkit.bench/1")
            throw_usage(what + ": schema '" + schema + "' is newer than this build understands (rtfkit.bench/1)");
        if (!at(doc, "configs").is_array()) throw_usage(what + ": bench result without a \"configs\" array");
        return ResultKind::Bench;
    }
    if (schema == "rtfkit.tune/1") return ResultKind::Tune;
    if (schema == "rtfkit.load/1") return ResultKind::Load;
    if (schema == "rtfkit.duplex-report/1") return ResultKind::Duplex;
    if (schema == "rtfkit.duplex/1") {
        if (!at(doc, "frames").is_array()) throw_usage(what + ": duplex result without a \"frames\" array");
        return ResultKind::DuplexRun;
    }
    if (schema == "rtfkit.predict/1") return ResultKind::Predict;
    if (schema == "rtfkit.history-series/1") return ResultKind::HistorySeries;
    if (str(doc, "command") == "simulate" && at(doc, "result").is_object()) return ResultKind::Simulate;
    if (at(doc, "metrics").is_object() && at(doc, "run").is_object()) return ResultKind::Speak;
    if (schema.rfind("rtfkit.", 0) == 0)
        throw_usage(what + ": schema '" + schema + "' is not one this build renders (" + std::string(kKnownResults) + ")");
    throw_usage(what + ": not an rtfkit result: expected " + std::string(kKnownResults));
}

const char *to_string(ResultKind k) {
    switch (k) {
        case ResultKind::Speak: return "speak";
        case ResultKind::Simulate: return "simulate";
        case ResultKind::Bench: return "bench";
        case ResultKind::Tune: return "tune";
        case ResultKind::Load: return "load";
        case ResultKind::Predict: return "predict";
        case ResultKind::HistorySeries: return "history";
        case ResultKind::Duplex: return "duplex-report";
        case ResultKind::DuplexRun: return "duplex";
    }
    return "?";
}

namespace {
bool ends_with(const std::string &s, const std::string &suffix) {
    if (s.size() < suffix.size()) return false;
    for (size_t i = 0; i < suffix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(s[s.size() - suffix.size() + i])) != suffix[i]) return false;
    return true;
}
}  // namespace

Format format_for_path(const std::string &path, const std::string &what) {
    if (ends_with(path, ".html") || ends_with(path, ".htm")) return Format::Html;
    if (ends_with(path, ".md") || ends_with(path, ".markdown")) return Format::Markdown;
    throw_usage(what + ": cannot tell the format of '" + path + "': name it .html or .md, or pass --format html|md");
}

Format parse_format(const std::string &name, const std::string &what) {
    if (name == "html") return Format::Html;
    if (name == "md" || name == "markdown") return Format::Markdown;
    throw_usage(what + ": unknown format '" + name + "' (allowed: html, md)");
}

json read_result(const std::string &path) {
    std::ifstream f(path);
    if (!f) throw_usage("cannot read result '" + path + "'");
    try {
        return json::parse(f);
    } catch (const json::exception &e) {
        throw_usage("'" + path + "' is not valid JSON (" + e.what() + ")");
    }
}

void write_report(const json &doc, const std::string &path, Format format, const std::string &source) {
    std::string text = format == Format::Html ? render_html(doc, source) : render_markdown(doc, source);
    if (path == "-") {
        std::cout << text;
        return;
    }
    std::ofstream out(path, std::ios::binary);
    if (!out) throw_setup("cannot write report to '" + path + "'");
    out << text;
    if (!out) throw_setup("write failed for report '" + path + "'");
}

}  // namespace rtf::report
