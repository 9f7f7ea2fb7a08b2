#pragma once
// Running the speak path from the command line: the sink (WAV, FLAC, Opus or MP3 file, or raw
// PCM on stdout),
// the live progress line, Ctrl-C handling, the summary and the JSON/trace outputs. Shared
// by `rtf speak` and `rtf demo`.
#include <string>

#include <nlohmann/json.hpp>

#include "cli/history-append.h"
#include "speak/speak.h"

namespace rtf::cli {

struct SpeakOutputs {
    std::string wav_path;    // WAV, or by extension .flac/.opus/.ogg/.mp3 encoded as chunks arrive;
                             // "-" = raw PCM (s16le, 24 kHz mono) to stdout as chunks arrive; "" = none
    std::string json_path;   // "" = none, "-" = stdout
    std::string trace_path;  // "" = none
    bool progress = true;    // live progress line on stderr
    HistoryFlags history;    // a complete run is appended to the result history
    nlohmann::json profile;  // the machine profile in use (MachineProfile::to_json), null = none given
    std::string profile_line;  // its one line for the summary
};

// Runs one utterance with the engines, writing outputs as chunks arrive. The WAV stays
// valid whatever happens (Ctrl-C, a failing stage). Returns the result; rethrows a stage
// failure after the outputs were closed. Sets `interrupted` on Ctrl-C.
speak::SpeakResult run_speak_cli(speak::Engines &engines, speak::SpeakConfig cfg, const SpeakOutputs &out,
                                 bool &interrupted);

// Human summary: headline metrics, per-stage costs, the bottleneck, output paths.
void print_speak_summary(const speak::SpeakResult &r, const SpeakOutputs &out, std::ostream &os);

}  // namespace rtf::cli
