#include "core/cpu-features.h"

#include <cstdlib>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/topology.h"

namespace rtf {

namespace {
struct Flag {
    const char *name;
    bool CpuFeatures::*field;
};
const std::vector<Flag> &flags() {
    static const std::vector<Flag> f = {
        {"avx2", &CpuFeatures::avx2},           {"fma", &CpuFeatures::fma},
        {"avx512f", &CpuFeatures::avx512f},     {"avx512_bf16", &CpuFeatures::avx512_bf16},
        {"avx512_vnni", &CpuFeatures::avx512_vnni}, {"amx_tile", &CpuFeatures::amx_tile},
        {"amx_bf16", &CpuFeatures::amx_bf16},   {"amx_int8", &CpuFeatures::amx_int8},
    };
    return f;
}
}  // namespace

std::string CpuFeatures::isa_class() const {
    if (amx_tile && amx_bf16) return "amx";
    if (avx512f && avx512_bf16) return "avx512-bf16";
    if (avx512f) return "avx512";
    if (avx2 && fma) return "avx2";
    return "baseline";
}

std::string CpuFeatures::flags_text() const {
    std::string s;
    for (const auto &f : flags())
        if (this->*f.field) s += (s.empty() ? "" : " ") + std::string(f.name);
    return s.empty() ? "none" : s;
}

nlohmann::json CpuFeatures::to_json() const {
    nlohmann::json j = {{"model", model}, {"n_cpus", n_cpus}, {"isa_class", isa_class()}};
    for (const auto &f : flags()) j[f.name] = this->*f.field;
    return j;
}

CpuFeatures CpuFeatures::parse(const std::string &text, int n_cpus, const std::string &model) {
    CpuFeatures c;
    c.model = model;
    c.n_cpus = n_cpus;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        while (!item.empty() && item.front() == ' ') item.erase(item.begin());
        while (!item.empty() && item.back() == ' ') item.pop_back();
        if (item.empty()) continue;
        if (item == "amx") {
            c.amx_tile = c.amx_bf16 = c.amx_int8 = true;
            continue;
        }
        bool known = false;
        for (const auto &f : flags())
            if (item == f.name) c.*f.field = known = true;
        if (!known) {
            std::string names = "amx";
            for (const auto &f : flags()) names += std::string(", ") + f.name;
            throw_usage("CPU feature '" + item + "' is not one of: " + names);
        }
    }
    return c;
}

namespace {
constexpr IsaLevel kLevels[] = {IsaLevel::baseline, IsaLevel::avx2, IsaLevel::avx512, IsaLevel::avx512_bf16,
                                IsaLevel::amx};

// RTF_ISA as read once: set, and the level it names when valid.
struct IsaEnv {
    bool set = false, valid = false;
    std::string text;
    IsaLevel level = IsaLevel::amx;
};
const IsaEnv &isa_env() {
    static const IsaEnv e = [] {
        IsaEnv r;
        const char *v = std::getenv("RTF_ISA");
        if (!v || !*v) return r;
        r.set = true;
        r.text = v;
        r.valid = parse_isa_level(r.text, r.level);
        return r;
    }();
    return e;
}

// The flags as cpuid reports them (libgcc's check, which includes the OS's XSAVE support).
CpuFeatures cpuid_features() {
    __builtin_cpu_init();
    CpuFeatures c;
    c.avx2 = __builtin_cpu_supports("avx2");
    c.fma = __builtin_cpu_supports("fma");
    c.avx512f = __builtin_cpu_supports("avx512f");
    c.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
    c.avx512_vnni = __builtin_cpu_supports("avx512vnni");
    c.amx_tile = __builtin_cpu_supports("amx-tile");
    c.amx_bf16 = __builtin_cpu_supports("amx-bf16");
    c.amx_int8 = __builtin_cpu_supports("amx-int8");
    return c;
}

// A CPU with no more than `level`: the flags above it cleared.
void cap_features(CpuFeatures &c, IsaLevel level) {
    if (level < IsaLevel::amx) c.amx_tile = c.amx_bf16 = c.amx_int8 = false;
    if (level < IsaLevel::avx512_bf16) c.avx512_bf16 = false;
    if (level < IsaLevel::avx512) c.avx512f = c.avx512_vnni = false;
    if (level < IsaLevel::avx2) c.avx2 = c.fma = false;
}
}  // namespace

const char *isa_level_name(IsaLevel level) {
    switch (level) {
    case IsaLevel::amx: return "amx";
    case IsaLevel::avx512_bf16: return "avx512-bf16";
    case IsaLevel::avx512: return "avx512";
    case IsaLevel::avx2: return "avx2";
    case IsaLevel::baseline: break;
    }
    return "baseline";
}

bool parse_isa_level(std::string_view name, IsaLevel &out) {
    for (IsaLevel l : kLevels)
        if (name == isa_level_name(l)) {
            out = l;
            return true;
        }
    return false;
}

IsaLevel host_isa_level() {
    static const IsaLevel level = [] {
        IsaLevel l = IsaLevel::baseline;
        parse_isa_level(cpuid_features().isa_class(), l);
        return l;
    }();
    return level;
}

IsaLevel isa_level() {
    const IsaEnv &e = isa_env();
    const IsaLevel host = host_isa_level();
    return e.valid && e.level < host ? e.level : host;
}

void check_isa_env() {
    const IsaEnv &e = isa_env();
    if (!e.set) return;
    std::string runnable;
    for (IsaLevel l : kLevels)
        if (l <= host_isa_level()) runnable += std::string(runnable.empty() ? "" : ", ") + isa_level_name(l);
    if (!e.valid) {
        std::string names;
        for (IsaLevel l : kLevels) names += std::string(names.empty() ? "" : ", ") + isa_level_name(l);
        throw_usage("RTF_ISA='" + e.text + "' is not a kernel level (allowed: " + names + ")");
    }
    if (e.level > host_isa_level()) {
        const std::string model = cpu_topology().cpu_model;
        throw_usage("RTF_ISA=" + e.text + ": this CPU (" + (model.empty() ? "model unknown" : model) + ", level " +
                    isa_level_name(host_isa_level()) + ") cannot run " + e.text + " kernels; levels it runs: " + runnable);
    }
}

const CpuFeatures &cpu_features() {
    static const CpuFeatures f = [] {
        const auto &topo = cpu_topology();
        const int n = static_cast<int>(topo.allowed_pus.empty() ? 1 : topo.allowed_pus.size());
        if (const char *e = std::getenv("RTF_CPU_FEATURES"); e && *e) return CpuFeatures::parse(e, n, topo.cpu_model);
        CpuFeatures c = cpuid_features();
        c.model = topo.cpu_model;
        c.n_cpus = n;
        cap_features(c, isa_level());
        return c;
    }();
    return f;
}

}  // namespace rtf
