#pragma once
// The CPU features that choose kernels and defaults at run time (never at build
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
#include <string_view>

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

// The kernel level: how much of the CPU's matrix ISA rtfkit's own kernels use. RTF_ISA=LEVEL
// caps it, so one machine runs every lower path (scripts/test.sh runs the kernel, Token2Wav
// and golden suites once per level the host supports):
//   RTF_ISA=avx2 rtf t2w ...   # the AVX2 kernels and oneDNN's AVX2 ones, on an AVX-512 CPU
// What follows the level: Token2Wav's packed GEMMs, convolutions, attention and rounding
// (models/t2w: gemm::kernel_isa(), cpu_has_*()), oneDNN's primitives (dnnl::set_max_cpu_isa,
// unless ONEDNN_MAX_CPU_ISA is set), and cpu_features()' flags (so the machine profile sees
// the capped CPU). What does not: ggml's CPU kernels (compiled for the host, -march=native),
// and `rtf limits`' peak loops (they measure the machine).
enum class IsaLevel { baseline, avx2, avx512, avx512_bf16, amx };
// "baseline", "avx2", "avx512", "avx512-bf16", "amx" (isa_class()'s names)
const char *isa_level_name(IsaLevel level);
// The level named; false for an unknown name.
bool parse_isa_level(std::string_view name, IsaLevel &out);
// The widest level this CPU runs (cpuid; RTF_CPU_FEATURES does not change it).
IsaLevel host_isa_level();
// The level kernels use: the host's, capped by RTF_ISA. Never throws (kernels call it inside
// graph computes); an RTF_ISA that check_isa_env() would refuse counts as unset.
IsaLevel isa_level();
// Refuses a bad RTF_ISA with an rtf::Error(Usage): an unknown name (the allowed ones listed),
// or a level above the host's (naming the CPU, its level and the levels it can run). Called
// by `rtf` before any command and by every test binary, so a refused level never runs.
void check_isa_env();

}  // namespace rtf
