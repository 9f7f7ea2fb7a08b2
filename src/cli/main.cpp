// rtf — entry point. Parses the command line (CLI11), runs the selected subcommand and
// maps errors to the documented exit codes: 0 ok, 1 usage/setup, 2 target missed,
// 3 incomplete/invalid run or a stage failure.
#include <algorithm>
#include <cctype>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/cpu-features.h"
#include "core/error.h"

namespace rtf::cli {
int print_version(bool json);

std::vector<CommandRegistration> &command_registry() {
    static std::vector<CommandRegistration> registry;
    return registry;
}

namespace {
// Edit distance (insertions, deletions, substitutions), case-insensitive.
size_t edit_distance(const std::string &a, const std::string &b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

// The first word of the command line when it names no command, else "". The top level's
// own flags (--help, --version) take no value, so its first non-flag word is the command;
// CLI11 alone would let `rtf NOSUCH --help` print the main help and exit 0.
std::string unknown_command(const CLI::App &app, int argc, char **argv, std::string *nearest) {
    for (int i = 1; i < argc; ++i) {
        const std::string w = argv[i];
        if (w.empty() || w[0] == '-') continue;
        size_t best = std::string::npos;
        for (const CLI::App *sc : app.get_subcommands([](const CLI::App *c) {
                 return dynamic_cast<const CLI::Option_group *>(c) == nullptr && !c->get_name().empty();
             })) {
            if (sc->check_name(w)) return "";
            const size_t d = edit_distance(w, sc->get_name());
            if (d < best) {
                best = d;
                *nearest = sc->get_name();
            }
        }
        return w;
    }
    return "";
}
}  // namespace
}

int main(int argc, char **argv) {
    using namespace rtf::cli;
    CLI::App app{"rtf — make a language model speak in real time, and measure it.\n"
                 "RTF = time to make an audio chunk / that chunk's duration (< 1 is real time).",
                 "rtf"};
    app.require_subcommand(0, 1);
    app.fallthrough(false);
    bool version = false;
    app.add_flag("--version", version, "Print version, llama.cpp commit, ggml backends and CPU features");

    Action action;
    auto registry = command_registry();
    std::stable_sort(registry.begin(), registry.end(),
                     [](const auto &a, const auto &b) { return a.order < b.order; });
    for (const auto &r : registry) r.add(app, action);
    {
        std::string nearest;
        const std::string unknown = unknown_command(app, argc, argv, &nearest);
        if (!unknown.empty()) {
            std::cerr << "rtf: error: unknown command '" << unknown << "'"
                      << (nearest.empty() ? "" : "; the nearest command is '" + nearest + "'") << "\n"
                      << "Run 'rtf --help' for the commands.\n";
            return 1;
        }
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp &e) {
        return app.exit(e);
    } catch (const CLI::ParseError &e) {
        std::cerr << "rtf: error: " << e.what() << "\n"
                  << "Run 'rtf --help' (or 'rtf <command> --help') for the allowed commands, flags and values.\n";
        return 1;
    } catch (const rtf::Error &e) {
        std::cerr << "rtf: error: " << rtf::error_text(e) << "\n";
        return e.exit_code();
    }
    try {
        rtf::check_isa_env();  // a kernel level this CPU lacks is refused before anything runs
        if (version) return print_version(false);
        if (!action) {
            std::cout << app.help();
            return 0;
        }
        return action();
    } catch (const rtf::Error &e) {
        std::cerr << "rtf: " << rtf::to_string(e.kind()) << " error: " << rtf::error_text(e) << "\n";
        return e.exit_code();
    } catch (const std::exception &e) {
        std::cerr << "rtf: internal error: " << e.what() << "\n";
        return 3;
    }
}
