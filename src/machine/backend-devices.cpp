#include "machine/backend-devices.h"

#include <ggml-backend.h>
#include <llama.h>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace rtf {

namespace {
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
            b.devices.push_back(std::move(d));
        }
        return b;
    }();
    return info;
}

const BackendDevice &find_backend_device(const std::string &name) {
    const auto &info = backend_info();
    std::string names;
    for (const auto &d : info.devices) {
        if (d.name == name) return d;
        names += (names.empty() ? "" : ", ") + d.name;
    }
    throw_usage("backend device '" + name + "' does not exist in this build; available: " + names +
                " (see `rtf devices`)");
}

nlohmann::json to_json(const BackendInfo &info) {
    nlohmann::json devs = nlohmann::json::array();
    for (const auto &d : info.devices) {
        devs.push_back({{"name", d.name}, {"description", d.description}, {"type", d.type},
                        {"memory_free_bytes", d.memory_free}, {"memory_total_bytes", d.memory_total}});
    }
    return {{"backends", info.backends}, {"cpu_features", info.cpu_features}, {"devices", devs}};
}

}  // namespace rtf
