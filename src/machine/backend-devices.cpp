#include "machine/backend-devices.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <ggml-backend.h>
#include <llama.h>

#include <nlohmann/json.hpp>

#if RTF_VULKAN
#include <dlfcn.h>
#include <vulkan/vulkan.h>
#endif

#include "core/error.h"

namespace rtf {

namespace {
std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

// Mesa's lavapipe calls itself "llvmpipe (LLVM ...)"; Google's SwiftShader "SwiftShader Device".
bool software_name(const std::string &description) {
    const std::string d = lower(description);
    return d.find("llvmpipe") != std::string::npos || d.find("lavapipe") != std::string::npos ||
           d.find("swiftshader") != std::string::npos;
}

#if RTF_VULKAN
struct PhysicalDevice {
    std::string name;
    bool cpu_type = false;  // VK_PHYSICAL_DEVICE_TYPE_CPU
};

// The Vulkan loader's own list, in the order ggml indexes GGML_VK_VISIBLE_DEVICES by.
std::vector<PhysicalDevice> vulkan_physical_devices() {
    std::vector<PhysicalDevice> out;
    VkApplicationInfo app{};
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "rtf";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ci.pApplicationInfo = &app;
    VkInstance inst = nullptr;
    if (vkCreateInstance(&ci, nullptr, &inst) != VK_SUCCESS) return out;
    uint32_t n = 0;
    if (vkEnumeratePhysicalDevices(inst, &n, nullptr) == VK_SUCCESS && n > 0) {
        std::vector<VkPhysicalDevice> devs(n);
        if (vkEnumeratePhysicalDevices(inst, &n, devs.data()) == VK_SUCCESS) {
            for (uint32_t i = 0; i < n; ++i) {
                VkPhysicalDeviceProperties p{};
                vkGetPhysicalDeviceProperties(devs[i], &p);
                out.push_back({p.deviceName, p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU});
            }
        }
    }
    vkDestroyInstance(inst, nullptr);
    return out;
}

// Loads ggml's Vulkan module before anything lists devices. ggml reads
// GGML_VK_VISIBLE_DEVICES once, when the module registers, so the opt-in is applied here.
// The module `cmake --install` copies into <libdir>/rtfkit/, found from where this code was
// loaded: an installed bin/rtf (../<libdir>/rtfkit) or <libdir>/librtf.so (./rtfkit).
// "" when no installed copy is there (a build tree).
std::string installed_vulkan_module() {
    namespace fs = std::filesystem;
    std::vector<fs::path> dirs;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&installed_vulkan_module), &info) && info.dli_fname && *info.dli_fname)
        dirs.push_back(fs::path(info.dli_fname).parent_path());
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) dirs.push_back(exe.parent_path());
    for (const auto &d : dirs)
        for (const fs::path &c : {d / ".." / RTF_INSTALL_LIBDIR / "rtfkit" / "libggml-vulkan.so", d / "rtfkit" / "libggml-vulkan.so"})
            if (fs::exists(c, ec)) return fs::weakly_canonical(c, ec).string();
    return "";
}

void load_vulkan_module(BackendInfo &b) {
    const char *env = std::getenv("RTF_VULKAN_MODULE");
    const std::string installed = env && *env ? "" : installed_vulkan_module();
    const std::string path = env && *env ? env : !installed.empty() ? installed : RTF_VULKAN_MODULE_PATH;
    if (!std::filesystem::exists(path)) {
        b.notes.push_back("Vulkan: no module at " + path + " (scripts/fetch-llama.sh --vulkan builds it)");
        return;
    }
    const auto phys = vulkan_physical_devices();
    const bool user_list = std::getenv("GGML_VK_VISIBLE_DEVICES") != nullptr;
    if (!user_list) {
        std::string software, all;
        for (size_t i = 0; i < phys.size(); ++i) {
            all += (all.empty() ? "" : ",") + std::to_string(i);
            if (phys[i].cpu_type || software_name(phys[i].name)) software += (software.empty() ? "" : ", ") + phys[i].name;
        }
        if (!software.empty() && software_devices_allowed()) {
            setenv("GGML_VK_VISIBLE_DEVICES", all.c_str(), 0);  // ggml's default skips CPU-type devices
        } else if (!software.empty()) {
            b.notes.push_back("Vulkan: " + software +
                              ": a software device (runs on the CPU), hidden; RTF_ALLOW_SOFTWARE_DEVICE=1 shows it");
        }
    }
    if (!ggml_backend_load(path.c_str())) b.notes.push_back("Vulkan: the module " + path + " did not load (see stderr)");
    else b.vulkan_module = path;
}
#endif

const char *type_name(enum ggml_backend_dev_type t) {
    switch (t) {
        case GGML_BACKEND_DEVICE_TYPE_CPU: return "cpu";
        case GGML_BACKEND_DEVICE_TYPE_GPU: return "gpu";
        case GGML_BACKEND_DEVICE_TYPE_IGPU: return "igpu";
        case GGML_BACKEND_DEVICE_TYPE_ACCEL: return "accel";
        default: return "other";
    }
}
}  // namespace

const BackendInfo &backend_info() {
    static const BackendInfo info = [] {
        BackendInfo b;
#if RTF_VULKAN
        // ggml's module loading logs at INFO to stderr ("loaded Vulkan backend from ...");
        // keep warnings and errors until the LM layer installs its own callback
        // (models/lm/llama-runtime.cpp; RTF_LLAMA_LOG=1 shows everything)
        const char *echo = std::getenv("RTF_LLAMA_LOG");
        if (!(echo && std::string(echo) == "1"))
            ggml_log_set(
                [](enum ggml_log_level level, const char *text, void *) {
                    if (level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
                },
                nullptr);
        load_vulkan_module(b);
#endif
        ggml_backend_load_all();  // no-op for statically registered backends
        for (size_t i = 0; i < ggml_backend_reg_count(); ++i) {
            ggml_backend_reg_t reg = ggml_backend_reg_get(i);
            b.backends.emplace_back(ggml_backend_reg_name(reg));
            // Backends that know CPU features export this optional entry point.
            auto get_features = reinterpret_cast<ggml_backend_get_features_t>(
                ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features"));
            if (get_features && std::string(ggml_backend_reg_name(reg)) == "CPU") {
                for (ggml_backend_feature *f = get_features(reg); f && f->name; ++f) {
                    std::string v = f->value ? f->value : "";
                    b.cpu_features.push_back(v == "1" || v.empty() ? f->name : std::string(f->name) + "=" + v);
                }
            }
        }
        for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
            ggml_backend_dev_t dev = ggml_backend_dev_get(i);
            BackendDevice d;
            d.name = ggml_backend_dev_name(dev);
            d.description = ggml_backend_dev_description(dev);
            d.type = type_name(ggml_backend_dev_type(dev));
            ggml_backend_dev_memory(dev, &d.memory_free, &d.memory_total);
            d.backend = ggml_backend_reg_name(ggml_backend_dev_backend_reg(dev));
            d.software = d.type != "cpu" && software_name(d.description);
            b.devices.push_back(std::move(d));
        }
        return b;
    }();
    return info;
}

bool software_devices_allowed() {
    const char *e = std::getenv("RTF_ALLOW_SOFTWARE_DEVICE");
    return e && std::string(e) == "1";
}

const BackendDevice &find_backend_device(const std::string &name) {
    const auto &info = backend_info();
    std::string names;
    for (const auto &d : info.devices) {
        if (d.name == name) {
            if (d.software && !software_devices_allowed())
                throw_usage("backend device '" + name + "' (" + d.description +
                            ") is a software device: it runs on the CPU, slower than the CPU backend; set "
                            "RTF_ALLOW_SOFTWARE_DEVICE=1 to place a stage on it anyway (tests do, for correctness)");
            return d;
        }
        names += (names.empty() ? "" : ", ") + d.name;
    }
    throw_usage("backend device '" + name + "' does not exist in this build; available: " + names +
                " (see `rtf devices`)");
}

std::vector<std::string> auto_offload_devices() {
    // libllama's own default: the GPUs, else the integrated GPUs
    std::vector<std::string> gpus, igpus;
    for (const auto &d : backend_info().devices) {
        if (d.software) continue;
        if (d.type == "gpu") gpus.push_back(d.name);
        if (d.type == "igpu") igpus.push_back(d.name);
    }
    return gpus.empty() ? igpus : gpus;
}

bool any_software_device() {
    const auto &devs = backend_info().devices;
    return std::any_of(devs.begin(), devs.end(), [](const BackendDevice &d) { return d.software; });
}

nlohmann::json to_json(const BackendInfo &info) {
    nlohmann::json devs = nlohmann::json::array();
    for (const auto &d : info.devices) {
        devs.push_back({{"name", d.name}, {"description", d.description}, {"type", d.type}, {"backend", d.backend},
                        {"software", d.software}, {"memory_free_bytes", d.memory_free},
                        {"memory_total_bytes", d.memory_total}});
    }
    return {{"backends", info.backends}, {"cpu_features", info.cpu_features}, {"devices", devs}, {"notes", info.notes},
            {"vulkan_module", info.vulkan_module}};
}

}  // namespace rtf
