// rtf — entry point. Parses the command line (CLI11), runs the selected subcommand and
// maps errors to the documented exit codes: 0 ok, 1 usage/setup, 2 target missed,
// 3 incomplete/invalid run or a stage failure.
#include <algorithm>
#include <iostream>

#include "cli/commands.h"
#include "core/cpu-features.h"
#include "core/error.h"

namespace rtf::cli {
int print_version(bool json);

std::vector<CommandRegistration> &command_registry() {
    static std::vector<CommandRegistration> registry;
    return registry;
}
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
