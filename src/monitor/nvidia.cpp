#include "monitor/nvidia.h"

#include <dlfcn.h>

#include <cstdlib>
#include <sstream>

#include "core/error.h"
#include "core/parse.h"

namespace rtf::mon {

namespace {

// "35 %", "35", "1234 MiB", "[N/A]", "[Not Supported]", "" -> number or NaN. Returns false
// when the text is neither a number nor a documented "not available" marker.
bool parse_field(const std::string &raw, double &out) {
    std::string t = trim(raw);
    if (t.empty() || t.front() == '[' || t == "N/A") {
        out = kNotReported;
        return true;
    }
    char *end = nullptr;
    double v = std::strtod(t.c_str(), &end);
    if (end == t.c_str()) return false;
    std::string unit = trim(std::string_view(end));
    if (!(unit.empty() || unit == "%" || unit == "MiB" || unit == "W" || unit == "MHz" || unit == "C")) return false;
    out = v;
    return true;
}

std::string column_key(const std::string &header_field) {
    std::string t = trim(header_field);
    auto p = t.find(" [");
    return p == std::string::npos ? t : t.substr(0, p);
}

}  // namespace

NvidiaSmiParse parse_nvidia_smi_csv(const std::string &text) {
    NvidiaSmiParse r;
    std::vector<std::string> cols = split(kNvidiaSmiQuery, ',');
    std::istringstream in(text);
    std::string line;
    int line_no = 0;
    bool header_seen = false;
    while (std::getline(in, line)) {
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (trim(line).empty()) continue;
        auto fields = split(line, ',');
        if (!header_seen && line.find("utilization.gpu") != std::string::npos) {
            cols.clear();
            for (const auto &f : fields) cols.push_back(column_key(f));
            header_seen = true;
            continue;
        }
        auto skip = [&](const std::string &why) {
            ++r.n_skipped;
            r.warnings.push_back("nvidia-smi line " + std::to_string(line_no) + " skipped (" + why + "): '" + line + "'");
        };
        if (fields.size() != cols.size()) {
            skip("expected " + std::to_string(cols.size()) + " fields, got " + std::to_string(fields.size()));
            continue;
        }
        GpuReading g;
        bool ok = true, have_index = false;
        for (size_t i = 0; i < cols.size() && ok; ++i) {
            const std::string &c = cols[i];
            if (c == "name") {
                g.name = trim(fields[i]);
                continue;
            }
            double v = 0;
            if (!parse_field(fields[i], v)) {
                skip("column " + c + " is not a number: '" + trim(fields[i]) + "'");
                ok = false;
                break;
            }
            if (c == "index") {
                if (std::isnan(v) || v < 0 || v != static_cast<int>(v)) {
                    skip("index is not a GPU number");
                    ok = false;
                    break;
                }
                g.index = static_cast<int>(v);
                have_index = true;
            } else if (c == "utilization.gpu") {
                g.util_gpu_pct = v;
            } else if (c == "utilization.memory") {
                g.util_mem_pct = v;
            } else if (c == "memory.used") {
                g.mem_used_mib = v;
            } else if (c == "memory.total") {
                g.mem_total_mib = v;
            }
        }
        if (!ok) continue;
        if (!have_index) {
            skip("no index column");
            continue;
        }
        r.gpus.push_back(g);
    }
    return r;
}

std::vector<DeviceReading> to_readings(const std::vector<GpuReading> &gpus, double t_ms) {
    std::vector<DeviceReading> out;
    for (const auto &g : gpus) {
        UtilSample s;
        s.t_ms = t_ms;
        s.compute_pct = g.util_gpu_pct;
        s.memory_pct = g.util_mem_pct;
        s.mem_used_mib = g.mem_used_mib;
        out.push_back({"nvidia" + std::to_string(g.index), s});
    }
    return out;
}

namespace {

// The few NVML entry points used (nvml.h, stable ABI since NVML 5; the _v2 names since CUDA 8).
using nvmlReturn_t = int;
using nvmlDevice_t = void *;
struct nvmlUtilization_t {
    unsigned int gpu;
    unsigned int memory;
};
struct nvmlMemory_t {
    unsigned long long total, free, used;
};

class NvmlSampler final : public Sampler {
public:
    ~NvmlSampler() override {
        if (shutdown_) shutdown_();
        if (lib_) dlclose(lib_);
    }

    static std::unique_ptr<Sampler> open(std::string *why) {
        auto s = std::unique_ptr<NvmlSampler>(new NvmlSampler());
        s->lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!s->lib_) {
            if (why) *why = "unavailable: libnvidia-ml.so.1 not found (no NVIDIA driver)";
            return nullptr;
        }
        bool ok = s->sym(s->init_, "nvmlInit_v2") && s->sym(s->shutdown_, "nvmlShutdown") &&
                  s->sym(s->count_, "nvmlDeviceGetCount_v2") && s->sym(s->handle_, "nvmlDeviceGetHandleByIndex_v2") &&
                  s->sym(s->util_, "nvmlDeviceGetUtilizationRates") && s->sym(s->mem_, "nvmlDeviceGetMemoryInfo");
        if (!ok) {
            if (why) *why = "unavailable: libnvidia-ml.so.1 lacks a needed NVML symbol";
            s->shutdown_ = nullptr;
            return nullptr;
        }
        if (s->init_() != 0) {
            if (why) *why = "unavailable: nvmlInit failed (driver not loaded?)";
            s->shutdown_ = nullptr;
            return nullptr;
        }
        unsigned n = 0;
        if (s->count_(&n) != 0 || n == 0) {
            if (why) *why = "unavailable: NVML reports no GPU";
            return nullptr;
        }
        for (unsigned i = 0; i < n; ++i) {
            nvmlDevice_t h = nullptr;
            if (s->handle_(i, &h) == 0) s->devices_.push_back(h);
        }
        return s;
    }

    std::string name() const override { return "nvml"; }

    std::vector<DeviceReading> sample(double t_ms) override {
        std::vector<GpuReading> gpus;
        for (size_t i = 0; i < devices_.size(); ++i) {
            GpuReading g;
            g.index = static_cast<int>(i);
            nvmlUtilization_t u{};
            if (util_(devices_[i], &u) == 0) {
                g.util_gpu_pct = u.gpu;
                g.util_mem_pct = u.memory;
            }
            nvmlMemory_t m{};
            if (mem_(devices_[i], &m) == 0) {
                g.mem_used_mib = static_cast<double>(m.used) / (1024.0 * 1024.0);
                g.mem_total_mib = static_cast<double>(m.total) / (1024.0 * 1024.0);
            }
            gpus.push_back(g);
        }
        return to_readings(gpus, t_ms);
    }

private:
    NvmlSampler() = default;
    template <class F>
    bool sym(F &f, const char *name) {
        f = reinterpret_cast<F>(dlsym(lib_, name));
        return f != nullptr;
    }
    void *lib_ = nullptr;
    nvmlReturn_t (*init_)() = nullptr;
    nvmlReturn_t (*shutdown_)() = nullptr;
    nvmlReturn_t (*count_)(unsigned *) = nullptr;
    nvmlReturn_t (*handle_)(unsigned, nvmlDevice_t *) = nullptr;
    nvmlReturn_t (*util_)(nvmlDevice_t, nvmlUtilization_t *) = nullptr;
    nvmlReturn_t (*mem_)(nvmlDevice_t, nvmlMemory_t *) = nullptr;
    std::vector<nvmlDevice_t> devices_;
};

}  // namespace

std::unique_ptr<Sampler> make_nvml_sampler(std::string *why) { return NvmlSampler::open(why); }

}  // namespace rtf::mon
