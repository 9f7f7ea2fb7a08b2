#pragma once
// Ascend NPUs: parsing `npu-smi info -t usages -i <npu> [-c <chip>]` (Huawei's documented
// "Key(unit) : value" layout, one line per figure) and a sampler that runs it.
//
// Keys used (Atlas 800/900 A2 names; 310P boards print "Memory Bandwidth Usage Rate(%)"):
//   Aicore Usage Rate(%)            -> compute_pct  (the cube units: matmul/conv)
//   Aivector Usage Rate(%)          -> aivector_pct
//   HBM Bandwidth Usage Rate(%)     -> memory_pct (preferred), hbm_bw_pct
//   DDR Bandwidth Usage Rate(%)     -> ddr_bw_pct  (memory_pct when no HBM figure)
//   Memory Bandwidth Usage Rate(%)  -> mem_bw_pct  (memory_pct when neither of the above)
//   HBM Usage Rate(%) / Memory Usage Rate(%)  -> capacity used (not traffic)
//   NPU ID, Chip ID                 -> which device; one output block per (NPU, chip)
// "NA", "-", missing keys -> NaN. Lines without " : " and unknown keys are ignored;
// a known key with a non-numeric value is skipped and reported in `warnings`.
#include <memory>
#include <string>
#include <vector>

#include "monitor/sampler.h"

namespace rtf::mon {

struct NpuUsage {
    int npu_id = -1;  // -1 when the output did not say (the caller knows which -i it passed)
    int chip_id = 0;
    double aicore_pct = kNotReported;
    double aivector_pct = kNotReported;
    double aicpu_pct = kNotReported;
    double ctrlcpu_pct = kNotReported;
    double hbm_bw_pct = kNotReported;
    double ddr_bw_pct = kNotReported;
    double mem_bw_pct = kNotReported;
    double hbm_usage_pct = kNotReported;
    double memory_usage_pct = kNotReported;
    // The memory-traffic figure the duty cycle uses: HBM bw, else DDR bw, else memory bw.
    double memory_traffic_pct() const;
};

struct NpuSmiParse {
    std::vector<NpuUsage> chips;
    std::vector<std::string> warnings;
};

NpuSmiParse parse_npu_smi_usages(const std::string &text);

// NPU IDs from `npu-smi info -l` ("NPU ID : 0" lines).
std::vector<int> parse_npu_smi_list(const std::string &text);

// Devices are named "npu<id>.<chip>".
std::vector<DeviceReading> to_readings(const std::vector<NpuUsage> &chips, double t_ms);

// Runs `<npu_smi> info -t usages -i <id>` for each NPU per sample. nullptr (and *why) when
// the program is not on PATH or lists no NPU. `npu_smi` may name another program (tests).
std::unique_ptr<Sampler> make_npu_smi_sampler(std::string *why, const std::string &npu_smi = "npu-smi");

}  // namespace rtf::mon
