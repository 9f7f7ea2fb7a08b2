#pragma once
// NVIDIA GPUs: the NVML sampler (libnvidia-ml.so.1 loaded at run time with dlopen, so the
// build needs no NVIDIA headers or libraries) and a parser for nvidia-smi's CSV output (for
// logs recorded elsewhere, and as the documented fallback format).
//
// What the figures mean (NVML docs, nvmlDeviceGetUtilizationRates):
//   utilization.gpu     percent of the sample period during which one or more kernels ran
//                       (a time share, not how many SMs were busy)
//   utilization.memory  percent of the sample period during which device memory was being
//                       read or written: a TIME share, not bandwidth. rtfkit uses it as the
//                       duty cycle's memory-traffic clause and reports DRAM bandwidth only
//                       where the GPU reports one (not read by this sampler yet).
//
// nvidia-smi CSV: `nvidia-smi --query-gpu=index,name,utilization.gpu,utilization.memory,
// memory.used,memory.total --format=csv[,noheader][,nounits]`. With a header the columns are
// found by name (any order, any subset containing index and utilization.gpu); without one
// they must be in kNvidiaSmiQuery's order. "[N/A]" / "[Not Supported]" / empty -> NaN.
// Rows that do not parse (wrong field count, index not a number, stray text) are skipped
// and counted, never fatal.
#include <memory>
#include <string>
#include <vector>

#include "monitor/sampler.h"

namespace rtf::mon {

inline constexpr const char *kNvidiaSmiQuery = "index,name,utilization.gpu,utilization.memory,memory.used,memory.total";

struct GpuReading {
    int index = -1;
    std::string name;
    double util_gpu_pct = kNotReported;
    double util_mem_pct = kNotReported;  // memory-controller busy TIME share
    double mem_used_mib = kNotReported;
    double mem_total_mib = kNotReported;
};

struct NvidiaSmiParse {
    std::vector<GpuReading> gpus;
    int n_skipped = 0;                  // rows that did not parse
    std::vector<std::string> warnings;  // one per skipped row, naming it
};

NvidiaSmiParse parse_nvidia_smi_csv(const std::string &text);

// Devices are named "nvidia<index>"; compute = utilization.gpu, memory = utilization.memory.
std::vector<DeviceReading> to_readings(const std::vector<GpuReading> &gpus, double t_ms);

// NVML sampler; nullptr (and *why = "unavailable: ...") when libnvidia-ml.so.1 cannot be
// loaded, lacks a needed symbol, nvmlInit fails or there is no GPU.
std::unique_ptr<Sampler> make_nvml_sampler(std::string *why);

}  // namespace rtf::mon
