#include "monitor/trace-counters.h"

#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

namespace rtf::mon {

bool is_cpu_core_device(const std::string &device) {
    if (device.size() <= 3 || device.compare(0, 3, "cpu") != 0) return false;
    for (size_t i = 3; i < device.size(); ++i)
        if (!std::isdigit(static_cast<unsigned char>(device[i]))) return false;
    return true;
}

nlohmann::json trace_counter_events(const MonitorReport &report, double t0_ms, int pid, bool per_core) {
    auto ev = nlohmann::json::array();
    for (const auto &d : report.devices) {
        if (!per_core && is_cpu_core_device(d.device)) continue;
        const std::string name = "device " + d.device;
        for (const auto &s : d.samples) {
            if (!std::isfinite(s.compute_pct)) continue;
            nlohmann::json args = {{"compute_pct", s.compute_pct}};
            if (std::isfinite(s.memory_pct)) args["memory_pct"] = s.memory_pct;
            ev.push_back({{"name", name}, {"ph", "C"}, {"pid", pid}, {"ts", (s.t_ms - t0_ms) * 1000.0}, {"args", args}});
        }
    }
    return ev;
}

}  // namespace rtf::mon
