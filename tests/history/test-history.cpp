// src/history: the SQLite store (append, filters, ids, the stored result), the identities
// (machine fingerprint ignores what varies run to run; a changed kit file changes the kit
// id), rows from bench/speak JSON, and the regression rule (noise floor, direction,
// significance when both sides have enough runs).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/scratch-dir.h"
#include "core/error.h"
#include "history/history.h"

using namespace rtf;
using history::Entry;

namespace {
Entry row(const std::string &label, double rtf, std::vector<double> runs = {}) {
    Entry e;
    e.created = "2026-01-01T00:00:00Z";
    e.kind = "bench";
    e.workload = "mock";
    e.label = label;
    e.machine_id = "m1";
    e.kit_id = "k1";
    e.knobs = {{"rtf", label}};
    e.metrics = {{"rtf", rtf}, {"xrt", 1.0 / rtf}};
    if (runs.empty()) runs = {rtf};
    e.runs = {{"rtf", runs}};
    return e;
}
}  // namespace

TEST(History, AppendListFilterAndGet) {
    test::ScratchDir t("history");
    history::History h(t.file("sub/h.db"));  // the folder is created
    const auto a = h.append(row("a", 0.5), {{"whole", 1}});
    const auto b = h.append(row("b", 0.6), {{"whole", 2}});
    auto c = row("c", 0.7);
    c.machine_id = "m2";
    h.append(c, {});
    EXPECT_LT(a, b);
    EXPECT_EQ(h.list().size(), 3u);
    history::Filter f;
    f.machine_id = "m1";
    EXPECT_EQ(h.list(f).size(), 2u);
    f.knob = "rtf=b";
    ASSERT_EQ(h.list(f).size(), 1u);
    EXPECT_EQ(h.list(f)[0].id, b);
    history::Filter lim;
    lim.limit = 1;
    ASSERT_EQ(h.list(lim).size(), 1u);
    EXPECT_EQ(h.list(lim)[0].label, "c");  // the newest
    auto got = h.get(a);
    ASSERT_TRUE(got.has_value());
    EXPECT_DOUBLE_EQ(got->metrics["rtf"].get<double>(), 0.5);
    EXPECT_EQ(h.result(b)["whole"], 2);
    EXPECT_FALSE(h.get(999).has_value());
    // reopening keeps everything
    history::History again(t.file("sub/h.db"));
    EXPECT_EQ(again.list().size(), 3u);
    history::Filter bad;
    bad.knob = "novalue";
    EXPECT_THROW(h.list(bad), Error);
}

TEST(History, NotADatabaseIsASetupError) {
    test::ScratchDir t("history");
    std::ofstream(t.file("junk.db")) << "this is not sqlite, just text long enough to look like a header........";
    try {
        history::History h(t.file("junk.db"));
        FAIL() << "opened a text file as a history";
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Setup);
        EXPECT_NE(std::string(e.what()).find("junk.db"), std::string::npos);
    }
}

TEST(History, RegressionRule) {
    auto base = row("base", 0.50, {0.50, 0.49, 0.51, 0.50, 0.50});
    base.id = 1;
    auto same = row("same", 0.51, {0.51, 0.50, 0.52, 0.51, 0.50});
    same.id = 2;
    auto slow = row("slow", 0.55, {0.55, 0.56, 0.55, 0.54, 0.55});  // 10 % slower
    slow.id = 3;
    auto c = history::check_regression(base, base, "rtf", 0.03);
    EXPECT_FALSE(c.regression);
    c = history::check_regression(base, same, "rtf", 0.03);
    EXPECT_FALSE(c.regression);  // within noise
    c = history::check_regression(base, slow, "rtf", 0.03);
    EXPECT_TRUE(c.regression) << c.verdict;
    EXPECT_NE(c.significance.find("Mann-Whitney"), std::string::npos);
    c = history::check_regression(slow, base, "rtf", 0.03);
    EXPECT_TRUE(c.improvement);
    EXPECT_FALSE(c.regression);
    // higher is better for xrt: the slow row's lower xrt is the regression
    c = history::check_regression(base, slow, "xrt", 0.01);
    EXPECT_TRUE(c.regression) << c.verdict;
    // worse beyond the noise but not significant: overlapping runs
    auto noisy = row("noisy", 0.56, {0.45, 0.70, 0.56, 0.40, 0.75});
    noisy.id = 4;
    c = history::check_regression(base, noisy, "rtf", 0.03);
    EXPECT_FALSE(c.regression) << c.verdict;
    EXPECT_THROW(history::check_regression(base, slow, "no_such_metric", 0.03), Error);
    EXPECT_TRUE(history::lower_is_better("first_audio_ms"));
    EXPECT_TRUE(history::lower_is_better("rtf_stage.t2w"));
    EXPECT_FALSE(history::lower_is_better("pipeline_efficiency"));
}

TEST(History, IdentitiesAndRows) {
    nlohmann::json m = {{"cpu", {{"cpu_model", "X"}, {"cores", 2}, {"pus", 2}}},
                        {"memory_bytes", 100},
                        {"hostname", "a"},
                        {"backend", {{"devices", {{{"name", "CPU"}, {"memory_free_bytes", 5}}}}}}};
    auto m2 = m;
    m2["hostname"] = "b";
    m2["backend"]["devices"][0]["memory_free_bytes"] = 7;
    EXPECT_EQ(history::machine_id(m), history::machine_id(m2));
    m2["cpu"]["cores"] = 4;
    EXPECT_NE(history::machine_id(m), history::machine_id(m2));

    test::ScratchDir t("history-kit");
    std::ofstream(t.file("a.gguf")) << "GGUF header one";
    const auto k1 = history::kit_id(history::kit_identity(t.dir.string()));
    std::ofstream(t.file("a.gguf")) << "GGUF header two";
    const auto k2 = history::kit_id(history::kit_identity(t.dir.string()));
    EXPECT_FALSE(k1.empty());
    EXPECT_NE(k1, k2);
    EXPECT_TRUE(history::kit_identity("").is_null());

    nlohmann::json bench = {{"workload", "mock"},
                            {"configs",
                             {{{"label", "A"},
                               {"knobs", {{"rtf", "0.5"}}},
                               {"summary", {{"rtf", {{"median", 0.5}}}, {"gone", {{"median", nullptr}}}}},
                               {"values", {{"rtf", {0.5, 0.51, nullptr}}}}},
                              {{"label", "B"}, {"summary", {{"rtf", {{"median", 0.6}}}}}}}}};
    auto rows = history::entries_from_bench(bench, "");
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].label, "A");
    EXPECT_DOUBLE_EQ(rows[0].metrics["rtf"].get<double>(), 0.5);
    EXPECT_FALSE(rows[0].metrics.contains("gone"));
    EXPECT_EQ(rows[0].runs["rtf"].size(), 2u);
    EXPECT_EQ(rows[1].workload, "mock");
    EXPECT_FALSE(rows[0].machine_id.empty());

    nlohmann::json speak = {{"metrics", {{"rtf", 1.5}, {"starvation", {{"count", 2}}}}},
                            {"first_audio", {{"parts", {{"llm_prefill_ms", 100.0}, {"t2w_wait_ms", nullptr}}}}}};
    auto s = history::entry_from_speak(speak, {{"d1", "4"}}, "");
    EXPECT_EQ(s.kind, "speak");
    EXPECT_DOUBLE_EQ(s.metrics["starvation.count"].get<double>(), 2);
    EXPECT_DOUBLE_EQ(s.metrics["first_audio.llm_prefill_ms"].get<double>(), 100);
    EXPECT_FALSE(s.metrics.contains("first_audio.t2w_wait_ms"));
    EXPECT_EQ(s.knobs["d1"], "4");
}

// A tune for the listener's number keeps RTF's figures as they were (rtf, rtf_base, gain)
// and adds its objective's baseline and estimate under the objective's name.
TEST(History, TuneForAnotherObjectiveKeepsBothFigures) {
    nlohmann::json tune = {{"workload", "speak"}, {"objective", "gapless_start_ms"}, {"changes", {{"t2w-ramp", "11,15,21"}}},
                           {"base_rtf", 0.8}, {"best_rtf_estimate", 0.88}, {"rtf_gain", 1.1}, {"gain", 0.75},
                           {"base_value", 2000.0}, {"best_value_estimate", 1500.0}};
    const auto e = history::entry_from_tune(tune, "");
    EXPECT_DOUBLE_EQ(e.metrics["rtf"].get<double>(), 0.88);
    EXPECT_DOUBLE_EQ(e.metrics["rtf_base"].get<double>(), 0.8);
    EXPECT_DOUBLE_EQ(e.metrics["gain"].get<double>(), 1.1);
    EXPECT_DOUBLE_EQ(e.metrics["gapless_start_ms"].get<double>(), 1500.0);
    EXPECT_DOUBLE_EQ(e.metrics["gapless_start_ms_base"].get<double>(), 2000.0);
    EXPECT_DOUBLE_EQ(e.metrics["objective_gain"].get<double>(), 0.75);
    // no profile recorded: the row holds only the kept changes, and its label says so
    EXPECT_EQ(e.knobs, nlohmann::json({{"t2w-ramp", "11,15,21"}}));
    EXPECT_EQ(e.label, history::kTunedChangesLabel);
    // the row's knobs: the profile the tune started from, the kept changes over it
    tune["profile_knobs"] = {{"tts-weight-type", "q8_0"}, {"t2w-ramp", "off"}};
    const auto complete = history::entry_from_tune(tune, "");
    EXPECT_EQ(complete.knobs, nlohmann::json({{"tts-weight-type", "q8_0"}, {"t2w-ramp", "11,15,21"}}));
    EXPECT_EQ(complete.label, history::kTunedConfigLabel);
}

// `--profile auto` reads the newest tune row of this machine for this kit, and only that
// (issue 30 §3: a tuned result overrides the built-in defaults for its own machine and kit).
TEST(History, LatestTuneIsThisMachinesAndThisKits) {
    test::ScratchDir t("history-tune");
    std::filesystem::create_directories(t.file("kit1"));
    std::filesystem::create_directories(t.file("kit2"));
    std::ofstream(t.file("kit1/a.gguf")) << "GGUF kit one";
    std::ofstream(t.file("kit2/a.gguf")) << "GGUF kit two";
    const std::string kit1 = t.file("kit1"), kit2 = t.file("kit2");
    history::History h(t.file("h.db"));
    EXPECT_FALSE(history::latest_tune_for(h, kit1).has_value());
    nlohmann::json tune = {{"workload", "speak"}, {"changes", {{"tts-threads", "1"}}}, {"best_rtf_estimate", 0.9}};
    const auto first = h.append(history::entry_from_tune(tune, kit1), tune);
    tune["changes"] = {{"t2w-threads-voc", "1"}};
    const auto newest = h.append(history::entry_from_tune(tune, kit1), tune);
    // another machine's newer row for the same kit: never used here
    auto other = history::entry_from_tune(tune, kit1);
    other.machine_id = "0000000000000000";
    other.knobs = {{"d1", "2"}};
    h.append(other, tune);
    // a bench row is not a tune row
    auto bench = history::entry_from_speak({{"metrics", {{"rtf", 1.0}}}}, {{"d2", "3"}}, kit1);
    h.append(bench, {});
    auto got = history::latest_tune_for(h, kit1);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->id, newest);
    EXPECT_NE(got->id, first);
    EXPECT_EQ(got->knobs, nlohmann::json({{"t2w-threads-voc", "1"}}));
    EXPECT_FALSE(history::latest_tune_for(h, kit2).has_value());  // another kit
    EXPECT_FALSE(history::latest_tune_for(h, "").has_value());    // no kit matches nothing
    // the same kit with a changed file is another kit
    std::ofstream(t.file("kit1/a.gguf")) << "GGUF kit one, changed";
    EXPECT_FALSE(history::latest_tune_for(h, kit1).has_value());
}
