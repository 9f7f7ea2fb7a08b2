// The bench protocol on the deterministic mock workload (and the simulate workload on a
// virtual clock): verdicts, exit codes, warnings, sweeps, A/B order, compare, leverage,
// and that src/report renders what the protocol writes. No wall-clock assertions.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "bench/compare.h"
#include "bench/leverage.h"
#include "bench/protocol.h"
#include "bench/workload.h"
#include "core/error.h"
#include "report/report.h"

using namespace rtf;
using namespace rtf::bench;

namespace {
ConfigResult run_mock(const Knobs &k, ProtocolConfig pc = {}) { return run_config(find_workload("mock"), k, pc, nullptr); }
const RobustStats &stat(const ConfigResult &r, const std::string &m) {
    for (const auto &p : r.summary)
        if (p.first == m) return p.second;
    throw std::runtime_error("no metric " + m);
}
bool has_warning(const ConfigResult &r, const std::string &text) {
    for (const auto &w : r.warnings)
        if (w.find(text) != std::string::npos) return true;
    return false;
}
}  // namespace

TEST(Protocol, ValidAndTargetsMet) {
    auto r = run_mock({{"rtf", "0.5"}});
    EXPECT_TRUE(r.verdict.valid);
    EXPECT_TRUE(r.verdict.targets_met);
    EXPECT_EQ(r.verdict.exit_code, 0);
    // 1 warm-up + 5 measured runs; warm-up not counted: offsets {1,-1,0.5,-0.5,0} x 0.01
    EXPECT_EQ(r.runs.size(), 6u);
    const auto &s = stat(r, "rtf");
    EXPECT_EQ(s.n, 5);
    EXPECT_DOUBLE_EQ(s.median, 0.5);
    EXPECT_DOUBLE_EQ(s.min, 0.495);
    EXPECT_DOUBLE_EQ(s.max, 0.505);
    EXPECT_NEAR(s.mad, 0.0025, 1e-12);
    EXPECT_DOUBLE_EQ(stat(r, "starvation.count").median, 0);
    EXPECT_DOUBLE_EQ(stat(r, "rtf_stage.t2w").median, 0.25);
    EXPECT_TRUE(r.warnings.empty() || !has_warning(r, "spread")) << r.warnings.front();
}

TEST(Protocol, UnreachableTargetIsExit2) {
    auto r = run_mock({{"rtf", "1.5"}});
    EXPECT_TRUE(r.verdict.valid);
    EXPECT_FALSE(r.verdict.targets_met);
    EXPECT_EQ(r.verdict.exit_code, 2);
    ProtocolConfig pc;
    pc.targets.first_audio_ms = 200;  // mock gives 300 ms
    auto f = run_mock({{"rtf", "0.5"}}, pc);
    EXPECT_EQ(f.verdict.exit_code, 2);
    ASSERT_EQ(f.verdict.targets.size(), 3u);
    EXPECT_FALSE(f.verdict.targets[1].met);
    auto starv = run_mock({{"starvation", "2"}});
    EXPECT_EQ(starv.verdict.exit_code, 2);
}

TEST(Protocol, TooFewRunsIsExit3) {
    ProtocolConfig pc;
    pc.runs = 2;
    auto r = run_mock({}, pc);
    EXPECT_FALSE(r.verdict.valid);
    EXPECT_EQ(r.verdict.exit_code, 3);
    ASSERT_FALSE(r.verdict.reasons.empty());
    EXPECT_NE(r.verdict.reasons[0].find("at least 3"), std::string::npos);
}

TEST(Protocol, CrashedRunIsExit3EvenWhenEnoughRunsRemain) {
    ProtocolConfig pc;
    pc.runs = 6;
    auto r = run_mock({{"fail-run", "3"}}, pc);  // run index 3 overall = measured run 2
    EXPECT_FALSE(r.verdict.valid);
    EXPECT_EQ(r.verdict.exit_code, 3);
    EXPECT_NE(r.verdict.reasons[0].find("run 2 failed"), std::string::npos) << r.verdict.reasons[0];
    EXPECT_EQ(stat(r, "rtf").n, 5);
    auto w = run_mock({{"fail-run", "0"}});  // the warm-up crashes
    EXPECT_EQ(w.verdict.exit_code, 3);
    EXPECT_NE(w.verdict.reasons[0].find("warm-up run 0 failed"), std::string::npos);
}

TEST(Protocol, QualityGateFailureIsExit3AndNotCounted) {
    auto r = run_mock({{"quality", "fail"}});
    EXPECT_EQ(r.verdict.exit_code, 3);
    EXPECT_TRUE(r.summary.empty() || stat(r, "rtf").n == 0);
    auto skip = run_mock({{"quality", "skip"}});
    EXPECT_EQ(skip.verdict.exit_code, 0);
    EXPECT_TRUE(has_warning(skip, "quality gates"));
}

TEST(Protocol, OutlierAndSpreadWarnings) {
    auto r = run_mock({{"outlier-run", "3"}});
    EXPECT_TRUE(has_warning(r, "outlier: run 2 has rtf"));
    EXPECT_TRUE(has_warning(r, "spread"));
    EXPECT_EQ(r.verdict.exit_code, 0);  // warnings never change the exit code
    auto wide = run_mock({{"spread", "0.2"}});
    EXPECT_TRUE(has_warning(wide, "larger than the noise floor 0.030"));
    ProtocolConfig pc;
    pc.warmup = 0;
    EXPECT_TRUE(has_warning(run_mock({}, pc), "no warm-up"));
}

TEST(Protocol, BadConfigIsAUsageError) {
    ProtocolConfig pc;
    pc.runs = 0;
    EXPECT_THROW(pc.validate(), rtf::Error);
    try {
        run_mock({{"no-such-knob", "1"}});
        FAIL();
    } catch (const rtf::Error &e) {
        EXPECT_EQ(e.exit_code(), 1);
        EXPECT_NE(std::string(e.what()).find("no-such-knob"), std::string::npos);
    }
    EXPECT_THROW(find_workload("nope"), rtf::Error);
    EXPECT_THROW(parse_sweep("d1", "--sweep"), rtf::Error);
    EXPECT_THROW(parse_knob_list("=3", "--ab"), rtf::Error);
}

TEST(Sweep, CartesianProductInOrder) {
    auto s1 = parse_sweep("d1=1,16", "--sweep");
    auto s2 = parse_sweep("cost=llm=5ms,t2w=9ms;llm=5ms,t2w=4ms", "--sweep");
    ASSERT_EQ(s2.values.size(), 2u);
    EXPECT_EQ(s2.values[1], "llm=5ms,t2w=4ms");
    auto k = expand_sweeps({{"chunks", "3"}}, {s1, s2});
    ASSERT_EQ(k.size(), 4u);
    EXPECT_EQ(knobs_label(k[0]), "chunks=3 d1=1 cost=llm=5ms,t2w=9ms");
    EXPECT_EQ(knobs_label(k[3]), "chunks=3 d1=16 cost=llm=5ms,t2w=4ms");
}

namespace {
std::vector<std::string> g_order;
class OrderWorkload final : public Workload {
public:
    explicit OrderWorkload(const Knobs &k) : tag_(*knob_value(k, "tag")) {}
    std::string name() const override { return "order"; }
    nlohmann::json config() const override { return {{"tag", tag_}}; }
    RunOutput run_once() override {
        g_order.push_back(tag_);
        RunOutput r;
        r.metrics = {{"rtf", tag_ == "a" ? 0.5 : 0.4}, {"first_audio_ms", 100}, {"starvation", {{"count", 0}}}};
        return r;
    }

private:
    std::string tag_;
};
}  // namespace

TEST(AB, InterleavedOrderAndComparison) {
    register_workload({"order", "test", {"tag"}, [](const Knobs &k) { return std::make_unique<OrderWorkload>(k); }});
    ProtocolConfig pc;
    pc.runs = 3;
    g_order.clear();
    auto r = run_ab(find_workload("order"), {}, {{"tag", "a"}}, {{"tag", "b"}}, pc, nullptr);
    EXPECT_EQ(g_order, (std::vector<std::string>{"a", "b", "a", "b", "a", "b", "a", "b"}));
    auto c = compare_results(to_json(r.a), to_json(r.b), 0.03);
    EXPECT_NEAR(c.delta_rtf, -0.1, 1e-12);
    EXPECT_FALSE(c.within_noise);
    EXPECT_NE(c.rtf_verdict.find("B is faster"), std::string::npos);
    EXPECT_EQ(c.knob_diffs.size(), 1u);
    EXPECT_FALSE(c.test.possible);  // 3 vs 3 runs
}

TEST(Compare, OneGivenKnobWithItsEffectsIsOneChange) {
    // The speak workload records the knobs it was given (/knobs/...) and the effective
    // config they produce: one --ab knob appears twice in the diff but is one change.
    ProtocolConfig pc;
    pc.runs = 3;
    auto a = to_json(run_mock({{"rtf", "0.50"}}, pc));
    auto b = a;
    a["workload_config"] = {{"knobs", {{"schedule", "pipelined"}}}, {"pipeline", {{"schedule", "pipelined"}}}};
    b["workload_config"] = {{"knobs", {{"schedule", "sequential"}}}, {"pipeline", {{"schedule", "sequential"}}}};
    auto c = compare_results(a, b, 0.03);
    EXPECT_EQ(c.knob_diffs.size(), 2u);  // both listed
    for (const auto &n : c.notes) EXPECT_EQ(n.find("knobs differ"), std::string::npos) << n;
    b["workload_config"]["knobs"]["d1"] = "1";  // a second given knob: now two changes
    auto c2 = compare_results(a, b, 0.03);
    bool note = false;
    for (const auto &n : c2.notes) note = note || n.find("2 knobs differ") != std::string::npos;
    EXPECT_TRUE(note);
}

TEST(Compare, NoiseKnobsAndSignificance) {
    ProtocolConfig pc;
    pc.runs = 5;
    auto a = to_json(run_mock({{"rtf", "0.50"}}, pc));
    auto b = to_json(run_mock({{"rtf", "0.51"}}, pc));
    auto c = compare_results(a, b, 0.03);
    EXPECT_TRUE(c.within_noise);
    EXPECT_EQ(c.knob_diffs.size(), 1u);
    auto d = to_json(run_mock({{"rtf", "0.40"}, {"first-audio-ms", "200"}}, pc));
    auto c2 = compare_results(a, d, 0.03);
    EXPECT_FALSE(c2.within_noise);
    EXPECT_EQ(c2.knob_diffs.size(), 2u);
    bool note = false;
    for (const auto &n : c2.notes) note = note || n.find("2 knobs differ") != std::string::npos;
    EXPECT_TRUE(note);
    ASSERT_TRUE(c2.test.possible);  // 5 vs 5: exact test possible, fully separated
    EXPECT_TRUE(c2.test.significant);
    bool found = false;
    for (const auto &row : c2.rows) {
        if (row.metric != "rtf") continue;
        found = true;
        EXPECT_NEAR(row.ratio, 0.8, 1e-12);
    }
    EXPECT_TRUE(found);
    EXPECT_THROW(compare_results(nlohmann::json::object(), a, 0.03), rtf::Error);
    nlohmann::json doc = {{"schema", kSchema}, {"configs", nlohmann::json::array({a})}};
    EXPECT_EQ(select_config(doc, 0, "x.json")["label"], a["label"]);
    EXPECT_THROW(select_config(doc, 1, "x.json"), rtf::Error);
}

TEST(Leverage, RankedByShareTimesReducible) {
    // llm at its floor, tts 2x floor, t2w 4x floor; rtf 1.2 with bound_overlap 0.6.
    auto rows = leverage_table({{"llm", 0.2, 0.2}, {"tts", 0.2, 0.1}, {"t2w", 0.6, 0.15}, {"x", 0.0, -1}}, 1.2, 0.6);
    ASSERT_EQ(rows.size(), 5u);
    EXPECT_EQ(rows[0].what, "pipeline (overlap)");  // 1 - 0.6 / 1.2 = 0.5
    EXPECT_NEAR(rows[0].gain, 0.5, 1e-12);
    EXPECT_EQ(rows[0].layer, 3);
    EXPECT_EQ(rows[1].what, "t2w");  // share 0.6 x (1 - 0.15 / 0.6) = 0.45
    EXPECT_NEAR(rows[1].gain, 0.45, 1e-12);
    EXPECT_EQ(rows[1].layer, 1);
    auto find = [&](const std::string &w) {
        for (const auto &r : rows)
            if (r.what == w) return r;
        return LeverageRow{};
    };
    EXPECT_NEAR(find("tts").gain, 0.1, 1e-12);  // 0.2 x 0.5
    EXPECT_EQ(find("tts").layer, 1);
    EXPECT_NEAR(find("llm").gain, 0.0, 1e-12);
    EXPECT_EQ(find("llm").layer, 5);
    EXPECT_FALSE(find("x").floor_known);
    auto below = leverage_table({{"t2w", 0.1, 0.5}}, std::nan(""), std::nan(""));
    ASSERT_EQ(below.size(), 1u);  // no pipeline row without rtf
    EXPECT_EQ(below[0].layer, 0);
    EXPECT_EQ(below[0].layer_name, "check the floor");
}

TEST(Render, CsvAndMarkdownFromJson) {
    ProtocolConfig pc;
    auto r1 = run_mock({{"rtf", "0.5"}}, pc), r2 = run_mock({{"rtf", "1.5"}}, pc);
    auto doc = make_bench_json("mock", "sweep", pc, {&r1, &r2}, nullptr, nullptr);
    EXPECT_EQ(doc["schema"], kSchema);
    EXPECT_EQ(doc["exit_code"], 2);
    EXPECT_TRUE(doc["machine"].contains("cpu"));
    EXPECT_TRUE(doc["versions"].contains("llama_cpp"));
    EXPECT_FALSE(doc["created"].get<std::string>().empty());
    auto csv = rtf::report::render_csv(doc);
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
    EXPECT_NE(csv.find("label,rtf,verdict,exit_code"), std::string::npos) << csv;
    EXPECT_NE(csv.find("rtf=1.5,1.5,VALID,2"), std::string::npos) << csv;
    auto md = rtf::report::render_markdown(doc);
    EXPECT_NE(md.find("| 1 | 1.5 | VALID (exit 2) | 1.500 ["), std::string::npos) << "summary row of config 1\n" << md;
    EXPECT_NE(md.find("TARGET MISSED"), std::string::npos);
    EXPECT_NE(md.find("Leverage"), std::string::npos);
}

TEST(Render, ComparisonMarkdownFromCompare) {
    ProtocolConfig pc;
    auto a = to_json(run_mock({{"rtf", "0.50"}}, pc)), b = to_json(run_mock({{"rtf", "0.40"}}, pc));
    auto md = rtf::report::comparison_markdown(to_json(compare_results(a, b, 0.03, "a.json", "b.json")));
    EXPECT_NE(md.find("### A/B comparison"), std::string::npos) << md;
    EXPECT_NE(md.find("baseline A: `rtf=0.50`"), std::string::npos) << md;
    EXPECT_NE(md.find("Knobs that differ:"), std::string::npos) << md;
    EXPECT_NE(md.find("| rtf | 0.500 | 0.400 | -0.100 | 0.800 |"), std::string::npos) << md;
}

TEST(SimulateWorkload, VirtualClockExactAndForcedFailure) {
    ProtocolConfig pc;
    pc.runs = 3;
    Knobs k = {{"cost", "llm=10ms,tts=30ms,t2w=30ms"}, {"chunks", "5"}, {"clock", "virtual"}};
    auto r = run_config(find_workload("simulate"), k, pc, nullptr);
    ASSERT_EQ(r.verdict.exit_code, 0) << (r.verdict.reasons.empty() ? "" : r.verdict.reasons[0]);
    // pipelined: first chunk at 10+30+30 = 70 ms, then one every 30 ms: 70 + 4 x 30 = 190 ms / 5 s
    EXPECT_NEAR(stat(r, "rtf").median, 0.038, 1e-9);
    EXPECT_NEAR(stat(r, "first_audio_ms").median, 70, 1e-9);
    EXPECT_EQ(r.leverage.size(), 4u);
    set_knob(k, "fail", "t2w@2");
    auto f = run_config(find_workload("simulate"), k, pc, nullptr);
    EXPECT_EQ(f.verdict.exit_code, 3);
    EXPECT_NE(f.verdict.reasons[0].find("t2w"), std::string::npos) << f.verdict.reasons[0];
    EXPECT_THROW(run_config(find_workload("simulate"), {{"fail", "vocoder@1"}}, pc, nullptr), rtf::Error);
    EXPECT_THROW(run_config(find_workload("simulate"), {{"d1", "0"}}, pc, nullptr), rtf::Error);
}
