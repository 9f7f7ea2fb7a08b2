#include "machine/device-lock.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>

namespace rtf {

namespace {
std::mutex &device_mutex(ggml_backend_dev_t dev) {
    static std::mutex registry_mu;
    static std::map<ggml_backend_dev_t, std::unique_ptr<std::mutex>> registry;
    std::lock_guard lock(registry_mu);
    auto &m = registry[dev];
    if (!m) m = std::make_unique<std::mutex>();
    return *m;
}
}  // namespace

bool device_needs_serial_compute(ggml_backend_dev_t dev) {
    if (!dev) return false;
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    return reg && std::strcmp(ggml_backend_reg_name(reg), "Vulkan") == 0;
}

DeviceComputeGuard::DeviceComputeGuard(ggml_backend_dev_t dev) : DeviceComputeGuard(std::vector<ggml_backend_dev_t>{dev}) {}

DeviceComputeGuard::DeviceComputeGuard(const std::vector<ggml_backend_dev_t> &devs) {
    std::vector<ggml_backend_dev_t> need;
    for (auto *d : devs) {
        if (device_needs_serial_compute(d)) need.push_back(d);
    }
    if (need.empty()) return;
    std::sort(need.begin(), need.end(), std::less<>{});  // one global order: pointer order
    need.erase(std::unique(need.begin(), need.end()), need.end());
    for (auto *d : need) locks_.emplace_back(device_mutex(d));
}

}  // namespace rtf
