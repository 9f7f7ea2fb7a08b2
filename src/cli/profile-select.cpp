#include "cli/profile-select.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "core/cpu-features.h"
#include "history/history.h"
#include "speak/duplex-knobs.h"
#include "speak/kit.h"
#include "speak/knobs.h"

namespace rtf::cli {

std::string ProfileFlags::default_mode() { return speak::default_profile_mode(); }

void ProfileFlags::add_to(CLI::App *sub) {
    sub->add_option("--profile", mode,
                    "Machine profile the knobs start from (flags and --config win): auto = this machine's newest "
                    "`rtf tune` result for this kit in the history, else the built-in verified defaults for this "
                    "CPU's features (AMX / AVX512-BF16 / AVX-512 / AVX2, CPU count); exact = the same without the "
                    "choices that change the output (the reference math); none = the plain knob defaults. "
                    "Default: $RTF_PROFILE, else auto. RTF_CPU_FEATURES=avx512f,avx512_bf16,... shows another CPU's "
                    "built-in choices")
        ->type_name("auto|exact|none")
        ->default_str(mode);
}

std::optional<speak::TunedRow> find_tuned_row(const std::string &db, const std::string &kit_dir) {
    const char *off = std::getenv("RTF_HISTORY");
    if (off && std::string(off) == "0") return std::nullopt;
    const std::string path = db.empty() ? history::History::default_path() : db;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;  // never create it to read
    try {
        history::History h(path);
        auto row = history::latest_tune_for(h, kit_dir);
        if (!row) return std::nullopt;
        return speak::TunedRow{row->id, row->created, row->knobs, row->label != history::kTunedConfigLabel};
    } catch (const std::exception &e) {
        std::cerr << "rtf: warning: no tuned profile read from the history: " << e.what() << "\n";
        return std::nullopt;
    }
}

speak::MachineProfile select_machine_profile(const ProfileFlags &f, const std::string &kit_dir) {
    const auto mode = speak::parse_profile_mode(f.mode);
    // The built-in and tuned choices are MiniCPM-o 4.5's, verified on its files: a kit of another
    // family runs its engines as given.
    if (!kit_dir.empty()) {
        std::string family;
        try {
            family = speak::resolve_kit(kit_dir, false).family;
        } catch (const std::exception &) {
            // a bad kit is reported when the engines load
        }
        if (!family.empty() && family != "minicpmo45") {
            speak::MachineProfile p = speak::select_profile(speak::ProfileMode::none, cpu_features(), std::nullopt);
            p.source = "family " + family + ": no verified profile for it yet";
            return p;
        }
    }
    std::optional<speak::TunedRow> tuned;
    if (mode == speak::ProfileMode::automatic && !kit_dir.empty()) tuned = find_tuned_row(f.history_db, kit_dir);
    return speak::select_profile(mode, cpu_features(), tuned);
}

speak::MachineProfile apply_machine_profile(const ProfileFlags &f, speak::SpeakConfig &cfg,
                                            const std::set<std::string> &user_set) {
    auto p = select_machine_profile(f, cfg.models_dir);
    speak::apply_profile(cfg, p, user_set);
    return p;
}

speak::MachineProfile apply_machine_profile(const ProfileFlags &f, const std::string &kit_dir, bench::Knobs &knobs,
                                            nlohmann::json &applied, bool duplex) {
    auto p = select_machine_profile(f, kit_dir);
    applied = nlohmann::json::object();
    // The knobs of a config=FILE knob are the user's too (the workload applies the file first,
    // so a profile choice set here would override them); an unreadable file is the workload's
    // error to report.
    std::set<std::string> from_file;
    if (const std::string *file = bench::knob_value(knobs, "config")) {
        try {
            for (const auto &kv : speak::read_knob_file(*file)) from_file.insert(kv.first);
        } catch (const std::exception &) {
        }
    }
    for (const auto &c : p.choices) {
        // a knob the workload's table lacks: a duplex-only choice (the audio encoder's) in the
        // speak workload, a simplex-only one in duplex, or a knob of another build
        if (duplex ? !speak::find_duplex_knob(c.knob) : !speak::find_knob(c.knob)) {
            p.not_here.push_back(c.knob);
            continue;
        }
        if (bench::knob_value(knobs, c.knob) || from_file.count(c.knob)) continue;  // --set and config=FILE win
        bench::set_knob(knobs, c.knob, c.value);
        applied[c.knob] = c.value;
        p.applied.push_back(c.knob);
    }
    return p;
}

}  // namespace rtf::cli
