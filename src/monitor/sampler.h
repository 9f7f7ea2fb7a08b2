#pragma once
// rtf::mon::Sampler — one source of device utilisation readings (CPU, NVIDIA, Ascend).
//
// sample(t_ms) is called from the Monitor's thread (monitor.h) at every interval and returns
// one reading per device it sees (e.g. "cpu", "cpu0", "cpu1" or "nvidia0"). A sampler that
// fails at run time throws rtf::Error(Runtime); the Monitor then disables it and records why
// (a sampler never stops a benchmark).
//
// Availability is decided when the sampler is made (make_*_sampler() in the headers of each
// kind): a machine without the device gives nullptr plus a reason such as "unavailable:
// libnvidia-ml.so.1 not found" — not an error.
#include <string>
#include <vector>

#include "monitor/util-sample.h"

namespace rtf::mon {

struct DeviceReading {
    std::string device;  // e.g. "cpu", "cpu0", "nvidia0", "npu0.0"
    UtilSample sample;
};

class Sampler {
public:
    virtual ~Sampler() = default;
    virtual std::string name() const = 0;  // "cpu", "nvml", "npu-smi"
    virtual std::vector<DeviceReading> sample(double t_ms) = 0;
};

}  // namespace rtf::mon
