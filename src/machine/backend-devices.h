#pragma once
// ggml backend devices (CPU, CUDA, Vulkan, ...) as compiled into, or loaded by, this build.
//
// Vulkan (cmake -DRTF_VULKAN=ON, scripts/setup.sh --vulkan): ggml's Vulkan backend is a module
// (libggml-vulkan.so, built by scripts/fetch-llama.sh --vulkan) that backend_info() loads on
// first use: RTF_VULKAN_MODULE=PATH if set, else the copy `cmake --install` puts in
// <libdir>/rtfkit/ beside an installed rtf or librtf.so, else the build tree's. A Vulkan device that runs on
// the CPU (Mesa's lavapipe, "llvmpipe"; SwiftShader) is marked `software`: ggml hides such
// devices and rtf refuses to place a stage on one unless RTF_ALLOW_SOFTWARE_DEVICE=1 is set
// (then rtf makes ggml show them too). Tests set it to check correctness on lavapipe; its
// speed means nothing.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rtf {

struct BackendDevice {
    std::string name;         // ggml's device name, e.g. "CPU", "CUDA0" (used by --device flags)
    std::string description;  // e.g. the GPU's marketing name
    std::string type;         // "cpu", "gpu", "igpu", "accel"
    size_t memory_free = 0;   // bytes
    size_t memory_total = 0;  // bytes
    std::string backend;      // the registering backend: "CPU", "CUDA", "Vulkan", ...
    bool software = false;    // a GPU API device that runs on the CPU (lavapipe, SwiftShader)
};

struct BackendInfo {
    std::vector<std::string> backends;      // registered ggml backends, e.g. {"CPU"}
    std::vector<std::string> cpu_features;  // e.g. {"AVX2", "F16C", "FMA", ...} as ggml reports them
    std::vector<BackendDevice> devices;
    // What a user should know about devices not in `devices`: a software Vulkan device
    // hidden without the opt-in, a Vulkan module that failed to load.
    std::vector<std::string> notes;
    std::string vulkan_module;  // the Vulkan module file loaded ("" = none)
};

// RTF_ALLOW_SOFTWARE_DEVICE=1: software devices may be listed and used.
bool software_devices_allowed();

// Initialises ggml's backends once (thread-safe) and lists them.
const BackendInfo &backend_info();

// Throws rtf::Error(Usage) listing the available names when `name` is unknown, and when it
// names a software device without the opt-in.
const BackendDevice &find_backend_device(const std::string &name);

// The devices a stage placed on "auto" may offload to: libllama's own default (the GPUs, else
// the integrated GPUs) without the software ones, so the opt-in never moves an "auto" stage
// onto lavapipe. Used only when any_software_device(); otherwise libllama picks as always.
std::vector<std::string> auto_offload_devices();
bool any_software_device();

nlohmann::json to_json(const BackendInfo &info);

}  // namespace rtf
