// Unit tests of the report renderers (src/report): escaping, kind detection, edge cases
// (1 and 500 chunks, missing sections, a failed quality gate, nulls), the per-chunk maths,
// Markdown content and the well-formedness of the HTML/SVG produced.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "report/escape.h"
#include "report/json-view.h"
#include "report/report.h"
#include "report/svg.h"

using nlohmann::json;
using namespace rtf::report;

namespace {

const char *kEvil = "<script>document.documentElement.setAttribute('data-pwned','1')</script><img src=x onerror=alert(1)>";

size_t count(const std::string &hay, const std::string &needle) {
    size_t n = 0;
    for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
    return n;
}

// A run result shaped like pipe::to_json(RunResult): 3 stages, n chunks of 200 ms, t0 = 1000.
json run_result(int n, bool profiled = true, const std::string &stage0 = "llm") {
    const double t0 = 1000, chunk = 200, step = 150;
    std::vector<std::string> names = {stage0, "tts", "t2w"};
    json stages = json::array(), chunks = json::array();
    for (size_t s = 0; s < names.size(); ++s) {
        json events = json::array();
        if (profiled)
            for (int i = 0; i < n; ++i)
                events.push_back({{"start_ms", t0 + 50.0 * static_cast<double>(s) + step * i},
                                  {"end_ms", t0 + 50.0 * static_cast<double>(s + 1) + step * i},
                                  {"in_seq", i}, {"out_seq", i}, {"tail_ms", 0}});
        stages.push_back({{"name", names[s]}, {"n_threads", 1}, {"device", "CPU"}, {"busy_ms", 50.0 * n},
                          {"get_wait_ms", 1.0}, {"put_wait_ms", 2.0}, {"events", events}, {"substages", json::array()}});
    }
    for (int i = 0; i < n; ++i) {
        json per = json::object();
        if (profiled)
            for (size_t s = 0; s < names.size(); ++s)
                per[names[s]] = {{"start_ms", t0 + 50.0 * static_cast<double>(s) + step * i},
                                 {"end_ms", t0 + 50.0 * static_cast<double>(s + 1) + step * i}};
        chunks.push_back({{"index", i}, {"arrival_ms", t0 + 150 + step * i}, {"duration_ms", chunk}, {"stages", per}});
    }
    double audio = chunk * n, last = 150 + step * (n - 1);
    json m = {{"n_chunks", n}, {"audio_ms", audio}, {"wall_ms", last}, {"rtf", last / audio},
              {"rtf_steady", n > 1 ? json(0.75) : json(nullptr)}, {"first_audio_ms", 150}, {"xrt", audio / last},
              {"starvation", {{"count", 1}, {"total_ms", 5.0}, {"jitter_ms", 0}, {"playback_start_ms", t0 + 150},
                              {"playback_end_ms", t0 + 150 + audio},
                              {"gaps", json::array({{{"chunk", 1}, {"start_ms", t0 + 350}, {"length_ms", 5.0}}})}}},
              {"bound_overlap", 0.25}, {"bound_serial", 0.75}, {"pipeline_efficiency", 0.25 / (last / audio)},
              {"t2w.vocoder_ms", {{"p50", 30.0}, {"p95", 31.0}, {"p99", 32.0}, {"max", 33.0}, {"n", n}}},
              {"queue_wait.q1", {{"p50", 1.0}, {"p95", 2.0}, {"p99", 3.0}, {"max", 4.0}, {"n", n}}}};
    for (const auto &s : names) {
        m["rtf_stage." + s] = 0.25;
        m[s + ".item_ms"] = {{"p50", 50.0}, {"p95", 50.0}, {"p99", 50.0}, {"max", 50.0}, {"n", n}, {"busy_ms", 50.0 * n}};
    }
    return {{"schedule", "pipelined"}, {"depths", {16, 16}}, {"cancelled", false}, {"profile_compiled", true},
            {"metrics", m}, {"run", {{"t0_ms", t0}, {"end_ms", t0 + last + 1}, {"profiled", profiled},
                                     {"stages", stages}, {"queues", json::array()}, {"chunks", chunks}}}};
}

json speak_doc(int n, const std::string &prompt = "Hello") {
    json d = run_result(n);
    d["config"] = {{"input", {{"prompt", prompt}}}, {"max_audio_s", 3}};
    d["engines"] = {{"kit", {{"dir", "/tmp/kit"}, {"is_twin", true}}}};
    d["output"] = {{"n_chunks", n}, {"reply_text", prompt}, {"audio_s", 0.2 * n}};
    return d;
}

json bench_config(const std::string &label, double rtf, bool quality_fail = false, bool samples = false) {
    json runs = json::array();
    for (int i = 0; i < 4; ++i) {
        bool warm = i == 0;
        json r = {{"index", warm ? 0 : i - 1}, {"warmup", warm}, {"ok", true},
                  {"metrics", {{"rtf", rtf + 0.01 * i}, {"rtf_steady", rtf}, {"first_audio_ms", 100}, {"starvation", {{"count", 0}}}}},
                  {"quality", {{"checked", true}, {"passed", !(quality_fail && i == 2)},
                               {"note", quality_fail && i == 2 ? "token loop: <<<?!?>>>" : "ok"}}}};
        if (samples && i == 3)
            r["devices"] = {{"interval_ms", 100},
                            {"devices", {{"cpu", {{"duty_cycle", 0.5}, {"thresholds", {{"compute_pct", 5}, {"memory_pct", 5}}},
                                                  {"samples", {{0, 80, nullptr}, {100, 2, nullptr}, {200, 90, nullptr}}}}},
                                         {"cpu0", {{"duty_cycle", 0.1}, {"samples", {{0, 1, nullptr}}}}}}}};
        runs.push_back(r);
    }
    json verdict = {{"status", quality_fail ? "INVALID" : "VALID"}, {"targets_met", !quality_fail && rtf <= 1},
                    {"reasons", quality_fail ? json::array({"run 1: quality gate failed (token loop); its figures are not counted"})
                                             : json::array()},
                    {"targets", json::array({{{"metric", "rtf"}, {"op", "<="}, {"target", 1.0}, {"value", rtf}, {"met", rtf <= 1}}})},
                    {"exit_code", quality_fail ? 3 : rtf <= 1 ? 0 : 2}};
    json summary = {{"rtf", {{"median", rtf}, {"min", rtf - 0.01}, {"max", rtf + 0.02}, {"mad", 0.01}, {"n", 3}}},
                    {"rtf_stage.llm", {{"median", 0.1}}}, {"rtf_stage.tts", {{"median", 0.3}}},
                    {"rtf_stage.t2w", {{"median", 0.3}}}};
    if (samples) summary["device.cpu.duty_cycle"] = {{"median", 0.5}};
    json lev = json::array({{{"what", "tts"}, {"share", 0.43}, {"actual_rtf", 0.3}, {"floor_rtf", nullptr}, {"floor_known", false},
                             {"reducible", 1.0}, {"gain", 0.43}, {"layer", 3}, {"layer_name", "pipeline"}, {"advice", "overlap <it>"}},
                            {{"what", "t2w"}, {"share", 0.43}, {"actual_rtf", 0.3}, {"floor_rtf", 0.15}, {"floor_known", true},
                             {"reducible", 0.5}, {"gain", 0.21}, {"layer", 4}, {"layer_name", "runtime"}, {"advice", "threads"}}});
    return {{"label", label}, {"workload", "simulate"}, {"knobs", {{"d1", label}}}, {"workload_config", {{"chunks", 10}}},
            {"verdict", verdict}, {"warnings", json::array({"spread above noise"})}, {"summary", summary},
            {"values", {{"rtf", {rtf, rtf + 0.01, rtf + 0.02}}}}, {"leverage", lev}, {"runs", runs}};
}

json bench_doc(std::vector<json> configs, const json &comparison = nullptr) {
    int code = 0;
    for (const auto &c : configs) code = std::max(code, c["verdict"]["exit_code"].get<int>());
    json d = {{"schema", "rtfkit.bench/1"}, {"command", "bench"}, {"created", "2025-01-01T00:00:00Z"},
              {"mode", comparison.is_null() ? "single" : "ab"}, {"workload", "simulate"},
              {"protocol", {{"warmup", 1}, {"runs", 3}, {"noise_rtf", 0.03}, {"targets", {{"rtf", 1.0}, {"first_audio_ms", nullptr}, {"starvation", 0}}}}},
              {"machine", {{"cpu", {{"cpu_model", "Test CPU <x86>"}, {"cores", 2}}}, {"hostname", "h&h"}}},
              {"versions", {{"rtfkit", "0.1.0"}}}, {"samplers", nullptr}, {"configs", configs}, {"exit_code", code}};
    if (!comparison.is_null()) d["comparison"] = comparison;
    return d;
}

// Tags of these kinds open and close in equal numbers (a cheap well-formedness check).
// The first '<' in Markdown that a renderer would read as the start of a tag, comment or
// autolink (not backslash-escaped); npos when there is none.
size_t unescaped_tag(const std::string &md) {
    for (size_t i = 0; i + 1 < md.size(); ++i) {
        const char n = md[i + 1];
        const bool opens = std::isalpha(static_cast<unsigned char>(n)) || n == '/' || n == '!' || n == '?';
        if (md[i] == '<' && opens && (i == 0 || md[i - 1] != '\\')) return i;
    }
    return std::string::npos;
}

void expect_balanced(const std::string &html) {
    for (const char *tag : {"svg", "table", "tr", "h2", "h3", "p", "details", "script", "text", "title"}) {
        std::string t = tag;
        size_t n_open = count(html, "<" + t + " ") + count(html, "<" + t + ">"), n_close = count(html, "</" + t + ">");
        EXPECT_EQ(n_open, n_close) << "<" << tag << "> unbalanced";
    }
    EXPECT_EQ(html.find("nan"), std::string::npos) << "a NaN leaked into the output";
    EXPECT_NE(html.find("data-report','ok'"), std::string::npos);
}

}  // namespace

TEST(Escape, Html) {
    EXPECT_EQ(html_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
    EXPECT_EQ(html_escape(std::string("x\x01y")), "x\xEF\xBF\xBDy");
    EXPECT_EQ(html_escape("line\nnext"), "line\nnext");
}

// Markdown is read on terminals and in .md files: no HTML entities, ever (issue 29 §3.1);
// what a renderer would take as markup is backslash-escaped instead.
TEST(Escape, Markdown) {
    EXPECT_EQ(md_escape("a|b\nc <i>*"), "a\\|b c \\<i>\\*");
    EXPECT_EQ(md_code("a`b|c"), "a\xE2\x80\x98" "b\\|c");
    // Plain text stays plain: comparisons, apostrophes, quotes, a lone '&'.
    EXPECT_EQ(md_escape("P95 < interval, every turn's \"RTF\" > 0 & R&D"), "P95 < interval, every turn's \"RTF\" > 0 & R&D");
    // What would become markup: tags, comments, autolinks, entity references.
    EXPECT_EQ(md_escape("</b> <!-- x --> <https://x> <?php"), "\\</b> \\<!-- x --> \\<https://x> \\<?php");
    EXPECT_EQ(md_escape("&amp; &#39; &#x27; &; &#; &x"), "\\&amp; \\&\\#39; \\&\\#x27; &; &\\#; &x");
    // Control bytes (a terminal escape sequence) are replaced, tabs kept.
    EXPECT_EQ(md_escape("a\x1b[31mb\tc"), "a\xEF\xBF\xBD" "\\[31mb\tc");
}

TEST(Report, DetectKind) {
    EXPECT_EQ(detect_kind(speak_doc(3)), ResultKind::Speak);
    EXPECT_EQ(detect_kind(bench_doc({bench_config("1", 0.5)})), ResultKind::Bench);
    EXPECT_EQ(detect_kind(json{{"command", "simulate"}, {"result", run_result(2)}}), ResultKind::Simulate);
    EXPECT_EQ(detect_kind(json{{"schema", "rtfkit.duplex/1"}, {"frames", json::array()}}), ResultKind::DuplexRun);
    EXPECT_EQ(detect_kind(json{{"schema", "rtfkit.duplex-report/1"}}), ResultKind::Duplex);
    EXPECT_EQ(detect_kind(json{{"schema", "rtfkit.load/1"}}), ResultKind::Load);
    EXPECT_EQ(detect_kind(json{{"schema", "rtfkit.tune/1"}}), ResultKind::Tune);
    EXPECT_EQ(detect_kind(json{{"schema", "rtfkit.predict/1"}}), ResultKind::Predict);
    for (const json &bad : {json(nullptr), json::array(), json{{"x", 1}}, json{{"schema", "rtfkit.bench/9"}, {"configs", json::array()}},
                            json{{"schema", "rtfkit.nope/1"}}, json{{"schema", "rtfkit.duplex/1"}}}) {
        try {
            render_html(bad, "bad.json");
            FAIL() << "accepted " << bad.dump();
        } catch (const rtf::Error &e) {
            EXPECT_EQ(e.kind(), rtf::ErrorKind::Usage);
            EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
        }
    }
    // Not a result: the message lists every kind README's `rtf report` row names.
    try {
        detect_kind(json{{"x", 1}}, "x.json");
        FAIL() << "accepted";
    } catch (const rtf::Error &e) {
        const std::string m = e.what();
        for (const char *k : {"rtf speak", "rtf simulate", "rtf bench", "rtf load", "rtf duplex (rtfkit.duplex/1)",
                              "rtf duplex-report", "rtf tune", "rtf predict", "--history"})
            EXPECT_NE(m.find(k), std::string::npos) << k << " missing from: " << m;
    }
    EXPECT_EQ(format_for_path("r.HTML"), Format::Html);
    EXPECT_EQ(format_for_path("r.md"), Format::Markdown);
    EXPECT_THROW(format_for_path("r.txt"), rtf::Error);
    EXPECT_THROW(parse_format("pdf"), rtf::Error);
}

TEST(Report, ScriptInPromptRendersAsText) {
    auto doc = speak_doc(3, kEvil);
    doc["run"]["stages"][0]["name"] = "<b>llm</b>";  // reaches SVG text and tooltips
    doc["metrics"]["rtf_stage.<b>llm</b>"] = 0.2;
    std::string h = render_html(doc, "<evil>.json");
    EXPECT_EQ(count(h, "<script"), 2u) << "only the report's own two scripts";
    EXPECT_EQ(h.find("<img"), std::string::npos);
    EXPECT_EQ(h.find("<b>llm"), std::string::npos);
    EXPECT_EQ(h.find("<evil>"), std::string::npos);
    EXPECT_NE(h.find("&lt;script&gt;document.documentElement.setAttribute(&#39;data-pwned&#39;"), std::string::npos);
    EXPECT_NE(h.find("&lt;b&gt;llm&lt;/b&gt;"), std::string::npos);
    EXPECT_NE(h.find("default-src 'none'"), std::string::npos);
    expect_balanced(h);
    std::string md = render_markdown(doc);
    EXPECT_EQ(unescaped_tag(md), std::string::npos) << md.substr(unescaped_tag(md), 40);
    EXPECT_NE(md.find("\\<script>document.documentElement.setAttribute('data-pwned','1')\\</script>\\<img"),
              std::string::npos) << md;
    EXPECT_EQ(md.find("&lt;"), std::string::npos);
}

TEST(Report, OneChunk) {
    auto doc = speak_doc(1);
    std::string h = render_html(doc);
    expect_balanced(h);
    EXPECT_EQ(count(h, "reached the sink at"), 1u);
    EXPECT_NE(h.find("REAL TIME"), std::string::npos);
    std::string md = render_markdown(doc);
    EXPECT_NE(md.find("1 chunk(s)"), std::string::npos);
    EXPECT_NE(md.find("| 0 | 150.0 | 200 | 0.750 | 50.0 | 50.0 | 50.0 |"), std::string::npos) << md;
}

TEST(Report, FiveHundredChunks) {
    auto doc = speak_doc(500);
    std::string h = render_html(doc);
    expect_balanced(h);
    EXPECT_EQ(count(h, "reached the sink at"), 500u) << "every chunk has its Gantt row";
    EXPECT_LT(h.size(), 4u * 1024 * 1024);
    std::string md = render_markdown(doc);
    EXPECT_NE(md.find("The 10 slowest chunks"), std::string::npos);
    EXPECT_NE(md.find("500 chunk(s)"), std::string::npos);
    // Gantt rows are capped for very long runs and say so.
    auto big = speak_doc(700);
    EXPECT_NE(render_html(big).find("showing the first 600 of 700 chunks"), std::string::npos);
}

TEST(Report, ChunkMaths) {
    RunView v = run_view(run_result(3));
    ASSERT_EQ(v.chunks.size(), 3u);
    EXPECT_DOUBLE_EQ(v.chunks[0].arrival_ms, 150);  // relative to t0
    auto pace = chunk_rtf(v), cum = cumulative_rtf(v);
    EXPECT_DOUBLE_EQ(pace[0], 150.0 / 200);
    EXPECT_DOUBLE_EQ(pace[1], 150.0 / 200);
    EXPECT_DOUBLE_EQ(cum[2], 450.0 / 600);
    EXPECT_DOUBLE_EQ(v.gaps.at(0).start_ms, 350);
    ASSERT_TRUE(v.chunks[1].stages[2].has_value());
    EXPECT_DOUBLE_EQ(v.chunks[1].stages[2]->start_ms, 250);
    EXPECT_DOUBLE_EQ(v.stages[0].rtf_stage, 0.25);
}

TEST(Report, Ticks) {
    auto t = nice_ticks(0, 1.0, 5);
    ASSERT_FALSE(t.empty());
    EXPECT_DOUBLE_EQ(t.front(), 0);
    EXPECT_NEAR(t.back(), 1.0, 1e-12);
    EXPECT_EQ(tick_label(0.2, 0.2), "0.2");
    EXPECT_TRUE(nice_ticks(NAN, 1).empty());
    EXPECT_FALSE(nice_ticks(3, 3).empty());
}

TEST(Report, MissingSections) {
    // Bare minimum: metrics and run are empty objects.
    json bare = {{"metrics", json::object()}, {"run", json::object()}};
    std::string h = render_html(bare);
    expect_balanced(h);
    EXPECT_NE(h.find("NO AUDIO"), std::string::npos);
    EXPECT_NE(h.find("no per-chunk records"), std::string::npos);
    EXPECT_FALSE(render_markdown(bare).empty());
    // Not profiled: arrivals only.
    auto unprof = speak_doc(4);
    unprof.merge_patch(json{{"run", run_result(4, false)["run"]}});
    EXPECT_NE(render_html(unprof).find("not profiled"), std::string::npos);
    // Bench without samples, comparison or leverage; nulls in place of numbers.
    auto c = bench_config("16", 0.5);
    c["leverage"] = json::array();
    c["summary"]["rtf"]["median"] = nullptr;
    c.erase("warnings");
    auto doc = bench_doc({c});
    doc.erase("machine");
    std::string hb = render_html(doc);
    expect_balanced(hb);
    EXPECT_EQ(hb.find("A/B comparison"), std::string::npos);
    EXPECT_NE(hb.find("No device samples"), std::string::npos);
    EXPECT_NE(hb.find("No leverage table"), std::string::npos);
    EXPECT_NE(hb.find("aggregates only"), std::string::npos);
    EXPECT_FALSE(render_markdown(doc).empty());
    // Every run failed: no figures at all.
    auto f = bench_config("x", 0.5);
    for (auto &r : f["runs"]) {
        r = {{"index", 0}, {"warmup", false}, {"ok", false}, {"error", "stage t2w failed: boom"}};
    }
    f["summary"] = json::object();
    std::string hf = render_html(bench_doc({f}));
    expect_balanced(hf);
    EXPECT_NE(hf.find("every run failed"), std::string::npos);
    EXPECT_NE(hf.find("failed: stage t2w failed: boom"), std::string::npos);
}

TEST(Report, FailedQualityGate) {
    auto doc = bench_doc({bench_config("1", 0.5, true)});
    std::string h = render_html(doc);
    expect_balanced(h);
    EXPECT_NE(h.find("exit 3: incomplete or invalid"), std::string::npos);
    EXPECT_NE(h.find(">INVALID</span>"), std::string::npos);
    EXPECT_NE(h.find("quality gate FAILED: token loop: &lt;&lt;&lt;?!?&gt;&gt;&gt;"), std::string::npos);
    EXPECT_NE(h.find("not counted (failed run or quality gate)"), std::string::npos);
    std::string md = render_markdown(doc);
    EXPECT_NE(md.find("**INVALID**: run 1: quality gate failed"), std::string::npos) << md;
    EXPECT_NE(md.find("| FAILED | quality gate FAILED"), std::string::npos) << md;
}

TEST(Report, AbWithSamplesAndRunRecord) {
    json cmp = {{"a", "A: d1=1"}, {"b", "B: d1=16"}, {"rtf_verdict", "B faster by 0.2 (beyond noise 0.03)"},
                {"significance", {{"note", "3 runs: no significance test"}}}, {"knob_diffs", {"d1: 1 -> 16"}},
                {"notes", json::array()},
                {"metrics", {{{"metric", "rtf"}, {"a", 0.7}, {"b", 0.5}, {"delta", -0.2}, {"ratio", 0.71}},
                             {{"metric", "rtf_steady"}, {"a", 0.51}, {"b", 0.5}, {"delta", -0.01}, {"ratio", 0.98}}}}};
    auto b = bench_config("B: d1=16", 0.5, false, true);
    b["runs"][3]["run"] = run_result(5)["run"];  // a bench run carrying its record
    auto doc = bench_doc({bench_config("A: d1=1", 0.7), b}, cmp);
    std::string h = render_html(doc);
    expect_balanced(h);
    EXPECT_NE(h.find("A/B comparison"), std::string::npos);
    EXPECT_NE(h.find("B: d1=16: noise band median +- 0.030"), std::string::npos);
    EXPECT_NE(h.find("duty cycle 50 % of samples active"), std::string::npos);
    EXPECT_EQ(h.find("cpu0 \xE2\x80\x94 duty"), std::string::npos) << "per-core rows are not charted";
    EXPECT_NE(h.find("Run detail: B: d1=16"), std::string::npos);
    EXPECT_NE(h.find("Test CPU &lt;x86&gt;"), std::string::npos);
    EXPECT_NE(h.find("h&amp;h"), std::string::npos);
    std::string md = render_markdown(doc);
    EXPECT_NE(md.find("### A/B comparison"), std::string::npos);
    EXPECT_NE(md.find("| rtf | 0.700 | 0.500 | -0.200 | 0.710 |"), std::string::npos) << md;
    EXPECT_NE(md.find("device.cpu.duty\\_cycle: median 0.500"), std::string::npos);
    EXPECT_NE(md.find("#### Run detail"), std::string::npos);
}

TEST(Report, MarkdownContent) {
    auto doc = speak_doc(12);
    std::string md = render_markdown(doc, "r.json");
    EXPECT_NE(md.find("## rtfkit report — speak (r.json)"), std::string::npos);
    EXPECT_NE(md.find("**REAL TIME**: rtf 0.750"), std::string::npos) << md;
    EXPECT_NE(md.find("| tts | 0.250 | 600.0 | 1.0 | 2.0 | CPU | 50.0 | 50.0 | 50.0 |"), std::string::npos) << md;
    EXPECT_NE(md.find("| t2w.vocoder\\_ms | 30.0"), std::string::npos) << md;
    EXPECT_NE(md.find("\xE2\x96"), std::string::npos) << "sparkline";
    EXPECT_NE(md.find("config.input.prompt"), std::string::npos);
    auto bench = bench_doc({bench_config("1", 1.2)});
    std::string mb = render_markdown(bench);
    EXPECT_NE(mb.find("**Exit 2: a target was missed**"), std::string::npos) << mb;
    EXPECT_NE(mb.find("(**MISSED**)"), std::string::npos);
    EXPECT_NE(mb.find("| 1 | tts | 0.430 | 0.300 | ? | 1.000 (upper bound) |"), std::string::npos) << mb;
    EXPECT_NE(mb.find("| 2 | t2w | 0.430 | 0.300 | 0.150 | 0.500 | \xE2\x96\x88\xE2\x96\x88\xE2\x96\x88\xE2\x96\x88\xE2\x96\x88 0.210 | 4 runtime | threads |"),
              std::string::npos) << mb;
    EXPECT_NE(mb.find("Test CPU \\<x86>"), std::string::npos);
    EXPECT_NE(mb.find("targets rtf <= 1.000, first_audio_ms <= off, gapless_start_ms <= off, starvation <= 0"), std::string::npos) << mb;
    // The summary table: one row per config, knobs as columns.
    EXPECT_NE(mb.find("| config | d1 | verdict | rtf median [min, max] (MAD) | rtf_steady | first_audio_ms | starvation | xrt |"),
              std::string::npos) << mb;
    EXPECT_NE(mb.find("| 0 | 1 | VALID (exit 2) | 1.200 [1.190, 1.220] (0.010) | n/a | n/a | n/a | n/a | 0.100 | 0.300 | 0.300 |"),
              std::string::npos) << mb;
    EXPECT_NE(mb.find("### Config 0: `1` — VALID, TARGET MISSED"), std::string::npos) << mb;
}

TEST(Report, BenchStringsAreEscapedInEveryTable) {
    auto c = bench_config("a|b`c", 0.5);
    std::string mb = render_markdown(bench_doc({c}));
    EXPECT_NE(mb.find("| 0 | a\\|b\\`c | VALID (exit 0) |"), std::string::npos) << mb;
    EXPECT_NE(mb.find("### Config 0: `a\\|b\xE2\x80\x98" "c` — VALID, all targets met"), std::string::npos) << mb;
    EXPECT_NE(mb.find("| 1 | tts | 0.430 | 0.300 | ? | 1.000 (upper bound) | \xE2\x96\x88"), std::string::npos) << mb;
    EXPECT_NE(mb.find("overlap \\<it> |"), std::string::npos) << mb;
}

TEST(Report, Csv) {
    auto doc = bench_doc({bench_config("1", 1.2), bench_config("x,\"y\"", 0.5)});
    std::string csv = render_csv(doc);
    EXPECT_EQ(csv.substr(0, csv.find('\n')),
              "label,d1,verdict,exit_code,runs_counted,rtf_median,rtf_min,rtf_max,rtf_mad,rtf_steady,first_audio_ms,"
              "starvation.count,xrt,bound_overlap,bound_serial,pipeline_efficiency,rtf_stage.llm,rtf_stage.t2w,rtf_stage.tts");
    EXPECT_NE(csv.find("\n1,1,VALID,2,3,1.2000,1.1900,1.2200,0.0100,n/a,"), std::string::npos) << csv;
    EXPECT_NE(csv.find("\n\"x,\"\"y\"\"\",\"x,\"\"y\"\"\",VALID,0,"), std::string::npos) << csv;
    try {
        render_csv(speak_doc(2));
        FAIL() << "CSV of a speak result";
    } catch (const rtf::Error &e) {
        EXPECT_EQ(e.kind(), rtf::ErrorKind::Usage);
    }
}

TEST(Report, SimulateResult) {
    json doc = {{"command", "simulate"}, {"simulate", {{"chunks", 8}}}, {"pipeline", {{"d1", 16}}}, {"result", run_result(8)}};
    std::string h = render_html(doc);
    expect_balanced(h);
    EXPECT_NE(h.find("rtfkit report \xE2\x80\x94 simulate"), std::string::npos);
    EXPECT_EQ(count(h, "reached the sink at"), 8u);
}

// An `rtf duplex` result (rtfkit.duplex/1): the HTML page is its analysis plus the session
// timeline (one bar per frame, chunk marks, playback with the gap the analyzer's [5] sees);
// the Markdown is the analysis's; strings from the JSON are escaped.
TEST(Report, DuplexRunTimeline) {
    json frames = json::array();
    for (int i = 0; i < 4; ++i)
        frames.push_back({{"frame_id", i}, {"t_push_ms", 100.0 * i}, {"t_done_ms", 100.0 * i + 40}, {"ok", i != 3},
                          {"is_speak", i == 1 || i == 2}});
    // turn 0: chunk 1 ready at 300 ms plays 300..500, chunk 2 ready at 700 ms -> a 200 ms gap
    json chunks = json::array({{{"t_complete_ms", 300.0}, {"duration_s", 0.2}, {"is_final", false}, {"audio_turn_id", 0}},
                               {{"t_complete_ms", 700.0}, {"duration_s", 0.1}, {"is_final", true}, {"audio_turn_id", 0}}});
    json doc = {{"schema", "rtfkit.duplex/1"},
                {"meta", {{"stream_interval_ms", 100}, {"decision", "forced"}, {"speak_frames", "1-2<b>"}}},
                {"frames", frames},
                {"audio_chunks", chunks},
                {"stages", json::array({{{"name", "llm"}, {"busy_ms", 160.0}, {"utilization", 0.2}}})},
                {"binding_stage", "llm"},
                {"completed", false},
                {"error", "stage 'tts' failed: <boom>"},
                {"analysis",
                 {{"schema", "rtfkit.duplex-report/1"},
                  {"verdict", "fail"},
                  {"summary", "a check failed"},
                  {"options", {{"startup_buffer_ms", 0}}},
                  {"checks", json::array({{{"id", "decision_latency"}, {"state", "PASS"}, {"rule", "P95 < 100"}},
                                          {{"id", "no_failed_frames"}, {"state", "FAIL"}, {"rule", "1 of 4 failed"}}})},
                  {"turns", {{"speak", 1}, {"audio", 1}}}}}};
    const std::string h = render_html(doc, "r.json");
    EXPECT_NE(h.find("Timeline"), std::string::npos);
    EXPECT_NE(h.find("<svg"), std::string::npos);
    EXPECT_NE(h.find("frame 3: pushed 300.0 ms, done 340.0 ms (FAILED)"), std::string::npos);
    EXPECT_NE(h.find("playback gap 200.0 ms"), std::string::npos);
    EXPECT_NE(h.find("no_failed_frames"), std::string::npos);
    EXPECT_NE(h.find("Incomplete run: stage &#39;tts&#39; failed: &lt;boom&gt;"), std::string::npos) << h.substr(0, 3000);
    EXPECT_EQ(h.find("<boom>"), std::string::npos);
    EXPECT_EQ(h.find("1-2<b>"), std::string::npos);
    EXPECT_EQ(detect_kind(doc), ResultKind::DuplexRun);
    // Its Markdown (the analysis, what `rtf duplex` prints on the terminal) has no HTML
    // entities: rules with '<' and apostrophes read as written (issue 29 §3.1).
    doc["analysis"]["checks"][0]["rule"] = "P95 40 ms < interval 100 ms; every turn's TTS RTF < 1";
    const std::string md = render_markdown(doc, "r.json");
    EXPECT_NE(md.find("duplex-report: FAIL"), std::string::npos);
    EXPECT_NE(md.find("| P95 40 ms < interval 100 ms; every turn's TTS RTF < 1 |"), std::string::npos) << md;
    for (const char *entity : {"&lt;", "&gt;", "&#39;", "&\\#39;", "&amp;", "&quot;"})
        EXPECT_EQ(md.find(entity), std::string::npos) << entity << " in " << md;
}
