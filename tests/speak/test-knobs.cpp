// The speak knob table (speak/knobs.h): every knob round-trips through its text form,
// bad values name the flag, unknown names list the table, config files apply the same
// setters, and derived fields follow their knob.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "common/scratch-dir.h"
#include "speak/duplex-knobs.h"
#include "speak/knobs.h"

using namespace rtf;
using namespace rtf::speak;

namespace {
std::string scratch_file(const std::string &name, const std::string &content) {
    static rtf::test::ScratchDir scratch("knobs");  // removed at exit
    const std::string p = scratch.file(name);
    std::ofstream(p) << content;
    return p;
}
std::string usage_message(const std::function<void()> &f) {
    try {
        f();
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Usage);
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return {};
}
}  // namespace

TEST(Knobs, NamesAreUniqueAndDocumented) {
    std::set<std::string> seen;
    for (const auto &k : knob_table()) {
        EXPECT_TRUE(seen.insert(k.name).second) << k.name;
        EXPECT_FALSE(k.help.empty()) << k.name;
        EXPECT_FALSE(k.group.empty()) << k.name;
        EXPECT_TRUE(k.set && k.get) << k.name;
        EXPECT_EQ(find_knob(k.name), &k);
    }
    EXPECT_EQ(find_knob("no-such-knob"), nullptr);
}

// Issue 32: every row carries the facts its consumers derive their rules from (serve's
// request knobs and slot threads, rtf tune's candidates). A knob added without them fails
// here, and `fixed_at_load` is checked against what the engines are really built from.
TEST(Knobs, EveryKnobStatesItsFacts) {
    const auto &stages = knob_stages();
    for (const auto &k : knob_table()) {
        const KnobFacts &f = k.facts;
        EXPECT_NE(std::find(stages.begin(), stages.end(), f.stage), stages.end())
            << k.name << ": stage '" << f.stage << "' is not one of knob_stages()";
        if (f.thread_count) {
            EXPECT_EQ(k.unit, "threads") << k.name;
            EXPECT_NE(f.stage, "run") << k.name;
        }
        EXPECT_GE(f.tune_layer, -1) << k.name;
        EXPECT_LE(f.tune_layer, 4) << k.name;
        EXPECT_EQ(f.tune_layer >= 0, !f.tune_values.empty()) << k.name << ": a tuner layer needs candidate values";
        EXPECT_FALSE(k.input && f.tune_layer >= 0) << k.name << ": the input is never tuned";
        for (const auto &sym : f.tune_values) {  // each candidate is a value the setter takes
            const std::string v = sym == "cpus/2" ? "2" : sym == "first-cpu" ? "0" : sym == "last-cpu" ? "3" : sym;
            SpeakConfig c = default_config();
            EXPECT_NO_THROW(apply_knob(c, k.name, v)) << k.name << "=" << v;
        }
        // Fixed at load <=> some value the setter takes changes what the engines are built from.
        if (k.name == "prompt" || k.name == "text" || k.name == "text-file") continue;  // the request's own input
        std::vector<std::string> probes = k.allowed;
        for (const char *p : {"0", "1", "2", "3", "8", "12", "64", "100", "0.5", "true", "false", "CPU"}) probes.push_back(p);
        const SpeakConfig base = default_config();
        const auto ident = engines_json(base);
        bool changes = false;
        for (const auto &p : probes) {
            SpeakConfig c = base;
            try {
                apply_knob(c, k.name, p);
            } catch (const Error &) {
                continue;
            }
            changes = changes || engines_json(c) != ident;
        }
        EXPECT_EQ(f.fixed_at_load, changes) << k.name << ": fixed_at_load says " << f.fixed_at_load
                                            << ", the engines' config says " << changes;
    }
    // The derived lists: the six per-stage thread knobs; the tuner's and serve's rules.
    const auto threads = knobs_where([](const KnobDef &k) { return k.facts.thread_count; });
    EXPECT_EQ(threads, (std::vector<std::string>{"llm-threads", "llm-threads-batch", "tts-threads", "tts-threads-batch",
                                                 "t2w-threads-t2m", "t2w-threads-voc"}));
}

// get -> set gives the same config: the text form is complete (what --config files and
// `rtf tune` outputs rely on).
TEST(Knobs, EveryKnobRoundTripsItsDefault) {
    const SpeakConfig d = default_config();
    const nlohmann::json before = knobs_json(d);
    for (const auto &k : knob_table()) {
        if (k.name == "text-file") continue;  // reads a file; covered below
        SpeakConfig c = default_config();
        k.set(c, k.get(d));
        EXPECT_EQ(knobs_json(c), before) << k.name;
        EXPECT_EQ(c.to_json(), d.to_json()) << k.name;
    }
}

TEST(Knobs, SettersReachTheirFields) {
    SpeakConfig c = default_config();
    apply_knobs(c, {{"d1", "4"}, {"d2", "2"}, {"schedule", "sequential"}, {"no-cfg", "true"}, {"seed", "7"},
                    {"greedy", "1"}, {"min-audio-s", "2"}, {"llm-cpus", "0-1"}, {"t2w-threads-voc", "1"},
                    {"tts-kv-type", "q8_0"}, {"no-profile", "on"}, {"tts-poll", "0"}, {"llm-poll", "100"}});
    EXPECT_EQ(c.pipeline.depths, (std::vector<int>{4, 2}));
    EXPECT_EQ(c.pipeline.schedule, pipe::Schedule::sequential);
    EXPECT_FALSE(c.t2w.cfg);
    EXPECT_EQ(c.llm.seed, 7u);
    EXPECT_EQ(c.tts.seed, 7u);  // one seed for both samplers
    EXPECT_TRUE(c.llm.greedy && c.tts.greedy);
    EXPECT_EQ(c.tts.min_codes_per_turn, 50);  // derived: 2 s x 25 codes/s
    EXPECT_EQ(c.place_llm.cpus, (std::vector<int>{0, 1}));
    EXPECT_EQ(c.llm.placement.cpus, (std::vector<int>{0, 1}));  // stage thread and compute threads
    EXPECT_EQ(c.t2w.threads_voc, 1);
    EXPECT_EQ(c.tts.placement.kv_type, "q8_0");
    EXPECT_EQ(c.tts.placement.poll, 0);
    EXPECT_EQ(c.llm.placement.poll, 100);
    EXPECT_FALSE(c.pipeline.profile);
    apply_knob(c, "no-cfg", "false");
    EXPECT_TRUE(c.t2w.cfg);
}

TEST(Knobs, BadValuesNameTheFlagAndTheAllowedValues) {
    SpeakConfig c = default_config();
    EXPECT_NE(usage_message([&] { apply_knob(c, "d1", "0"); }).find("--d1"), std::string::npos);
    EXPECT_NE(usage_message([&] { apply_knob(c, "t2w-threads-t2m", "two"); }).find("--t2w-threads-t2m"), std::string::npos);
    const std::string kv = usage_message([&] { apply_knob(c, "llm-kv-type", "f8"); });
    EXPECT_NE(kv.find("--llm-kv-type"), std::string::npos) << kv;
    EXPECT_NE(kv.find("q8_0"), std::string::npos) << kv;
    EXPECT_NE(usage_message([&] { apply_knob(c, "no-cfg", "maybe"); }).find("--no-cfg"), std::string::npos);
    const std::string unknown = usage_message([&] { apply_knob(c, "d3", "1"); });
    EXPECT_NE(unknown.find("'d3' is not a speak knob"), std::string::npos) << unknown;
    EXPECT_NE(unknown.find("t2w-threads-voc"), std::string::npos) << unknown;
}

TEST(Knobs, ConfigFileAppliesTheSameSetters) {
    const std::string f = scratch_file("a.json", R"({"d1": 4, "no-cfg": true, "max-audio-s": 2.5, "schedule": "lockstep"})");
    SpeakConfig c = default_config();
    apply_knob_file(c, f);
    EXPECT_EQ(c.pipeline.depths.at(0), 4);
    EXPECT_FALSE(c.t2w.cfg);
    EXPECT_DOUBLE_EQ(c.max_audio_s, 2.5);
    EXPECT_EQ(c.pipeline.schedule, pipe::Schedule::lockstep);
    // `rtf tune`'s output shape: {"knobs": {...}}
    const std::string g = scratch_file("b.json", R"({"knobs": {"d2": "3"}, "rtf": 0.9})");
    apply_knob_file(c, g);
    EXPECT_EQ(c.pipeline.depths.at(1), 3);
    const std::string bad = scratch_file("c.json", R"({"d1": 0})");
    const std::string m = usage_message([&] { apply_knob_file(c, bad); });
    EXPECT_NE(m.find(bad), std::string::npos) << m;
    EXPECT_NE(m.find("--d1"), std::string::npos) << m;
    const std::string unknown = scratch_file("d.json", R"({"threads-t2m": 1})");
    EXPECT_NE(usage_message([&] { apply_knob_file(c, unknown); }).find("'threads-t2m' is not a speak knob"), std::string::npos);
    const std::string notjson = scratch_file("e.json", "d1=4");
    EXPECT_NE(usage_message([&] { apply_knob_file(c, notjson); }).find("not valid JSON"), std::string::npos);
    for (const auto &p : {f, g, bad, unknown, notjson}) std::remove(p.c_str());
}

TEST(Knobs, TextFileAndFinalize) {
    const std::string f = scratch_file("t.txt", "Hello from a file.");
    SpeakConfig c = default_config();
    apply_knobs(c, {{"models", "/nonexistent"}, {"text-file", f}, {"llm-ctx", "128"}});
    EXPECT_EQ(c.text, "Hello from a file.");
    finalize(c);
    EXPECT_EQ(c.llm.placement.n_batch, 128u);  // clamped to the smaller context
    SpeakConfig both = default_config();
    apply_knob(both, "text", "x");
    EXPECT_NE(usage_message([&] { apply_knob(both, "text-file", f); }).find("exclude"), std::string::npos);
    SpeakConfig none = default_config();
    apply_knob(none, "models", "/nonexistent");
    EXPECT_NE(usage_message([&] { finalize(none); }).find("-p/--prompt"), std::string::npos);
    std::remove(f.c_str());
}

// Issue 32: duplex's knobs are one table too (duplex-knobs.h), and a concept both modes have
// is spelt as speak spells it, with speak's allowed values; the older spellings are aliases.
TEST(DuplexKnobs, OneTableSpeaksNamesAndAliases) {
    std::set<std::string> seen;
    for (const auto &k : duplex_knob_table()) {
        EXPECT_TRUE(seen.insert(k.name).second) << k.name;
        for (const auto &a : k.aliases) EXPECT_TRUE(seen.insert(a).second) << a;
        EXPECT_FALSE(k.help.empty()) << k.name;
        EXPECT_TRUE(k.set && k.get) << k.name;
        if (const KnobDef *s = find_knob(k.name)) {  // shared with speak: same allowed values and math flag
            EXPECT_EQ(k.allowed, s->allowed) << k.name;
            EXPECT_EQ(k.changes_math, s->changes_math) << k.name;
        }
        EXPECT_EQ(find_knob(k.name) == nullptr && !k.aliases.empty(), false)
            << k.name << ": a renamed knob takes speak's name";
    }
    for (const char *n : {"d1", "d2", "llm-ctx", "seed", "twin-text-rate", "llm-threads", "tts-threads", "t2w-threads-t2m",
                          "t2w-threads-voc", "llm-weight-type", "tts-weight-type", "t2w-type-t2m", "t2w-type-voc"})
        EXPECT_NE(find_duplex_knob(n), nullptr) << n;

    DuplexConfig c;
    apply_duplex_knob(c, "tts-queue-cap", "3");  // alias of d1
    apply_duplex_knob(c, "d2", "5");
    apply_duplex_knob(c, "ctx-size", "512");     // alias of llm-ctx
    apply_duplex_knob(c, "interval", "250ms");
    apply_duplex_knob(c, "context", "stop");
    apply_duplex_knob(c, "threads", "4");
    apply_duplex_knob(c, "tts-threads", "1");
    EXPECT_EQ(c.tts_queue_cap, 3);
    EXPECT_EQ(c.t2w_queue_cap, 5);
    EXPECT_EQ(c.llm.placement.n_ctx, 512u);
    EXPECT_DOUBLE_EQ(c.interval_ms, 250);
    EXPECT_FALSE(c.llm.context_slide);
    c.models_dir = "kit";
    c.input = "in.wav";
    c.validate();
    c.finalize();
    EXPECT_EQ(c.llm.placement.n_threads, 4);
    EXPECT_EQ(c.tts.placement.n_threads, 1);   // its own knob over --threads
    EXPECT_EQ(c.t2w.threads_t2m, 2);           // half of --threads
    EXPECT_EQ(c.apm.n_threads, 4);

    EXPECT_NE(usage_message([&] { apply_duplex_knob(c, "d1", "0"); }).find("--d1"), std::string::npos);
    EXPECT_NE(usage_message([&] { apply_duplex_knob(c, "t2w-type-voc", "q4"); }).find("f32, f16, bf16"), std::string::npos);
    EXPECT_NE(usage_message([&] { apply_duplex_knob(c, "no-such", "1"); }).find("not a duplex knob"), std::string::npos);
}
