// tune::tune on the mock workload (exact, no real work): the planted checks of the issue —
// a knob that helps by 10 % is kept, one that helps by 1 % is rejected as noise, a faster
// one that fails a quality gate is rejected with that reason, a helpful knob two layers
// down is tried only after the helpful one above it, math-changing candidates need the
// opt-in, the budget skips what does not fit — and tuned.json round-trips through the speak
// knob loader that `rtf speak --config` uses.
#include <fstream>
#include <memory>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "tune/tune.h"
#include "bench/workload.h"
#include "common/scratch-dir.h"
#include "core/error.h"
#include "speak/family.h"
#include "speak/knobs.h"

using namespace rtf;
using namespace rtf::bench;
using namespace rtf::tune;

namespace {
TuneConfig quick() {
    TuneConfig c;
    c.pc.runs = 5;
    c.pc.warmup = 0;
    c.pc.targets.rtf = std::numeric_limits<double>::quiet_NaN();
    return c;
}
const TuneTrial &trial(const TuneResult &r, const std::string &knob, const std::string &value) {
    for (const auto &t : r.trials)
        if (t.cand.knob == knob && t.cand.value == value) return t;
    throw std::runtime_error("no trial " + knob + "=" + value);
}
}  // namespace

TEST(Tune, KeepsRealWinsOnlyTopLayerFirst) {
    std::vector<TuneCandidate> c = {
        TuneCandidate::parse("operators:rtf=0.40", "c"),     // helps, two layers below
        TuneCandidate::parse("pipeline:rtf=0.495", "c"),     // helps by 1 %: noise (tried first: same layer, given order)
        TuneCandidate::parse("pipeline:rtf=0.45", "c"),      // helps by 10 %
        TuneCandidate::parse("types:quality=fail", "c"),     // "faster" but fails its gate
    };
    auto r = tune::tune(find_workload("mock"), {}, c, quick());
    EXPECT_EQ(trial(r, "rtf", "0.45").verdict, "kept");
    EXPECT_EQ(trial(r, "rtf", "0.495").verdict, "within noise");
    EXPECT_EQ(trial(r, "quality", "fail").verdict, "failed gate");
    EXPECT_NE(trial(r, "quality", "fail").reason.find("quality gate"), std::string::npos);
    EXPECT_LT(trial(r, "rtf", "0.45").index, trial(r, "rtf", "0.40").index);  // the layer above first
    EXPECT_EQ(trial(r, "rtf", "0.40").verdict, "kept");
    EXPECT_NEAR(r.base_rtf, 0.5, 0.01);
    EXPECT_NEAR(r.best_rtf, 0.4, 0.01);
    ASSERT_EQ(r.descent.size(), 3u);  // baseline, 0.45, 0.40
    EXPECT_NEAR(r.gain, 0.8, 0.01);   // 0.45/0.5 x 0.40/0.45
    EXPECT_NEAR(r.descent[2].cumulative, r.gain, 1e-12);
    EXPECT_EQ(*knob_value(r.changes, "rtf"), "0.40");
    EXPECT_EQ(knob_value(r.changes, "quality"), nullptr);
}

// The confirmation pair: a change whose win was one lucky pair (here the first workload made
// with lucky=1 runs at 0.4, every later one at 0.5 like the baseline) is kept by its trial, then
// dropped when the starting and tuned knobs meet again; a real win (rtf=0.45) is confirmed.
TEST(Tune, TheConfirmationPairDropsALuckyWin) {
    auto made = std::make_shared<int>(0);
    WorkloadInfo lucky = find_workload("mock");
    lucky.make = [made](const Knobs &knobs) {
        Knobs k;
        bool is_lucky = false;
        for (const auto &[n, v] : knobs) {
            if (n == "lucky") is_lucky = v == "1";
            else set_knob(k, n, v);
        }
        set_knob(k, "rtf", is_lucky && (*made)++ == 0 ? "0.4" : "0.5");
        return find_workload("mock").make(k);
    };
    auto r = tune::tune(lucky, {}, {TuneCandidate::parse("pipeline:lucky=1", "c")}, quick());
    EXPECT_EQ(r.trials.at(0).verdict, "kept");
    EXPECT_EQ(r.confirmation.verdict, "not confirmed");
    EXPECT_TRUE(r.changes.empty());
    EXPECT_EQ(*knob_value(r.unconfirmed, "lucky"), "1");
    EXPECT_EQ(knob_value(r.best, "lucky"), nullptr);
    EXPECT_DOUBLE_EQ(r.gain, 1.0);
    EXPECT_NE(r.stop_reason.find("not confirmed"), std::string::npos) << r.stop_reason;
    EXPECT_TRUE(tuned_config(r).empty());
    EXPECT_EQ(to_json(r)["unconfirmed_changes"]["lucky"], "1");
    // a real win stands, and the pair says so
    auto real = tune::tune(find_workload("mock"), {}, {TuneCandidate::parse("pipeline:rtf=0.45", "c")}, quick());
    EXPECT_EQ(real.confirmation.verdict, "confirmed");
    EXPECT_NEAR(real.confirmation.b_rtf, 0.45, 1e-9);
    EXPECT_EQ(*knob_value(real.changes, "rtf"), "0.45");
    // off: no pair, the trial's word stands
    auto cfg = quick();
    cfg.confirm = false;
    *made = 0;
    auto off = tune::tune(lucky, {}, {TuneCandidate::parse("pipeline:lucky=1", "c")}, cfg);
    EXPECT_EQ(off.confirmation.verdict, "");
    EXPECT_EQ(*knob_value(off.changes, "lucky"), "1");
}

TEST(Tune, MathChangesNeedTheOptInAndTheBudgetIsKept) {
    auto m = TuneCandidate::parse("types:rtf=0.3", "c");
    m.changes_math = true;
    auto r = tune::tune(find_workload("mock"), {}, {m}, quick());
    EXPECT_EQ(r.trials.at(0).verdict, "skipped (changes the math)");
    auto cfg = quick();
    cfg.allow_math = true;
    r = tune::tune(find_workload("mock"), {}, {m}, cfg);
    EXPECT_EQ(r.trials.at(0).verdict, "kept");
    EXPECT_TRUE(r.fidelity_unverified);
    // target reached: later candidates are skipped, and the stop reason says so
    cfg.target_rtf = 0.35;
    r = tune::tune(find_workload("mock"), {}, {m, TuneCandidate::parse("pipeline:rtf=0.2", "c")}, cfg);
    EXPECT_EQ(r.trials.at(1).verdict, "skipped (target reached)");
    EXPECT_NE(r.stop_reason.find("target reached"), std::string::npos);
    EXPECT_THROW(TuneCandidate::parse("nolayer=1", "c"), Error);
    EXPECT_THROW(TuneCandidate::parse("9:rtf=1", "c"), Error);
    auto bad = quick();
    bad.pc.runs = 2;
    EXPECT_THROW(tune::tune(find_workload("mock"), {}, {}, bad), Error);
    // The budget: a trial whose estimated cost (the largest trial so far) does not fit in what
    // is left is skipped, and so is a confirmation pair that does not fit. A mock whose every
    // workload takes 40 ms to make (two per trial: >= 80 ms a trial) under a 50 ms budget: the
    // first trial runs (nothing spent, no estimate yet), the second does not fit, nor does the
    // pair; the same candidates under a roomy budget all run.
    WorkloadInfo slow = find_workload("mock");
    slow.make = [](const Knobs &k) {
        std::this_thread::sleep_for(std::chrono::milliseconds(40));
        return find_workload("mock").make(k);
    };
    const std::vector<TuneCandidate> two = {TuneCandidate::parse("pipeline:rtf=0.45", "c"),
                                            TuneCandidate::parse("pipeline:rtf=0.40", "c")};
    auto tight = quick();
    tight.budget_s = 0.05;
    r = tune::tune(slow, {}, two, tight);
    ASSERT_EQ(r.trials.size(), 2u);
    EXPECT_EQ(r.trials[0].verdict, "kept");
    EXPECT_GE(r.trials[0].wall_s, 0.08);
    EXPECT_EQ(r.trials[1].verdict, "skipped (budget)") << r.trials[1].reason;
    EXPECT_NE(r.trials[1].reason.find("of the 0 s budget left"), std::string::npos) << r.trials[1].reason;
    EXPECT_EQ(r.confirmation.verdict, "skipped (budget)");
    EXPECT_EQ(*knob_value(r.changes, "rtf"), "0.45") << "the kept change stands, unconfirmed";
    EXPECT_EQ(r.stop_reason, "budget spent (trials skipped)");
    auto roomy = quick();
    roomy.budget_s = 600;
    r = tune::tune(slow, {}, two, roomy);
    ASSERT_EQ(r.trials.size(), 2u);
    EXPECT_EQ(r.trials[1].verdict, "kept");
    EXPECT_EQ(r.confirmation.verdict, "confirmed");
    EXPECT_EQ(r.stop_reason, "no candidate left");
}

TEST(Tune, TunedConfigRoundTripsThroughTheSpeakLoader) {
    TuneResult r;
    set_knob(r.changes, "d1", "4");
    set_knob(r.changes, "t2w-threads-voc", "1");
    set_knob(r.changes, "t2w-type-voc", "f16");
    test::ScratchDir t("tune");
    const std::string path = t.file("tuned.json");
    std::ofstream(path) << tuned_config(r).dump(2);
    speak::SpeakConfig cfg = speak::default_config();
    speak::apply_knob_file(cfg, path);
    const auto j = speak::knobs_json(cfg);
    EXPECT_EQ(j["d1"], "4");
    EXPECT_EQ(j["t2w-threads-voc"], "1");
    EXPECT_EQ(j["t2w-type-voc"], "f16");
}

// --objective: trials are judged by the objective's medians (lower is better) against its
// own noise floor, RTF reported beside them; "KEY=VALUE+KEY=VALUE" is one trial whose
// knobs are kept together.
TEST(Tune, ObjectiveJudgesTheTrialsAndABundleIsOneTrial) {
    const Knobs base = {{"first-audio-ms", "1000"}, {"rtf", "0.5"}};
    const std::vector<TuneCandidate> cands = {TuneCandidate::parse("pipeline:first-audio-ms=600+rtf=0.55", "c"),
                                              TuneCandidate::parse("pipeline:first-audio-ms=560", "c")};
    ASSERT_EQ(cands[0].with.size(), 1u);
    EXPECT_EQ(cands[0].label(), "first-audio-ms=600 + rtf=0.55");
    TuneConfig cfg = quick();
    cfg.objective = "first_audio_ms";
    auto r = tune::tune(find_workload("mock"), base, cands, cfg);
    ASSERT_EQ(r.trials.size(), 2u);
    const auto &t = r.trials[0];
    EXPECT_EQ(t.verdict, "kept") << t.reason;
    EXPECT_NEAR(t.a_value, 1000, 20);
    EXPECT_NEAR(t.b_value, 600, 20);
    EXPECT_NEAR(t.b_rtf, 0.55, 0.01);  // slower by RTF, better by the objective
    EXPECT_NE(t.reason.find("RTF 0.5"), std::string::npos) << t.reason;
    EXPECT_EQ(r.trials[1].verdict, "within noise") << r.trials[1].reason;  // 600 -> 560 ms: < 100 ms
    EXPECT_EQ(*knob_value(r.changes, "rtf"), "0.55");
    EXPECT_EQ(*knob_value(r.changes, "first-audio-ms"), "600");
    EXPECT_NEAR(r.gain, 0.6, 0.03);
    EXPECT_NEAR(r.rtf_gain, 1.1, 0.03);
    const auto j = to_json(r);
    EXPECT_EQ(j["objective"], "first_audio_ms");
    EXPECT_EQ(j["trials"][0]["change"], "first-audio-ms=600 + rtf=0.55");
    EXPECT_EQ(j["trials"][0]["with"]["rtf"], "0.55");
    EXPECT_NEAR(j["best_rtf_estimate"].get<double>(), 0.55, 0.02);
    // the same trials by RTF: the bundle is slower
    auto byrtf = tune::tune(find_workload("mock"), base, cands, quick());
    EXPECT_EQ(byrtf.trials[0].verdict, "slower");
    cfg.objective = "latency";
    EXPECT_THROW(cfg.validate(), Error);
    // a '+' inside a value that is not KEY=VALUE stays in the value
    EXPECT_EQ(TuneCandidate::parse("runtime:text=a+b", "c").value, "a+b");
}

TEST(Tune, SpeakCandidatesComeFromTheKnobTable) {
    auto c = speak_candidates({{"t2w-type-voc", "f16"}}, 2);
    ASSERT_FALSE(c.empty());
    int last_layer = -1;
    std::set<std::string> seen;
    for (const auto &x : c) {
        EXPECT_TRUE(seen.insert(x.knob + "=" + x.value).second) << "twice: " << x.knob << "=" << x.value;
        EXPECT_NE(speak::find_knob(x.knob), nullptr) << x.knob;
        EXPECT_FALSE(x.knob == "t2w-type-voc" && x.value == "f16");  // already the base's
        EXPECT_EQ(x.changes_math, speak::find_knob(x.knob)->changes_math) << x.knob;
        EXPECT_GE(x.layer, last_layer);
        last_layer = x.layer;
    }
    // the window ramp is tried with the short first window it ramps from, as one trial
    bool ramp = false;
    for (const auto &x : c) {
        if (x.knob != "t2w-ramp") continue;
        ramp = true;
        EXPECT_EQ(x.with, (std::vector<std::pair<std::string, std::string>>{{"t2w-first-window", "8"}}));
        EXPECT_TRUE(x.changes_math);
    }
    EXPECT_TRUE(ramp);
}

// A family kit (speak/family.h) is offered only the knobs its two stages read, on their stage
// names (gen, decoder); a MiniCPM-o kit none of the family-* knobs.
TEST(Tune, FamilyKitsGetTheirOwnCandidates) {
    std::set<std::string> fam, mini;
    for (const auto &x : speak_candidates({}, 2, "pocket-tts")) {
        fam.insert(x.knob);
        EXPECT_TRUE(speak::family_reads_knob(x.knob)) << x.knob;
        EXPECT_TRUE(x.stage.empty() || x.stage == "gen" || x.stage == "decoder") << x.knob << " on " << x.stage;
    }
    for (const auto &x : speak_candidates({}, 2)) mini.insert(x.knob);
    EXPECT_TRUE(fam.count("family-first-frames") && fam.count("family-frames") && fam.count("tts-threads") &&
                fam.count("t2w-threads-voc"));
    EXPECT_FALSE(fam.count("llm-threads") || fam.count("tts-weight-type") || fam.count("t2w-type-t2m") || fam.count("d2"));
    EXPECT_FALSE(mini.count("family-first-frames") || mini.count("family-frames"));
    EXPECT_TRUE(mini.count("llm-threads"));
    EXPECT_EQ(TuneCandidate::parse("pipeline:family-frames=4:decoder", "--candidate").stage, "decoder");
}
