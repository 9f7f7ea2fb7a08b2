#pragma once
// Device utilisation timelines as Chrome trace counter events (ph "C"): one counter track
// per device, named "device <name>" (the names `rtf bench --trace` uses), with args
// {"compute_pct"} and, where the device reports it, {"memory_pct"}. Loads in
// ui.perfetto.dev and chrome://tracing next to the other tracks of a trace.
//
//   auto ev = mon::trace_counter_events(report, t0_ms, /*pid=*/1, /*per_core=*/true);
//   trace["traceEvents"].insert(trace["traceEvents"].end(), ev.begin(), ev.end());
//
// ts = (sample t_ms - t0_ms) * 1000 (microseconds, the Trace Event Format's unit). A sample
// without a compute figure is left out (a counter holds its last value until the next
// event; a null value does not load in every viewer). per_core = false drops the
// "cpuN" rows and keeps the "cpu" aggregate.
#include <nlohmann/json_fwd.hpp>

#include "monitor/monitor.h"

namespace rtf::mon {

// True for "cpu0", "cpu1", ...; false for "cpu" and other devices.
bool is_cpu_core_device(const std::string &device);

// A JSON array of "C" events, in device order, each device's in time order.
nlohmann::json trace_counter_events(const MonitorReport &report, double t0_ms, int pid, bool per_core);

}  // namespace rtf::mon
