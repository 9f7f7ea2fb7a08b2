#pragma once
// The machine profile (issue 30 §3): the speak path starts from the best *verified*
// configuration for this CPU, like FFTW's wisdom. Three sources, in order of precedence:
//   1. a tuned result: the newest `rtf tune` row in the history for this machine and this
//      kit (the caller reads the history and passes the row's knobs down: speak never opens
//      the DB); a complete configuration, since a tune starts from this same
//      profile and its row holds that profile's knobs with the kept changes over them;
//   2. the built-in table below, keyed by the CPU's ISA class (core/cpu-features.h) and
//      its CPU count, each choice with the measurement that put it there;
//   3. nothing (`--profile none`): the plain knob defaults (the reference's settings).
// `--profile exact` keeps only the choices that leave the output bit-identical (placement,
// scheduling): the reference math, as fast as this machine verifiably runs it.
// A choice that changes the math enters a built-in profile only when its fidelity passes
// the lines of issue 30 (Token2Wav mel SNR >= 40 dB vs f32; TTS mean KL <= 0.01 nats and
// top-1 agreement >= 98 % teacher-forced); on twins that evidence is twin-only, and the
// profile's line says so.
// Knobs given by the user (flags, --config) always win over the profile.
//
//   auto p = speak::select_profile(speak::ProfileMode::automatic, rtf::cpu_features(), tuned);
//   speak::apply_profile(cfg, p, user_set_names);   // skips the knobs the user set
//   std::cout << p.line() << "\n";
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cpu-features.h"
#include "speak/duplex.h"
#include "speak/speak-config.h"

namespace rtf::speak {

enum class ProfileMode { automatic, exact, none };
// "auto" | "exact" | "none"; anything else: rtf::Error(Usage) naming `flag` and the values.
ProfileMode parse_profile_mode(const std::string &v, const std::string &flag = "--profile");
std::string to_string(ProfileMode m);
// The mode a front end starts from when the user names none: $RTF_PROFILE when set (the test
// suites set "none": the same settings on every CPU), else "auto".
std::string default_profile_mode();

struct ProfileChoice {
    std::string knob, value;   // a knob of the knob table (knobs.h) and its text value
    bool changes_math = false; // the knob table's flag for that knob
    std::string evidence;      // why it is here: the measurement (and CPU), or the tune row
    std::string fidelity;      // math-changing choices: the measured fidelity vs the reference
};

// The newest `rtf tune` row for this machine and kit (history kind "tune").
struct TunedRow {
    int64_t id = 0;
    std::string created;
    nlohmann::json knobs = nlohmann::json::object();  // name -> value (what tuned.json holds)
    // The row holds only the tune's kept changes, not the configuration it measured them on:
    // rows of tunes before session 24 (and of workloads without a profile). Such a row goes
    // over this CPU's built-in choices instead of replacing them (history label "tuned"; a
    // complete row is labelled "tuned-config").
    bool changes_only = false;
};

struct MachineProfile {
    ProfileMode mode = ProfileMode::automatic;
    std::string name;    // "amx", "avx512-bf16", ..., "tuned", "exact ...", "none"
    std::string source;  // where it came from, one phrase
    CpuFeatures cpu;
    std::vector<ProfileChoice> choices;
    std::vector<std::string> applied;  // the knobs applied (choices the user did not override)
    std::vector<std::string> not_here; // choices the command has no knob for (e.g. a simplex-only knob in duplex)

    // One line: name, source, the choices, and which change the math with their fidelity.
    std::string line() const;
    nlohmann::json to_json() const;
};

// Whether this build's oneDNN kernels are available (t2w::onednn::available()).
bool onednn_available();

// The built-in choices for a CPU (no history): the table in machine-profile.cpp. `onednn`:
// the build has oneDNN and it is on (t2w::onednn::available()); choices that run on it need it.
std::vector<ProfileChoice> builtin_choices(const CpuFeatures &cpu, bool onednn);

// The profile for `mode` on `cpu`; `tuned` (when given and mode is automatic) replaces the
// built-in choices. Under `exact`, math-changing choices are dropped (from either source).
MachineProfile select_profile(ProfileMode mode, const CpuFeatures &cpu, const std::optional<TunedRow> &tuned,
                              bool onednn = onednn_available());

// Applies the profile's choices to `cfg`, except knobs named in `user_set` (flags, --config);
// records what it applied in `p.applied`. Throws rtf::Error(Usage) when a tuned row names a
// knob this build does not know (the message names the row).
void apply_profile(SpeakConfig &cfg, MachineProfile &p, const std::set<std::string> &user_set);

// The same for a duplex session: each choice whose knob the duplex knob table has (the shared
// names: t2w-type-t2m, tts-weight-type, the thread knobs, ...) is applied through it; the rest
// are listed in `p.not_here` (the profile line says so), never an error.
void apply_profile(DuplexConfig &cfg, MachineProfile &p, const std::set<std::string> &user_set);

}  // namespace rtf::speak
