#pragma once
// The CPU features that choose kernels and defaults at run time (DESIGN.md: never at build
// time alone). Machines of this project's kind differ: AMD EPYC Zen 4 (AVX-512, AVX512-BF16,
// no AMX) and Intel Xeon (the same plus AMX); others may have AVX2 only.
//
//   const CpuFeatures &f = cpu_features();          // cpuid, once per process
//   if (f.amx_bf16) ...                              // AMX tiles usable for bf16 products
//   CpuFeatures fake = CpuFeatures::parse("avx512f,avx512_bf16", 2);   // tests: a CPU we lack
//
// Flags are what cpuid reports (GCC's __builtin_cpu_supports); whether the OS lets a
// process use AMX tiles (arch_prctl XCOMP_PERM) is the kernel's business, not checked here.
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace rtf {

struct CpuFeatures {
    std::string model;  // /proc/cpuinfo "model name" ("" when unknown)
    int n_cpus = 1;     // PUs this process may run on
    bool avx2 = false, fma = false, avx512f = false, avx512_bf16 = false, avx512_vnni = false;
    bool amx_tile = false, amx_bf16 = false, amx_int8 = false;

    // The widest matrix ISA, for tables keyed by it: "amx", "avx512-bf16", "avx512", "avx2",
    // "baseline".
    std::string isa_class() const;
    // "avx512f avx512_bf16 avx512_vnni amx_bf16 ..." (the set flags, in a fixed order).
    std::string flags_text() const;
    nlohmann::json to_json() const;

    // A CPU from a flag list ("avx2,fma,avx512f,avx512_bf16,avx512_vnni,amx_tile,amx_bf16,
    // amx_int8" in any order; "amx" = all three AMX flags); an unknown flag is an
    // rtf::Error(Usage) naming it. For tests and `--cpu-features` overrides.
    static CpuFeatures parse(const std::string &flags, int n_cpus, const std::string &model = "");
};

// This machine's features (cached; thread-safe). RTF_CPU_FEATURES="avx512f,avx512_bf16"
// replaces the cpuid flags (the model and CPU count stay): for trying another CPU's
// defaults, never for running kernels the CPU lacks (kernels check cpuid themselves).
const CpuFeatures &cpu_features();

}  // namespace rtf
