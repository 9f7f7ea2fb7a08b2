#pragma once
// The flags shared by every command that runs the speak path (`rtf speak`, `rtf demo`,
// `rtf bench --workload speak`): one registration, one conversion to SpeakConfig, so a
// knob means the same everywhere.
#include <string>

#include <CLI/CLI.hpp>

#include "speak/speak-config.h"

namespace rtf::cli {

struct SpeakOptions {
    speak::SpeakConfig cfg;          // typed knobs land here directly
    std::string text_file;
    std::string schedule = "pipelined";
    int d1 = 16, d2 = 16;
    std::string llm_cpus, tts_cpus, t2w_cpus;  // "0-3,6" lists
    bool no_profile = false;
    bool no_mmap_llm = false, no_mmap_tts = false;
    bool no_host_llm = false, no_host_tts = false;
    bool no_cfg = false;
};

// Adds the model/input/placement/pipeline flags. `with_input` = false leaves out
// -p/--text/--text-file/--models (for commands that choose them themselves).
void add_speak_options(CLI::App *sub, SpeakOptions &o, bool with_input = true);

// Applies the string-valued flags and validates; throws rtf::Error(Usage) naming the flag.
speak::SpeakConfig make_speak_config(SpeakOptions &o);

}  // namespace rtf::cli
