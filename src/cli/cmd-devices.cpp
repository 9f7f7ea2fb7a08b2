// rtf devices: ggml backend devices and the CPU topology (hwloc) — what --device and
// --cpus flags can name.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/topology.h"
#include "machine/backend-devices.h"

namespace rtf::cli {

namespace {
int run_devices(bool json) {
    const auto &b = backend_info();
    const auto &t = cpu_topology();
    if (json) {
        write_json({{"backend", to_json(b)}, {"cpu", to_json(t)}}, "-");
        return 0;
    }
    std::cout << "backend devices (use the name with --device):\n";
    for (const auto &d : b.devices) {
        std::cout << "  " << d.name << "  [" << d.type << (d.software ? ", software" : "") << "]  " << d.description
                  << "  memory " << human_bytes(static_cast<double>(d.memory_free)) << " free / "
                  << human_bytes(static_cast<double>(d.memory_total)) << "\n";
    }
    for (const auto &n : b.notes) std::cout << "  note: " << n << "\n";
    std::cout << "cpu: " << (t.cpu_model.empty() ? "unknown model" : t.cpu_model) << "\n"
              << "  packages " << t.n_packages << ", cores " << t.n_cores << ", PUs " << t.n_pus
              << ", allowed PUs " << format_pu_list(t.allowed_pus) << "\n";
    for (const auto &n : t.numa_nodes) {
        std::cout << "  NUMA node " << n.os_index << ": PUs " << format_pu_list(n.pus) << ", memory "
                  << human_bytes(static_cast<double>(n.memory)) << "\n";
    }
    return 0;
}
}  // namespace

static void add_devices_command(CLI::App &app, Action &action) {
    auto *sub = app.add_subcommand("devices", "List ggml backend devices (name, type, memory) and the CPU "
                                              "topology (packages, NUMA nodes, cores, PUs). A software device (a Vulkan "
                                              "device that runs on the CPU, e.g. lavapipe) is hidden, or marked "
                                              "'software', and usable only with RTF_ALLOW_SOFTWARE_DEVICE=1 (docs/vulkan.md)");
    auto json = std::make_shared<bool>(false);
    sub->add_flag("--json", *json, "Print as JSON");
    sub->callback([&action, json] { action = [json] { return run_devices(*json); }; });
}

RTF_COMMAND(100, add_devices_command);

}  // namespace rtf::cli
