#pragma once
// The speak path's knobs (speak/knobs.h) as CLI flags: `rtf speak`, `rtf demo` and, for
// the Token2Wav group, `rtf t2w` register them from the one table, so a knob is spelt,
// documented and parsed the same everywhere (and the same as `rtf bench --set` and
// `--config` files). Flags are recorded while CLI11 parses and applied afterwards in one
// place: defaults, then the --config file, then the flags (flags win).
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/profile-select.h"
#include "speak/knobs.h"
#include "speak/speak-config.h"

namespace rtf::cli {

struct SpeakOptions {
    speak::SpeakConfig base = speak::default_config();  // a command's own defaults (demo: 6 s)
    std::vector<std::pair<std::string, std::string>> given;  // flags as parsed, in order
    std::string config_path;                                 // --config FILE
    ProfileFlags profile;                                    // --profile (not on `rtf t2w`)
};

enum class KnobSet {
    speak,          // every knob, the input flags included
    speak_no_input, // every knob but models/prompt/text/text-file
    t2w_engine,     // the Token2Wav engine knobs only (`rtf t2w`)
};

// Adds one flag per knob (help with unit, allowed values and the default from `o.base`)
// and --config FILE; --profile unless `set` is t2w_engine.
void add_speak_options(CLI::App *sub, SpeakOptions &o, KnobSet set = KnobSet::speak);

// base -> --config file -> flags; then speak::finalize() (throws rtf::Error(Usage)
// naming the flag or key). For KnobSet::t2w_engine use make_t2w_config's result .t2w.
speak::SpeakConfig make_speak_config(const SpeakOptions &o, bool finalize = true);

// The knobs the user set: the flags given and the keys of the --config file (the machine
// profile leaves them alone).
std::set<std::string> user_set_knobs(const SpeakOptions &o);

// The machine profile (--profile) applied to `cfg` (its kit = cfg.models_dir, so call it once
// the kit is known) under the user's knobs; call speak::finalize(cfg) afterwards.
speak::MachineProfile apply_profile(const SpeakOptions &o, speak::SpeakConfig &cfg);

}  // namespace rtf::cli
