#pragma once
// Registry of `rtf` subcommands. Each cmd-<name>.cpp defines one function that adds its
// CLI11 subcommand and registers it with RTF_COMMAND(order, function); `order` sets the
// position in `rtf --help` (10 demo, 20 speak, 30 t2w, 31 t2w-prompt, 32 lm-bench, 40 simulate,
// 50 bench, 55 compare, 58 tune, 60 limits, 62 predict, 65 sample, 70 quality, 80 report,
// 82 duplex-report, 90 twin, 95 inspect, 100 devices, 110 version).
//
// Contract of a subcommand: it parses its flags into an options struct, validates them
// (throw rtf::Error(Usage) naming the flag and the allowed values), and sets `action`
// in its CLI11 callback. The action returns the process exit code: 0 success,
// 1 usage/setup error, 2 a target or gate missed, 3 incomplete/invalid run or stage
// failure. rtf::Error thrown from an action is mapped by main() to its exit code.
#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

namespace rtf::cli {

using Action = std::function<int()>;
using AddCommand = void (*)(CLI::App &app, Action &action);

struct CommandRegistration {
    int order;
    AddCommand add;
};

std::vector<CommandRegistration> &command_registry();

struct CommandRegistrar {
    CommandRegistrar(int order, AddCommand add) { command_registry().push_back({order, add}); }
};

#define RTF_COMMAND(order, fn) static const ::rtf::cli::CommandRegistrar rtf_command_##fn((order), (fn))

}  // namespace rtf::cli
