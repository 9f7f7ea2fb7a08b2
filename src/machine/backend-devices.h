#pragma once
// ggml backend devices (CPU, CUDA, ...) as compiled into this build of llama.cpp.
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
};

struct BackendInfo {
    std::vector<std::string> backends;      // registered ggml backends, e.g. {"CPU"}
    std::vector<std::string> cpu_features;  // e.g. {"AVX2", "F16C", "FMA", ...} as ggml reports them
    std::vector<BackendDevice> devices;
};

// Initialises ggml's backends once (thread-safe) and lists them.
const BackendInfo &backend_info();

// Throws rtf::Error(Usage) listing the available names when `name` is unknown.
const BackendDevice &find_backend_device(const std::string &name);

nlohmann::json to_json(const BackendInfo &info);

}  // namespace rtf
