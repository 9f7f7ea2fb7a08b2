// rtf version / rtf --version: what this binary is and what it was built against.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/cpu-features.h"
#include "machine/backend-devices.h"
#include "machine/provenance.h"
#include "rtf/build-info.h"

namespace rtf::cli {

int print_version(bool json) {
    if (json) {
        write_json(build_json(), "-");
        return 0;
    }
    std::cout << "rtf " << RTF_VERSION << " (" << RTF_BUILD_TYPE << ")\n"
              << "llama.cpp " << RTF_LLAMA_CPP_VERSION << "\n"
              << "ggml backends:";
    for (const auto &s : backend_info().backends) std::cout << " " << s;
    std::cout << "\ncpu features (ggml):";
    for (const auto &s : backend_info().cpu_features) std::cout << " " << s;
    std::cout << "\nkernel level: " << isa_level_name(isa_level());
    if (isa_level() != host_isa_level()) std::cout << " (RTF_ISA; this CPU runs " << isa_level_name(host_isa_level()) << ")";
    std::cout << "\n";
    return 0;
}

static void add_version_command(CLI::App &app, Action &action) {
    auto *sub = app.add_subcommand("version", "Print rtfkit's version, the llama.cpp commit it was built "
                                              "against, compiled ggml backends, CPU features and the kernel level "
                                              "(RTF_ISA=avx2|avx512|avx512-bf16|amx caps rtfkit's and oneDNN's "
                                              "kernels; a level this CPU lacks is refused)");
    auto json = std::make_shared<bool>(false);
    sub->add_flag("--json", *json, "Print as JSON");
    sub->callback([&action, json] { action = [json] { return print_version(*json); }; });
}

RTF_COMMAND(110, add_version_command);

}  // namespace rtf::cli
