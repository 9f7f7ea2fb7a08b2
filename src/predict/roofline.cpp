#include "predict/roofline.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace rtf::predict {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace

double MachineRates::read_gib_s(int n_threads) const {
    double best = kNaN;
    for (const auto &b : bandwidth)
        if (b.n_threads <= n_threads && !(b.read_gib_s <= best)) best = b.read_gib_s;
    if (std::isnan(best) && !bandwidth.empty()) {  // only larger thread counts measured: the smallest
        const BandwidthResult *lo = &bandwidth.front();
        for (const auto &b : bandwidth)
            if (b.n_threads < lo->n_threads) lo = &b;
        best = lo->read_gib_s;
    }
    return best;
}

double MachineRates::gflops(const std::string &type, int n_threads) const {
    const std::string t = type == "f32" ? "f32" : "f16";
    double best = kNaN;
    for (const auto &m : matmul) {
        if (m.device != "CPU" || m.type != t) continue;
        if (m.n_threads <= n_threads && !(m.gflops <= best)) best = m.gflops;
    }
    return best;
}

double MachineRates::peak_gflops(const std::string &type, int n_threads) const {
    const std::string t = type == "f32" ? "f32" : "f16";
    double best = kNaN;
    for (const auto &m : peak) {
        if (m.type != t || m.gflops <= 0) continue;
        if (m.n_threads <= n_threads && !(m.gflops <= best)) best = m.gflops;
    }
    return best;
}

PathLimits path_limits(const ModelCosts &costs, const MachineRates &rates, const std::map<std::string, int> &stage_threads,
                       int total_threads) {
    PathLimits p;
    p.total_threads = total_threads;
    double sum_bytes = 0, sum_compute_all = 0, max_floor = 0;
    for (const auto &c : costs.stages) {
        StageFloor f;
        f.stage = c.stage;
        auto it = stage_threads.find(c.stage);
        f.n_threads = it != stage_threads.end() ? it->second : total_threads;
        f.bytes_per_audio_s = c.bytes_per_unit * c.units_per_audio_s;
        f.flops_per_audio_s = c.flops_per_unit * c.units_per_audio_s;
        f.memory_rtf = f.bytes_per_audio_s / (rates.read_gib_s(f.n_threads) * kGiB);
        f.compute_rtf_ggml = f.flops_per_audio_s / (rates.gflops(c.weight_type, f.n_threads) * 1e9);
        const double pk = rates.peak_gflops(c.weight_type, f.n_threads);
        f.compute_rate = std::isfinite(pk) ? "peak" : "ggml";
        f.compute_rtf = std::isfinite(pk) ? f.flops_per_audio_s / (pk * 1e9) : f.compute_rtf_ggml;
        f.floor_rtf = std::max(f.memory_rtf, f.compute_rtf);
        f.bound = f.memory_rtf >= f.compute_rtf ? "memory" : "compute";
        p.serial_rtf += f.floor_rtf;
        max_floor = std::max(max_floor, f.floor_rtf);
        sum_bytes += f.bytes_per_audio_s;
        const double pk_all = rates.peak_gflops(c.weight_type, total_threads);
        sum_compute_all += f.flops_per_audio_s / ((std::isfinite(pk_all) ? pk_all : rates.gflops(c.weight_type, total_threads)) * 1e9);
        p.stages.push_back(f);
    }
    double mem_all = sum_bytes / (rates.read_gib_s(total_threads) * kGiB);
    p.overlapped_rtf = std::max({max_floor, mem_all, sum_compute_all});
    if (p.overlapped_rtf == max_floor) p.overlapped_binding = "the slowest stage's own floor";
    else if (p.overlapped_rtf == mem_all) p.overlapped_binding = "the shared memory bus (sum of all stages' bytes)";
    else p.overlapped_binding = "the shared cores (sum of all stages' FLOPs)";
    return p;
}

nlohmann::json to_json(const PathLimits &p) {
    auto st = nlohmann::json::array();
    auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    for (const auto &f : p.stages)
        st.push_back({{"name", f.stage},
                      {"n_threads", f.n_threads},
                      {"bytes_per_audio_s", f.bytes_per_audio_s},
                      {"flops_per_audio_s", f.flops_per_audio_s},
                      {"memory_rtf", num(f.memory_rtf)},
                      {"compute_rtf", num(f.compute_rtf)},
                      {"compute_rate", f.compute_rate},
                      {"compute_rtf_ggml", num(f.compute_rtf_ggml)},
                      {"floor_rtf", num(f.floor_rtf)},
                      {"bound", f.bound}});
    return {{"stages", st},
            {"serial_rtf", num(p.serial_rtf)},
            {"overlapped_rtf", num(p.overlapped_rtf)},
            {"overlapped_binding", p.overlapped_binding},
            {"total_threads", p.total_threads}};
}

}  // namespace rtf::predict
