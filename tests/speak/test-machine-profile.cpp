// The machine profile (speak/machine-profile.h): the built-in choices follow the CPU's
// features (faked here: the test runs the same on an EPYC and a Xeon), `exact` keeps only
// output-preserving choices, `none` nothing, a tuned row replaces the built-in choices, and
// the user's knobs always win.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "core/cpu-features.h"
#include "core/error.h"
#include "speak/duplex-knobs.h"
#include "speak/knobs.h"
#include "speak/machine-profile.h"

using namespace rtf;
using namespace rtf::speak;

namespace {
const CpuFeatures kEpyc = CpuFeatures::parse("avx2,fma,avx512f,avx512_bf16,avx512_vnni", 2, "AMD EPYC");
const CpuFeatures kXeon = CpuFeatures::parse("avx2,fma,avx512f,avx512_bf16,avx512_vnni,amx", 2, "Intel Xeon");
const CpuFeatures kAvx2 = CpuFeatures::parse("avx2,fma", 4);

// This machine's ISA class from /proc/cpuinfo's first "flags" line, by isa_class()'s rules
// written out again: amx (amx_tile and amx_bf16), avx512-bf16, avx512 (avx512f), avx2 (avx2
// and fma), baseline; then capped by a valid RTF_ISA below it. RTF_CPU_FEATURES: its class.
std::string expected_class_here() {
    if (const char *e = std::getenv("RTF_CPU_FEATURES"); e && *e) return CpuFeatures::parse(e, 1).isa_class();
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    std::set<std::string> flags;
    while (std::getline(f, line)) {
        if (line.rfind("flags", 0) != 0) continue;
        std::istringstream ws(line.substr(line.find(':') + 1));
        for (std::string w; ws >> w;) flags.insert(w);
        break;
    }
    if (flags.empty()) ADD_FAILURE() << "no flags line in /proc/cpuinfo";
    auto has = [&](const char *n) { return flags.count(n) > 0; };
    const char *order[] = {"baseline", "avx2", "avx512", "avx512-bf16", "amx"};
    int level = has("amx_tile") && has("amx_bf16")     ? 4
                : has("avx512f") && has("avx512_bf16") ? 3
                : has("avx512f")                       ? 2
                : has("avx2") && has("fma")            ? 1
                                                       : 0;
    if (const char *cap = std::getenv("RTF_ISA"); cap && *cap)
        for (int l = 0; l < level; ++l)
            if (std::string(cap) == order[l]) level = l;
    return order[level];
}

std::string applied_value(const MachineProfile &p, const std::string &knob) {
    SpeakConfig c = default_config();
    MachineProfile q = p;
    apply_profile(c, q, {});
    return find_knob(knob)->get(c);
}
}  // namespace

TEST(CpuFeatures, ParseAndClass) {
    EXPECT_EQ(kEpyc.isa_class(), "avx512-bf16");
    EXPECT_EQ(kXeon.isa_class(), "amx");
    EXPECT_TRUE(kXeon.amx_tile && kXeon.amx_bf16 && kXeon.amx_int8);
    EXPECT_EQ(kAvx2.isa_class(), "avx2");
    EXPECT_EQ(CpuFeatures::parse("avx512f", 1).isa_class(), "avx512");
    EXPECT_EQ(CpuFeatures::parse("", 1).isa_class(), "baseline");
    try {
        CpuFeatures::parse("avx512f,sse9", 1);
        FAIL() << "an unknown feature must be a usage error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("sse9"), std::string::npos);
    }
    // this machine: the class its flags give, read independently of cpuid from the kernel's
    // /proc/cpuinfo (Linux's names), capped by RTF_ISA as cpu_features() caps it, or the
    // features RTF_CPU_FEATURES fakes
    const std::string here = cpu_features().isa_class();
    EXPECT_EQ(here, expected_class_here()) << "cpu_features(): " << cpu_features().flags_text();
}

TEST(MachineProfile, BuiltInChoicesFollowTheCpu) {
    const auto epyc = select_profile(ProfileMode::automatic, kEpyc, std::nullopt, true);
    const auto xeon = select_profile(ProfileMode::automatic, kXeon, std::nullopt, true);
    const auto avx2 = select_profile(ProfileMode::automatic, kAvx2, std::nullopt, true);
    // the bf16 vocoder runs on oneDNN: chosen only in a build that has it
    EXPECT_EQ(applied_value(epyc, "t2w-type-voc"), "bf16");
    EXPECT_EQ(applied_value(select_profile(ProfileMode::automatic, kEpyc, std::nullopt, false), "t2w-type-voc"), "f32");
    EXPECT_EQ(applied_value(xeon, "t2w-type-voc"), "f32");
    // bf16 token2mel where VDPBF16PS is fast and there is no AMX; the reference's f32 on the
    // AMX Xeon, where our bf16 kernel measured slower
    EXPECT_EQ(applied_value(epyc, "t2w-type-t2m"), "bf16");
    EXPECT_EQ(applied_value(xeon, "t2w-type-t2m"), "f32");
    EXPECT_EQ(applied_value(epyc, "tts-weight-type"), "q8_0");
    EXPECT_EQ(applied_value(xeon, "tts-weight-type"), "file");
    EXPECT_NE(knobs_json([&] { SpeakConfig c = default_config(); MachineProfile q = epyc; apply_profile(c, q, {}); return c; }()),
              knobs_json([&] { SpeakConfig c = default_config(); MachineProfile q = xeon; apply_profile(c, q, {}); return c; }()));
    // AVX2 without AVX-512: the reference's f32 token2mel (our AVX2 kernels made it the fastest type there)
    EXPECT_EQ(applied_value(avx2, "t2w-type-t2m"), "f32");
    EXPECT_EQ(applied_value(avx2, "t2w-type-voc"), "f32");
    EXPECT_EQ(applied_value(avx2, "tts-weight-type"), "q8_0");
    // one TTS thread on a 2-CPU AVX2 machine (measured there), the default with more cores
    EXPECT_EQ(applied_value(avx2, "tts-threads"), "0");
    const auto avx2_2 = select_profile(ProfileMode::automatic, CpuFeatures::parse("avx2,fma", 2), std::nullopt, true);
    EXPECT_EQ(applied_value(avx2_2, "tts-threads"), "1");
    const auto baseline = select_profile(ProfileMode::automatic, CpuFeatures::parse("", 2), std::nullopt, true);
    EXPECT_TRUE(baseline.choices.empty());
    EXPECT_NE(baseline.line().find("plain defaults"), std::string::npos);
    // every built-in choice names its evidence, and a math-changing one its fidelity
    for (const auto *p : {&epyc, &xeon, &avx2})
        for (const auto &c : p->choices) {
            EXPECT_FALSE(c.evidence.empty()) << c.knob;
            EXPECT_TRUE(find_knob(c.knob) || find_duplex_knob(c.knob)) << c.knob;
            if (c.changes_math) {
                // a measured figure against its line (mel SNR in dB, or KL in nats)
                EXPECT_TRUE(c.fidelity.find("dB") != std::string::npos || c.fidelity.find("nats") != std::string::npos)
                    << c.knob;
            }
        }
    const auto line = epyc.line();
    EXPECT_NE(line.find("t2w-type-t2m=bf16"), std::string::npos) << line;
    EXPECT_NE(line.find("changes the math"), std::string::npos) << line;
    EXPECT_NE(line.find("twin-only"), std::string::npos) << line;
}

TEST(MachineProfile, ExactKeepsTheMathAndNoneIsTheDefaults) {
    const auto exact = select_profile(ProfileMode::exact, kEpyc, std::nullopt, true);
    for (const auto &c : exact.choices) EXPECT_FALSE(c.changes_math) << c.knob;
    EXPECT_EQ(applied_value(exact, "t2w-type-t2m"), "f32");
    EXPECT_EQ(applied_value(exact, "t2w-type-voc"), "f32");
    const auto none = select_profile(ProfileMode::none, kEpyc, std::nullopt);
    EXPECT_TRUE(none.choices.empty());
    SpeakConfig c = default_config();
    MachineProfile q = none;
    apply_profile(c, q, {});
    EXPECT_EQ(knobs_json(c), knobs_json(default_config()));
    EXPECT_EQ(parse_profile_mode("exact"), ProfileMode::exact);
    try {
        parse_profile_mode("fast");
        FAIL();
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("--profile"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("exact"), std::string::npos);
    }
}

TEST(MachineProfile, TunedRowReplacesBuiltInAndUserKnobsWin) {
    TunedRow t{7, "2026-12-05T00:00:00Z", {{"tts-threads", "1"}, {"t2w-type-t2m", "f16"}}};
    auto p = select_profile(ProfileMode::automatic, kEpyc, t);
    EXPECT_EQ(p.name, "tuned");
    EXPECT_NE(p.source.find("#7"), std::string::npos);
    EXPECT_EQ(applied_value(p, "t2w-type-t2m"), "f16");
    EXPECT_EQ(applied_value(p, "tts-threads"), "1");
    // exact ignores the tuned row's math-changing choice, and the row itself
    auto e = select_profile(ProfileMode::exact, kEpyc, t);
    EXPECT_NE(e.name, "tuned");
    EXPECT_EQ(applied_value(e, "t2w-type-t2m"), "f32");
    // the user's knob wins and the line says the choice was overridden
    SpeakConfig c = default_config();
    apply_knob(c, "t2w-type-t2m", "q8_0");
    apply_profile(c, p, {"t2w-type-t2m"});
    EXPECT_EQ(find_knob("t2w-type-t2m")->get(c), "q8_0");
    EXPECT_EQ(find_knob("tts-threads")->get(c), "1");
    EXPECT_NE(p.line().find("t2w-type-t2m=f16 (overridden)"), std::string::npos) << p.line();
    EXPECT_EQ(p.to_json()["applied"], nlohmann::json::array({"tts-threads"}));
    // a knob this build does not know: a usage error naming the row, not a silent skip
    TunedRow bad{9, "x", {{"no-such-knob", "1"}}};
    auto b = select_profile(ProfileMode::automatic, kEpyc, bad);
    SpeakConfig d = default_config();
    EXPECT_THROW(apply_profile(d, b, {}), Error);
}

// A tune row is a complete configuration (the profile the tune started from + its kept
// changes): a choice equal to this CPU's built-in one keeps its evidence and fidelity, a
// kept change says it was kept by rtf tune.
TEST(MachineProfile, TunedRowKeepsTheBuiltInEvidenceOfItsInheritedChoices) {
    TunedRow t{12, "2026-12-07T00:00:00Z", {{"tts-weight-type", "q8_0"}, {"t2w-type-t2m", "f32"}, {"tts-threads", "1"}}};
    auto p = select_profile(ProfileMode::automatic, kAvx2, t, false);
    ASSERT_EQ(p.choices.size(), 3u);
    for (const auto &c : p.choices) {
        if (c.knob == "tts-weight-type") {
            EXPECT_NE(c.fidelity.find("KL"), std::string::npos) << c.fidelity;  // the built-in row's measurement
            EXPECT_NE(c.evidence.find("#12"), std::string::npos) << c.evidence;
        } else if (c.knob == "tts-threads") {
            EXPECT_NE(c.evidence.find("kept by an interleaved A/B"), std::string::npos) << c.evidence;
        }
    }
}

// A row of only kept changes (tunes before session 24 wrote these) goes over this CPU's
// built-in choices: it keeps the built-in q8_0 TTS and f32 token2mel it does not name, and
// its own change wins where it names one; the source says so.
TEST(MachineProfile, ChangesOnlyTunedRowGoesOverTheBuiltInChoices) {
    TunedRow t{5, "2026-12-01T00:00:00Z", {{"tts-threads", "1"}, {"t2w-type-t2m", "f16"}}, /*changes_only=*/true};
    auto p = select_profile(ProfileMode::automatic, kAvx2, t, false);
    const auto builtin = select_profile(ProfileMode::automatic, kAvx2, std::nullopt, false);
    EXPECT_EQ(p.name, "tuned");
    EXPECT_NE(p.source.find("over the built-in avx2 profile"), std::string::npos) << p.source;
    EXPECT_EQ(applied_value(p, "tts-threads"), "1");
    EXPECT_EQ(applied_value(p, "t2w-type-t2m"), "f16");
    EXPECT_EQ(applied_value(p, "tts-weight-type"), applied_value(builtin, "tts-weight-type"));
    EXPECT_EQ(applied_value(builtin, "tts-weight-type"), "q8_0");
    // the same knobs as a complete row replace the built-in choices
    t.changes_only = false;
    auto c = select_profile(ProfileMode::automatic, kAvx2, t, false);
    EXPECT_EQ(c.choices.size(), 2u);
    EXPECT_EQ(c.source.find("over the built-in"), std::string::npos) << c.source;
}

// rtf duplex --profile: the choices duplex has a knob for (the shared names) are applied
// through the duplex knob table, under the user's flags; the others are named, not an error.
TEST(MachineProfile, DuplexTakesTheSharedChoices) {
    TunedRow t{11, "2026-12-05T00:00:00Z", {{"tts-threads", "1"}, {"t2w-type-t2m", "bf16"}, {"d2", "3"},
                                            {"first-audio-priority", "true"}}};
    auto p = select_profile(ProfileMode::automatic, kEpyc, t);
    DuplexConfig c;
    apply_duplex_knob(c, "d2", "5");  // given by the user
    apply_profile(c, p, {"d2"});
    EXPECT_EQ(c.tts_threads, 1);
    EXPECT_EQ(c.t2w.type_t2m, "bf16");
    EXPECT_EQ(c.t2w_queue_cap, 5);
    EXPECT_EQ(p.not_here, std::vector<std::string>{"first-audio-priority"});
    EXPECT_NE(p.line().find("first-audio-priority=true (no such knob here)"), std::string::npos) << p.line();
    EXPECT_NE(p.line().find("d2=3 (overridden)"), std::string::npos) << p.line();
    // the built-in EPYC row: all of its choices are duplex knobs too
    auto b = select_profile(ProfileMode::automatic, kEpyc, std::nullopt, true);
    DuplexConfig d;
    apply_profile(d, b, {});
    EXPECT_TRUE(b.not_here.empty()) << b.line();
    EXPECT_EQ(d.t2w.type_t2m, "bf16");
    EXPECT_EQ(d.tts.placement.weight_type, "q8_0");
    EXPECT_EQ(d.apm.weight_type, "bf16");
    // ... and the speak path takes all but the audio encoder's, which it says is not its knob
    SpeakConfig sc;
    apply_profile(sc, b, {});
    EXPECT_EQ(b.not_here, std::vector<std::string>{"apm-weight-type"});
    EXPECT_NE(b.line().find("apm-weight-type=bf16 (no such knob here)"), std::string::npos) << b.line();
}
