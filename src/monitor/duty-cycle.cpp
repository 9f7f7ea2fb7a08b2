#include "monitor/duty-cycle.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace rtf::mon {

namespace {
nlohmann::json num(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

void DutyCycleConfig::validate() const {
    auto check = [](double v, const char *what) {
        if (!(v >= 0 && v < 100))
            throw_usage(std::string(what) + ": " + std::to_string(v) + " % is outside [0, 100)");
    };
    check(compute_threshold_pct, "--duty-compute-pct");
    check(memory_threshold_pct, "--duty-memory-pct");
}

DutyCycle compute_duty_cycle(const std::vector<UtilSample> &samples, const DutyCycleConfig &cfg) {
    DutyCycle d;
    d.config = cfg;
    double sum = 0, sum_mem = 0, sum_active = 0, mx = kNotReported;
    int n_mem = 0;
    for (const auto &s : samples) {
        if (std::isnan(s.memory_pct)) continue;
        d.memory_reported = true;
    }
    for (const auto &s : samples) {
        if (std::isnan(s.compute_pct)) {
            ++d.n_missing;
            continue;
        }
        ++d.n;
        sum += s.compute_pct;
        mx = std::isnan(mx) ? s.compute_pct : std::max(mx, s.compute_pct);
        if (!std::isnan(s.memory_pct)) {
            sum_mem += s.memory_pct;
            ++n_mem;
        }
        bool compute_on = s.compute_pct > cfg.compute_threshold_pct;
        // A device that reports memory on some samples and not on others: a sample without
        // the figure cannot prove memory traffic, so it is not active.
        bool memory_on = d.memory_reported ? (!std::isnan(s.memory_pct) && s.memory_pct > cfg.memory_threshold_pct)
                                           : true;
        if (compute_on && memory_on) {
            ++d.n_active;
            sum_active += s.compute_pct;
        }
    }
    d.duty_cycle = d.n ? static_cast<double>(d.n_active) / d.n : kNotReported;
    d.mean_compute = d.n ? sum / d.n : kNotReported;
    d.mean_memory = n_mem ? sum_mem / n_mem : kNotReported;
    d.active_mean_compute = d.n_active ? sum_active / d.n_active : kNotReported;
    d.max_compute = mx;
    return d;
}

nlohmann::json to_json(const DutyCycle &d) {
    return {{"n", d.n},
            {"n_missing", d.n_missing},
            {"n_active", d.n_active},
            {"duty_cycle", num(d.duty_cycle)},
            {"mean_compute_pct", num(d.mean_compute)},
            {"mean_memory_pct", num(d.mean_memory)},
            {"active_mean_compute_pct", num(d.active_mean_compute)},
            {"max_compute_pct", num(d.max_compute)},
            {"memory_reported", d.memory_reported},
            {"thresholds",
             {{"compute_pct", d.config.compute_threshold_pct}, {"memory_pct", d.config.memory_threshold_pct}}}};
}

}  // namespace rtf::mon
