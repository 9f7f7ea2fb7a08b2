#pragma once
// rtf::mon::Monitor — samples every available device at a fixed interval on its own thread
// while a benchmark runs, and summarises each device's timeline with its duty cycle.
//
//   mon::MonitorConfig mc;                  // interval 500 ms, CPU + NVML + npu-smi
//   mon::Monitor m(mc, [] { return prof::default_clock().now_ms(); });
//   m.start();  run_workload();  auto report = m.stop();
//   to_json(report)   // {"interval_ms", "samplers": {...}, "devices": {"cpu": {duty...}}}
//
// docs/method.md §3 asks for samples at <= 0.5 s: interval_ms must be in (0, 500]. The first
// reading is taken at start() (CPU figures are deltas, so the CPU sampler's first reading
// covers start() .. first tick). Samplers that are unavailable are listed with the reason;
// one that fails while running is disabled and its error kept. stop() joins the thread.
// Thread-safety: start/stop from one thread; the sampling thread touches only its own data.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "monitor/duty-cycle.h"
#include "monitor/sampler.h"

namespace rtf::mon {

struct MonitorConfig {
    double interval_ms = 500;   // (0, 500]
    bool cpu = true;            // /proc/stat: "cpu" (all cores) and "cpuN"
    bool per_core = true;       // include cpuN rows
    bool nvml = true;
    bool npu_smi = true;
    DutyCycleConfig duty;
    void validate() const;      // throws rtf::Error(Usage) naming --sample-ms
};

struct DeviceTimeline {
    std::string device;
    std::vector<UtilSample> samples;
    DutyCycle duty;
};

struct MonitorReport {
    double interval_ms = 0;
    std::map<std::string, std::string> samplers;  // name -> "active" or the reason it is not
    std::vector<DeviceTimeline> devices;          // in first-seen order
};

// The CPU sampler (always available on Linux). per_core: also one device per core.
std::unique_ptr<Sampler> make_cpu_sampler(bool per_core);

class Monitor {
public:
    using NowFn = std::function<double()>;
    // Makes the samplers the config asks for; unavailable ones are recorded, not fatal.
    Monitor(const MonitorConfig &cfg, NowFn now);
    // For tests: explicit samplers.
    Monitor(const MonitorConfig &cfg, NowFn now, std::vector<std::unique_ptr<Sampler>> samplers);
    ~Monitor();
    Monitor(const Monitor &) = delete;
    Monitor &operator=(const Monitor &) = delete;

    // Called after every tick with that tick's readings (all devices), e.g. for a live
    // progress line (`rtf sample`). Runs on the sampling thread (the final tail tick: on
    // stop()'s caller), so it must be quick and synchronise what it touches. Set it before
    // start(); the first reading that start() takes only primes the CPU deltas and is not
    // passed on. It must not throw. Optional: bench does not use it.
    using TickFn = std::function<void(double t_ms, const std::vector<DeviceReading> &readings)>;
    void on_tick(TickFn fn) { on_tick_ = std::move(fn); }

    void start();
    MonitorReport stop();
    const std::map<std::string, std::string> &sampler_status() const { return status_; }

private:
    void tick();
    void loop();
    MonitorConfig cfg_;
    NowFn now_;
    TickFn on_tick_;
    std::vector<std::unique_ptr<Sampler>> samplers_;
    std::map<std::string, std::string> status_;
    std::vector<DeviceTimeline> timelines_;
    std::thread thread_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    bool running_ = false;
};

nlohmann::json to_json(const MonitorReport &r, bool with_samples = false);

}  // namespace rtf::mon
