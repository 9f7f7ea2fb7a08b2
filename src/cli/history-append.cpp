#include "cli/history-append.h"

#include <cstdlib>
#include <exception>
#include <iostream>

#include <nlohmann/json.hpp>

#include "history/history.h"

namespace rtf::cli {

void HistoryFlags::add_to(CLI::App *sub) {
    sub->add_flag("--no-history", off, "Do not append this result to the result history (`rtf history`; also RTF_HISTORY=0)")
        ->group("output");
    sub->add_option("--history-db", db, "Result history file (default $RTF_HISTORY_DB, else ~/.local/share/rtfkit/history.db)")
        ->group("output");
}

bool HistoryFlags::enabled() const {
    const char *e = std::getenv("RTF_HISTORY");
    return !off && !(e && std::string(e) == "0");
}

namespace {
template <class F>
void guarded(const HistoryFlags &f, F &&append) {
    if (!f.enabled()) return;
    try {
        history::History h(f.db.empty() ? history::History::default_path() : f.db);
        append(h);
    } catch (const std::exception &e) {
        std::cerr << "rtf: warning: result not added to the history: " << e.what() << "\n";
    }
}
}  // namespace

void append_bench_history(const HistoryFlags &f, const nlohmann::json &bench, const std::string &kit_dir) {
    guarded(f, [&](history::History &h) {
        for (const auto &e : history::entries_from_bench(bench, kit_dir)) h.append(e, bench);
    });
}

void append_tune_history(const HistoryFlags &f, const nlohmann::json &tune, const std::string &kit_dir) {
    guarded(f, [&](history::History &h) { h.append(history::entry_from_tune(tune, kit_dir), tune); });
}

void append_speak_history(const HistoryFlags &f, const nlohmann::json &speak, const nlohmann::json &knobs,
                          const std::string &kit_dir) {
    guarded(f, [&](history::History &h) { h.append(history::entry_from_speak(speak, knobs, kit_dir), speak); });
}

}  // namespace rtf::cli
