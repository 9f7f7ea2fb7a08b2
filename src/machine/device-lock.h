#pragma once
// Serialises graph computes on a backend device whose ggml backend cannot take them from
// several threads at once.
//
// Why: rtfkit's stages run on their own threads, and a placement may put two of them (or
// token2mel's two CFG lanes) on one device. ggml's CPU and CUDA backends are fine with that
// (each backend instance has its own threads or stream). ggml-vulkan is not: backend
// instances on one device share its queue, and concurrent computes crashed on lavapipe
// (issue 34; docs/vulkan.md). For such a device every compute — token2mel, the vocoder,
// libllama's decodes — holds the device's lock; the stages still overlap on other devices.
#include <mutex>
#include <vector>

#include <ggml-backend.h>

namespace rtf {

// True when computes on `dev` must be serialised (today: devices of the Vulkan backend).
bool device_needs_serial_compute(ggml_backend_dev_t dev);

// Holds the locks of those of `devs` that need it, taken in one global order (no deadlock
// between two guards over overlapping sets). Empty and free for CPU-only sets.
class DeviceComputeGuard {
public:
    explicit DeviceComputeGuard(ggml_backend_dev_t dev);
    explicit DeviceComputeGuard(const std::vector<ggml_backend_dev_t> &devs);
    DeviceComputeGuard(const DeviceComputeGuard &) = delete;
    DeviceComputeGuard &operator=(const DeviceComputeGuard &) = delete;

private:
    std::vector<std::unique_lock<std::mutex>> locks_;
};

}  // namespace rtf
