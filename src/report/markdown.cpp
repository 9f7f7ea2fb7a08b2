// The Markdown rendering (report.h): the same figures as the HTML page, as tables and a
// text sparkline, for pull requests and terminals.
#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "core/robust-stats.h"
#include "report/bench-view.h"
#include "report/escape.h"
#include "report/report.h"

namespace rtf::report {

namespace {

std::string me(const std::string &s) { return md_escape(s); }

// Eight-level block sparkline of the values (NaN -> space), at most `width` characters
// (values are max-pooled into buckets so a late spike stays visible).
std::string sparkline(const std::vector<double> &v, size_t width = 60) {
    static const char *blocks[] = {"\xE2\x96\x81", "\xE2\x96\x82", "\xE2\x96\x83", "\xE2\x96\x84",
                                   "\xE2\x96\x85", "\xE2\x96\x86", "\xE2\x96\x87", "\xE2\x96\x88"};
    if (v.empty()) return "";
    size_t n = std::min(width, v.size());
    std::vector<double> b(n, std::nan(""));
    for (size_t i = 0; i < v.size(); ++i) {
        size_t k = i * n / v.size();
        if (std::isfinite(v[i]) && (!std::isfinite(b[k]) || v[i] > b[k])) b[k] = v[i];
    }
    double lo = 0, hi = 0;
    for (double x : b)
        if (std::isfinite(x)) hi = std::max(hi, x);
    std::string o;
    for (double x : b) {
        if (!std::isfinite(x)) {
            o += " ";
            continue;
        }
        int lvl = hi > lo ? static_cast<int>(std::lround((x - lo) / (hi - lo) * 7)) : 0;
        o += blocks[std::clamp(lvl, 0, 7)];
    }
    return o;
}

// key path = scalar, for config sections.
void flatten(const json &j, const std::string &prefix, std::vector<std::pair<std::string, std::string>> &out) {
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it)
            flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    } else if (j.is_array()) {
        bool scalars = std::all_of(j.begin(), j.end(), [](const json &x) { return !x.is_structured(); });
        if (scalars) {
            std::string s;
            size_t k = 0;
            for (const auto &x : j) {
                if (k++ == 40) {
                    s += ", \xE2\x80\xA6 (" + std::to_string(j.size()) + " in all)";
                    break;
                }
                s += (s.empty() ? "" : ", ") + (x.is_string() ? x.get<std::string>() : x.dump());
            }
            out.emplace_back(prefix, "[" + s + "]");
        } else {
            size_t k = 0;
            for (const auto &x : j) {
                if (k == 20) {
                    out.emplace_back(prefix, "\xE2\x80\xA6 " + std::to_string(j.size()) + " entries in all");
                    break;
                }
                flatten(x, prefix + "[" + std::to_string(k++) + "]", out);
            }
        }
    } else {
        out.emplace_back(prefix, j.is_string() ? j.get<std::string>() : j.dump());
    }
}

std::string kv_list(const json &j) {
    std::vector<std::pair<std::string, std::string>> rows;
    flatten(j, "", rows);
    if (rows.empty()) return "(none)\n";
    std::string o = "| key | value |\n|---|---|\n";
    for (const auto &[k, v] : rows) o += "| " + me(k) + " | " + me(v) + " |\n";
    return o;
}

std::string run_markdown(const RunView &v) {
    std::ostringstream o;
    const json &m = v.metrics;
    o << "| rtf | xrt | rtf_steady | first_audio_ms | starvation | bound_overlap | bound_serial | pipeline_efficiency | chunks | audio s |\n"
      << "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
      << "| " << fmt(num(m, "rtf")) << " | " << fmt(num(m, "xrt"), 2) << " | " << fmt(num(m, "rtf_steady")) << " | "
      << fmt(num(m, "first_audio_ms"), 1) << " | " << me(str(at(m, "starvation"), "count")) << " gaps, "
      << fmt(num(at(m, "starvation"), "total_ms"), 0) << " ms | " << fmt(num(m, "bound_overlap")) << " | "
      << fmt(num(m, "bound_serial")) << " | " << fmt(num(m, "pipeline_efficiency")) << " | " << me(str(m, "n_chunks"))
      << " | " << fmt(num(m, "audio_ms") / 1000.0, 2) << " |\n\n";
    // Per chunk.
    auto pace = chunk_rtf(v);  // finite, or NaN for a zero-length chunk: percentile() skips those
    o << "### Per-chunk RTF\n\n";
    if (pace.empty()) {
        o << "No per-chunk records in this result.\n\n";
    } else {
        o << "Pace per chunk ((out[i] - out[i-1]) / dur[i]; chunk 0 from t0), " << pace.size() << " chunk(s):\n\n```\n"
          << sparkline(pace) << "\n```\n\np50 " << fmt(percentile(pace, 50)) << ", p95 " << fmt(percentile(pace, 95))
          << ", max " << fmt(percentile(pace, 100)) << "; chunks slower than real time (pace > 1): "
          << std::count_if(pace.begin(), pace.end(), [](double x) { return x > 1; }) << "\n\n";
        const size_t kTable = 20;
        std::vector<size_t> idx(pace.size());
        for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
        if (pace.size() > kTable) {  // the slowest chunks, in index order
            std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
                double x = std::isfinite(pace[a]) ? pace[a] : -1, y = std::isfinite(pace[b]) ? pace[b] : -1;
                return x > y;
            });
            idx.resize(10);
            std::sort(idx.begin(), idx.end());
            o << "The 10 slowest chunks:\n\n";
        }
        o << "| chunk | arrival ms | audio ms | pace";
        for (const auto &s : v.stages) o << " | " << me(s.name) << " ms";
        o << " |\n|---:|---:|---:|---:";
        for (size_t k = 0; k < v.stages.size(); ++k) o << "|---:";
        o << "|\n";
        for (size_t i : idx) {
            const auto &c = v.chunks[i];
            o << "| " << c.index << " | " << fmt(c.arrival_ms, 1) << " | " << fmt(c.duration_ms, 0) << " | " << fmt(pace[i]);
            for (size_t k = 0; k < v.stages.size(); ++k)
                o << " | " << (k < c.stages.size() && c.stages[k] ? fmt(c.stages[k]->end_ms - c.stages[k]->start_ms, 1) : "");
            o << " |\n";
        }
        o << "\n";
    }
    // Stages.
    o << "### Stages\n\n| stage | rtf_stage | busy ms | get wait ms | put wait ms | device | item_ms p50 | p95 | max |\n"
      << "|---|---:|---:|---:|---:|---|---:|---:|---:|\n";
    for (const auto &name : run_stage_names(v)) {
        const StageView *sv = nullptr;
        for (const auto &s : v.stages)
            if (s.name == name) sv = &s;
        const json &it = at(m, name + ".item_ms");
        o << "| " << me(name) << " | " << fmt(num(m, "rtf_stage." + name)) << " | " << (sv ? fmt(sv->busy_ms, 1) : "")
          << " | " << (sv ? fmt(sv->get_wait_ms, 1) : "") << " | " << (sv ? fmt(sv->put_wait_ms, 1) : "") << " | "
          << (sv ? me(sv->device) : "") << " | " << fmt(num(it, "p50"), 1) << " | " << fmt(num(it, "p95"), 1) << " | "
          << fmt(num(it, "max"), 1) << " |\n";
    }
    std::string rows;
    if (m.is_object())
        for (auto it = m.begin(); it != m.end(); ++it) {
            const std::string &k = it.key();
            if (!it.value().is_object() || !it.value().contains("p50")) continue;
            if (k.size() > 8 && k.compare(k.size() - 8, 8, ".item_ms") == 0) continue;
            rows += "| " + me(k) + " | " + fmt(num(it.value(), "p50"), 1) + " | " + fmt(num(it.value(), "p95"), 1) + " | " +
                    fmt(num(it.value(), "p99"), 1) + " | " + fmt(num(it.value(), "max"), 1) + " | " + me(str(it.value(), "n")) + " |\n";
        }
    if (!rows.empty()) o << "\n| timer / queue wait (ms) | p50 | p95 | p99 | max | n |\n|---|---:|---:|---:|---:|---:|\n" << rows;
    o << "\n";
    return o.str();
}

std::string run_doc_markdown(const json &doc, ResultKind kind, const std::string &source) {
    std::ostringstream o;
    const json &rr = run_result_of(doc, kind);
    RunView v = run_view(rr);
    double rtf = num(v.metrics, "rtf");
    o << "## rtfkit report — " << to_string(kind) << (source.empty() ? "" : " (" + me(source) + ")") << "\n\n";
    o << "**" << (!std::isfinite(rtf) ? "NO AUDIO" : rtf < 1 ? "REAL TIME" : "SLOWER THAN REAL TIME") << "**: rtf "
      << fmt(rtf) << (v.schedule.empty() ? "" : ", schedule " + me(v.schedule))
      << ". One run, no bench protocol: use `rtf bench` for a verdict.\n\n";
    o << run_markdown(v);
    const json &out = at(doc, "output");
    if (is_nonempty(at(out, "reply_text"))) o << "Reply text: " << me(str(out, "reply_text")) << "\n\n";
    o << "### Config\n\n";
    if (kind == ResultKind::Simulate) o << kv_list({{"simulate", at(doc, "simulate")}, {"pipeline", at(doc, "pipeline")}});
    else o << kv_list({{"config", at(doc, "config")}, {"depths", at(doc, "depths")}, {"output", out}});
    return o.str();
}

bool flag(const json &j, const char *key) { return at(j, key).is_boolean() && at(j, key).get<bool>(); }
const json &array_at(const json &j, const char *key) {
    static const json empty = json::array();
    return at(j, key).is_array() ? at(j, key) : empty;
}
bool ends_with(const std::string &s, const std::string &tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
// A protocol target: its value, or "off" when the bench ran without it (null).
std::string target_text(const json &protocol, const char *metric, int prec) {
    const json &t = at(at(protocol, "targets"), metric);
    return t.is_number() ? fmt(num(t), prec) : "off";
}

// One row per config: the figures a reader compares across a sweep or an A/B pair.
void summary_table(std::ostringstream &o, const json &doc) {
    const auto cols = bench_columns(doc);
    o << "| config";
    for (const auto &k : cols.knobs) o << " | " << me(k);
    o << " | verdict | rtf median [min, max] (MAD) | rtf_steady | first_audio_ms | starvation | xrt";
    for (const auto &s : cols.stage_metrics) o << " | " << me(s);
    o << " |\n|---";
    for (size_t k = 0; k < cols.knobs.size(); ++k) o << "|---";
    o << "|---|---:|---:|---:|---:|---:";
    for (size_t k = 0; k < cols.stage_metrics.size(); ++k) o << "|---:";
    o << "|\n";
    size_t i = 0;
    for (const auto &c : array_at(doc, "configs")) {
        const json &v = at(c, "verdict");
        o << "| " << i++;
        for (const auto &k : cols.knobs) o << " | " << me(knob_value(c, k));
        o << " | " << me(str(v, "status")) << " (exit " << (std::isfinite(num(v, "exit_code")) ? str(v, "exit_code") : "3")
          << ") | " << fmt(summary_stat(c, "rtf")) << " [" << fmt(summary_stat(c, "rtf", "min")) << ", "
          << fmt(summary_stat(c, "rtf", "max")) << "] (" << fmt(summary_stat(c, "rtf", "mad")) << ") | "
          << fmt(summary_stat(c, "rtf_steady")) << " | " << fmt(summary_stat(c, "first_audio_ms"), 1) << " | "
          << fmt(summary_stat(c, "starvation.count"), 0) << " | " << fmt(summary_stat(c, "xrt"), 2);
        for (const auto &s : cols.stage_metrics) o << " | " << fmt(summary_stat(c, s));
        o << " |\n";
    }
    o << "\n";
}

// docs/method.md §4, §5: where time can still be won, largest gain first.
void leverage_table(std::ostringstream &o, const json &lev) {
    o << "Leverage (gain = share x reducible; docs/method.md §4, §5):\n\n"
      << "| rank | what | share | actual RTF | floor RTF | reducible | gain | toolbox layer | advice |\n"
      << "|---:|---|---:|---:|---:|---:|---:|---|---|\n";
    double gmax = 0;
    for (const auto &r : lev) gmax = std::max(gmax, std::isfinite(num(r, "gain")) ? num(r, "gain") : 0.0);
    int rank = 1;
    for (const auto &r : lev) {
        const bool known = flag(r, "floor_known");
        const double g = num(r, "gain");
        const int bars = gmax > 0 && std::isfinite(g) ? static_cast<int>(std::lround(g / gmax * 10)) : 0;
        std::string bar;
        for (int k = 0; k < bars; ++k) bar += "\xE2\x96\x88";
        const double layer = num(r, "layer");
        o << "| " << rank++ << " | " << me(str(r, "what")) << " | " << fmt(num(r, "share")) << " | "
          << fmt(num(r, "actual_rtf")) << " | " << (known ? fmt(num(r, "floor_rtf")) : "?") << " | "
          << fmt(num(r, "reducible")) << (known ? "" : " (upper bound)") << " | " << (bar.empty() ? "" : bar + " ") << fmt(g)
          << " | " << (std::isfinite(layer) && layer != 0 ? fmt(layer, 0) + " " : "") << me(str(r, "layer_name")) << " | "
          << me(str(r, "advice")) << " |\n";
    }
    o << "\n";
}

void config_section(std::ostringstream &o, const json &c, size_t index) {
    const json &v = at(c, "verdict");
    const std::string status = str(v, "status"), label = str(c, "label");
    o << "### Config " << index << (label.empty() ? "" : ": `" + md_code(label) + "`") << " — " << me(status)
      << (status == "VALID" ? (flag(v, "targets_met") ? ", all targets met" : ", TARGET MISSED") : "") << "\n\n";
    for (const auto &t : array_at(v, "targets"))
        o << "- target " << me(str(t, "metric")) << " " << me(str(t, "op")) << " " << fmt(num(t, "target")) << ": median "
          << fmt(num(t, "value")) << (flag(t, "met") ? " (met)" : " (**MISSED**)") << "\n";
    for (const auto &r : array_at(v, "reasons")) o << "- **INVALID**: " << me(str(r)) << "\n";
    for (const auto &w : array_at(c, "warnings")) o << "- warning: " << me(str(w)) << "\n";
    o << "\n| run | rtf | quality | status |\n|---|---:|---|---|\n";
    for (const auto &r : array_at(c, "runs"))
        o << "| " << (flag(r, "warmup") ? "warm-up " : "") << me(str(r, "index")) << " | " << fmt(num(at(r, "metrics"), "rtf"))
          << " | " << me(quality_status(r)) << " | " << me(run_status(r)) << " |\n";
    o << "\nrtf median " << fmt(summary_stat(c, "rtf")) << " [" << fmt(summary_stat(c, "rtf", "min")) << ", "
      << fmt(summary_stat(c, "rtf", "max")) << "] (MAD " << fmt(summary_stat(c, "rtf", "mad")) << "); rtf_steady "
      << fmt(summary_stat(c, "rtf_steady")) << "; first_audio_ms " << fmt(summary_stat(c, "first_audio_ms"), 1)
      << "; starvation " << fmt(summary_stat(c, "starvation.count"), 0) << "; bound_overlap "
      << fmt(summary_stat(c, "bound_overlap")) << ", bound_serial " << fmt(summary_stat(c, "bound_serial"))
      << ", pipeline_efficiency " << fmt(summary_stat(c, "pipeline_efficiency")) << "\n\n";
    auto share = share_row_of(c, "");
    if (!share.stages.empty()) {
        o << "Stage shares (median rtf_stage):";
        for (const auto &[s, val] : share.stages) o << " " << me(s) << " " << fmt(val);
        o << "\n\n";
    }
    if (!array_at(c, "leverage").empty()) leverage_table(o, array_at(c, "leverage"));
    const json &s = at(c, "summary");
    bool devices = false;
    if (s.is_object())
        for (auto it = s.begin(); it != s.end(); ++it)
            if (it.key().rfind("device.", 0) == 0) {
                o << "- " << me(it.key()) << ": median " << fmt(num(it.value(), "median")) << "\n";
                devices = true;
            }
    if (devices) o << "\n";
    if (const json *r = run_with_record(c)) o << "#### Run detail\n\n" << run_markdown(run_view(*r));
    o << "Knobs: " << (at(c, "knobs").is_object() && !at(c, "knobs").empty() ? "" : "(defaults)");
    if (at(c, "knobs").is_object())
        for (auto it = at(c, "knobs").begin(); it != at(c, "knobs").end(); ++it)
            o << "`" << md_code(it.key() + "=" + str(it.value())) << "` ";
    o << "\n\n";
}

std::string profile_paragraph(const json &profile) {
    if (!profile.is_object()) return "";
    std::ostringstream o;
    o << "Machine profile **" << me(str(profile, "name")) << "** (" << me(str(profile, "source")) << ")";
    std::set<std::string> applied;
    for (const auto &a : array_at(profile, "applied"))
        if (a.is_string()) applied.insert(a.get<std::string>());
    const json &choices = array_at(profile, "choices");
    if (choices.empty()) o << ": no choices (the plain knob defaults)";
    size_t i = 0;
    for (const auto &c : choices) {
        o << (i++ ? "; " : ": ") << "`" << md_code(str(c, "knob") + "=" + str(c, "value")) << "`";
        if (!applied.count(str(c, "knob"))) o << " (not applied: the run's own knob, or not this workload's)";
        if (at(c, "changes_math").is_boolean() && at(c, "changes_math").get<bool>())
            o << " [changes the math: " << me(str(c, "fidelity")) << "]";
    }
    o << ".\n\n";
    return o.str();
}

std::string bench_doc_markdown(const json &doc, const std::string &source) {
    std::ostringstream o;
    const json &proto = at(doc, "protocol");
    const int code = std::isfinite(num(doc, "exit_code")) ? static_cast<int>(num(doc, "exit_code")) : 3;
    const std::string mode = str(doc, "mode");
    o << "## rtfkit report — bench `" << md_code(str(doc, "workload")) << "`" << (source.empty() ? "" : " (" + me(source) + ")")
      << "\n\n**Exit " << code << ": " << (code == 0 ? "all targets met" : code == 2 ? "a target was missed" : "incomplete or invalid")
      << "** (0 all targets met, 2 a target missed, 3 incomplete or invalid). Mode " << me(mode)
      << (mode == "ab" ? " (A/B interleaved)" : "") << "; " << me(str(proto, "warmup")) << " warm-up, "
      << me(str(proto, "runs")) << " measured run(s) per config; noise floor " << fmt(num(proto, "noise_rtf"))
      << " RTF; targets rtf <= " << target_text(proto, "rtf", 3) << ", first_audio_ms <= "
      << target_text(proto, "first_audio_ms", 0) << ", gapless_start_ms <= " << target_text(proto, "gapless_start_ms", 0)
      << ", starvation <= " << target_text(proto, "starvation", 0) << "; "
      << me(str(doc, "created")) << "\n\n";
    const json &machine = at(doc, "machine");
    if (machine.is_object()) {
        const std::string cpu = str(at(machine, "cpu"), "cpu_model");
        o << "Machine: " << me(cpu.empty() ? "unknown CPU" : cpu) << ", " << me(str(at(machine, "cpu"), "cores"))
          << " cores; rtfkit " << me(str(at(doc, "versions"), "rtfkit")) << ", llama.cpp "
          << me(str(at(doc, "versions"), "llama_cpp")) << "\n\n";
    }
    o << profile_paragraph(at(doc, "profile"));
    summary_table(o, doc);
    size_t i = 0;
    for (const auto &c : array_at(doc, "configs")) config_section(o, c, i++);
    if (at(doc, "comparison").is_object()) o << comparison_markdown(at(doc, "comparison")) << "\n";
    o << "### Machine\n\n" << kv_list({{"machine", machine}, {"versions", at(doc, "versions")}}) << "\n";
    o << "### Protocol\n\n" << kv_list(proto);
    return o.str();
}

}  // namespace

std::string profile_markdown(const json &profile) { return profile_paragraph(profile); }

std::string comparison_markdown(const json &c) {
    std::ostringstream o;
    o << "### A/B comparison\n\nbaseline A: `" << md_code(str(c, "a")) << "`  \ncandidate B: `" << md_code(str(c, "b"))
      << "`\n\n**RTF: " << me(str(c, "rtf_verdict")) << "**  \nSignificance: " << me(str(at(c, "significance"), "note"))
      << "\n\n";
    if (!array_at(c, "knob_diffs").empty()) {
        o << "Knobs that differ:\n";
        for (const auto &d : array_at(c, "knob_diffs")) o << "- `" << md_code(str(d)) << "`\n";
        o << "\n";
    }
    if (!array_at(c, "notes").empty()) {
        for (const auto &n : array_at(c, "notes")) o << "> note: " << me(str(n)) << "\n";
        o << "\n";
    }
    o << "| metric | A (median) | B (median) | delta | ratio B/A |\n|---|---:|---:|---:|---:|\n";
    for (const auto &r : array_at(c, "metrics")) {
        const std::string m = str(r, "metric");
        // Medians and maxima keep the table readable; the JSON has every percentile and count.
        if (m.find(".p95") != std::string::npos || m.find(".p99") != std::string::npos ||
            m.find(".mean") != std::string::npos || ends_with(m, ".n"))
            continue;
        o << "| " << me(m) << " | " << fmt(num(r, "a")) << " | " << fmt(num(r, "b")) << " | " << fmt(num(r, "delta")) << " | "
          << fmt(num(r, "ratio")) << " |\n";
    }
    return o.str();
}

std::string render_markdown(const json &doc, const std::string &source) {
    ResultKind kind = detect_kind(doc, source.empty() ? "result" : source);
    // An `rtf duplex` result: its analysis is the report (rtfkit.duplex-report/1).
    if (kind == ResultKind::DuplexRun) return duplex_markdown(at(doc, "analysis"));
    if (kind == ResultKind::Tune) return tune_markdown(doc);
    if (kind == ResultKind::Load) return load_markdown(doc);
    if (kind == ResultKind::Predict) return predict_markdown(doc);
    if (kind == ResultKind::HistorySeries) return history_markdown(doc);
    if (kind == ResultKind::Duplex) return duplex_markdown(doc);
    return kind == ResultKind::Bench ? bench_doc_markdown(doc, source) : run_doc_markdown(doc, kind, source);
}

}  // namespace rtf::report
