#pragma once
// `--no-history` / `--history-db FILE` on the commands that append to the result history
// (bench, speak, demo, tune; src/history/history.h), and the append itself. A history that cannot
// be written costs a warning on stderr, never the run's result or exit code.
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

namespace rtf::cli {

struct HistoryFlags {
    bool off = false;  // --no-history (or RTF_HISTORY=0)
    std::string db;    // --history-db; "" = History::default_path()
    void add_to(CLI::App *sub);
    bool enabled() const;
};

void append_bench_history(const HistoryFlags &f, const nlohmann::json &bench, const std::string &kit_dir);
void append_tune_history(const HistoryFlags &f, const nlohmann::json &tune, const std::string &kit_dir);
void append_speak_history(const HistoryFlags &f, const nlohmann::json &speak, const nlohmann::json &knobs,
                          const std::string &kit_dir);

}  // namespace rtf::cli
