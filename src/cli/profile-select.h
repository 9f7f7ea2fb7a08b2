#pragma once
// `--profile auto|exact|none` on the commands that speak (speak, demo, serve, duplex): picks the
// machine profile (speak/machine-profile.h) and applies it under the user's own knobs. The
// tuned override is read here, from the result history (the newest `rtf tune` row whose
// machine fingerprint and kit identity are this machine's and this kit's), because speak
// never opens the DB. A history that does not exist or cannot be read means no tuned row
// (a warning for the unreadable one), never a failed run.
#include <optional>
#include <set>
#include <string>

#include <CLI/CLI.hpp>

#include "bench/workload.h"
#include "speak/machine-profile.h"
#include "speak/speak-config.h"

namespace rtf::cli {

struct ProfileFlags {
    std::string mode = default_mode();  // --profile
    // $RTF_PROFILE when set (the test suites set "none": the same settings on every CPU),
    // else "auto".
    static std::string default_mode();
    std::string history_db;     // where to look for a tuned row ("" = the default history)
    void add_to(CLI::App *sub);
};

// The newest tune row for this machine and `kit_dir` in `db` ("" = default path), if any.
std::optional<speak::TunedRow> find_tuned_row(const std::string &db, const std::string &kit_dir);

// The profile for `kit_dir` ("" = none: no tuned row) under f.mode: a kit of another family
// gets none; auto reads this machine's newest tune row for the kit from f.history_db.
speak::MachineProfile select_machine_profile(const ProfileFlags &f, const std::string &kit_dir);

// Selects and applies the profile to `cfg` (kit = cfg.models_dir), skipping `user_set`.
speak::MachineProfile apply_machine_profile(const ProfileFlags &f, speak::SpeakConfig &cfg,
                                            const std::set<std::string> &user_set);

// The same for a workload's knob list (rtf bench and rtf tune: the speak workload, or with
// `duplex` the duplex one, whose table has the shared names): each choice its table has is set
// in `knobs` unless the user set that knob already (--set wins; --ab / --sweep values go over
// `knobs` per config), and recorded in `applied` (name -> value) and p.applied; the others go
// to p.not_here. Returns the profile.
speak::MachineProfile apply_machine_profile(const ProfileFlags &f, const std::string &kit_dir, bench::Knobs &knobs,
                                            nlohmann::json &applied, bool duplex = false);

}  // namespace rtf::cli
