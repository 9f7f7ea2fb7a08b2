#include "monitor/monitor.h"

#include <chrono>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "monitor/cpu-stat.h"
#include "monitor/npu-smi.h"
#include "monitor/nvidia.h"

namespace rtf::mon {

void MonitorConfig::validate() const {
    if (!(interval_ms > 0 && interval_ms <= 500))
        throw_usage("--sample-ms: " + std::to_string(interval_ms) +
                    " is outside (0, 500] ms (sample at 0.5 s or faster)");
    duty.validate();
}

namespace {

class CpuSampler final : public Sampler {
public:
    explicit CpuSampler(bool per_core) : per_core_(per_core), prev_(read_proc_stat()) {}
    std::string name() const override { return "cpu"; }
    std::vector<DeviceReading> sample(double t_ms) override {
        auto now = read_proc_stat();
        auto util = cpu_utilisation(prev_, now);
        prev_ = std::move(now);
        std::vector<DeviceReading> out;
        for (const auto &u : util) {
            if (u.index >= 0 && !per_core_) continue;
            UtilSample s;
            s.t_ms = t_ms;
            s.compute_pct = u.busy_pct;
            out.push_back({u.name, s});
        }
        return out;
    }

private:
    bool per_core_;
    std::vector<CpuTimes> prev_;
};

}  // namespace

std::unique_ptr<Sampler> make_cpu_sampler(bool per_core) { return std::make_unique<CpuSampler>(per_core); }

Monitor::Monitor(const MonitorConfig &cfg, NowFn now) : cfg_(cfg), now_(std::move(now)) {
    cfg_.validate();
    if (cfg_.cpu) {
        try {
            samplers_.push_back(make_cpu_sampler(cfg_.per_core));
            status_["cpu"] = "active";
        } catch (const Error &e) {
            status_["cpu"] = std::string("unavailable: ") + e.what();
        }
    }
    if (cfg_.nvml) {
        std::string why;
        if (auto s = make_nvml_sampler(&why)) {
            samplers_.push_back(std::move(s));
            status_["nvml"] = "active";
        } else {
            status_["nvml"] = why;
        }
    }
    if (cfg_.npu_smi) {
        std::string why;
        if (auto s = make_npu_smi_sampler(&why)) {
            samplers_.push_back(std::move(s));
            status_["npu-smi"] = "active";
        } else {
            status_["npu-smi"] = why;
        }
    }
}

Monitor::Monitor(const MonitorConfig &cfg, NowFn now, std::vector<std::unique_ptr<Sampler>> samplers)
    : cfg_(cfg), now_(std::move(now)), samplers_(std::move(samplers)) {
    cfg_.validate();
    for (const auto &s : samplers_) status_[s->name()] = "active";
}

Monitor::~Monitor() {
    if (running_) stop();
}

void Monitor::tick() {
    double t = now_();
    std::vector<DeviceReading> seen;  // only kept for on_tick_
    for (auto &s : samplers_) {
        if (!s) continue;
        try {
            for (auto &r : s->sample(t)) {
                if (on_tick_) seen.push_back(r);
                DeviceTimeline *tl = nullptr;
                for (auto &x : timelines_)
                    if (x.device == r.device) tl = &x;
                if (!tl) {
                    timelines_.push_back({r.device, {}, {}});
                    tl = &timelines_.back();
                }
                tl->samples.push_back(r.sample);
            }
        } catch (const std::exception &e) {
            status_[s->name()] = std::string("disabled after an error: ") + e.what();
            s.reset();
        }
    }
    if (on_tick_) on_tick_(t, seen);
}

void Monitor::loop() {
    std::unique_lock lock(mu_);
    auto next = std::chrono::steady_clock::now();
    const auto step = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double, std::milli>(cfg_.interval_ms));
    while (true) {
        next += step;
        if (cv_.wait_until(lock, next, [&] { return stop_; })) break;
        lock.unlock();
        tick();
        lock.lock();
    }
}

void Monitor::start() {
    if (running_) return;
    timelines_.clear();
    // A first reading now: for CPUs it only resets the delta base (see header).
    for (auto &s : samplers_) {
        if (s && s->name() == "cpu") {
            try {
                s->sample(now_());
            } catch (const std::exception &) {
            }
        }
    }
    stop_ = false;
    running_ = true;
    thread_ = std::thread([this] { loop(); });
}

MonitorReport Monitor::stop() {
    MonitorReport r;
    r.interval_ms = cfg_.interval_ms;
    if (running_) {
        {
            std::lock_guard lock(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
        running_ = false;
        tick();  // the tail since the last tick
    }
    for (auto &tl : timelines_) tl.duty = compute_duty_cycle(tl.samples, cfg_.duty);
    r.samplers = status_;
    r.devices = timelines_;
    return r;
}

nlohmann::json to_json(const MonitorReport &r, bool with_samples) {
    nlohmann::json devices = nlohmann::json::object();
    for (const auto &d : r.devices) {
        auto j = to_json(d.duty);
        if (with_samples) {
            auto arr = nlohmann::json::array();
            for (const auto &s : d.samples) {
                auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
                arr.push_back({s.t_ms, num(s.compute_pct), num(s.memory_pct)});
            }
            j["samples"] = arr;
            j["samples_columns"] = {"t_ms", "compute_pct", "memory_pct"};
        }
        devices[d.device] = j;
    }
    return {{"interval_ms", r.interval_ms}, {"samplers", r.samplers}, {"devices", devices}};
}

}  // namespace rtf::mon
