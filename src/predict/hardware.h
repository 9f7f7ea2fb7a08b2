#pragma once
// A hardware description for `rtf predict` (schema rtfkit.hardware/1): what each device of a
// machine can do, every figure with the public source it was taken from. Shipped ones live in
// the source tree's hardware/ folder (`--hardware NAME`); a user writes their own
// (`--hardware FILE.json`); `rtf limits --save-hardware FILE` writes this machine's CPU from
// its own measurements.
//
//   {"schema": "rtfkit.hardware/1", "name": "rtx-4090", "title": "...",
//    "devices": [
//      {"name": "gpu", "kind": "accelerator", "model": "NVIDIA GeForce RTX 4090",
//       "memory_gb_s":    {"value": 1008, "source": "..."},   // device memory, GB/s (1e9)
//       "host_link_gb_s": {"value": 31.5, "source": "..."},   // host <-> device, one way, GB/s
//       "kernel_launch_us": {"value": 2.5, "source": "..."},  // optional: the least time one
//                                                             // dependent kernel costs
//       "gflops": {"f16": {"value": 330300, "source": "..."}, "f32": {...}},  // dense peaks
//       "cannot_run": {"stages": ["voc"], "source": "..."}}, // optional
//      {"name": "cpu", "kind": "cpu", "model": "...", "cores": {"value": 64, "source": "..."},
//       "memory_gb_s": {...}, "gflops": {"f32": {...}, "f16": {...}}}],   // CPU: all cores
//    "placement": {"llm": "gpu", "tts": "gpu", "t2m": "gpu", "voc": "cpu:8"}}   // the default
//
// Units: bandwidth in GB/s (1e9 bytes, as datasheets print it), FLOP rates in GFLOP/s (int8:
// GOP/s), dense (no structured-sparsity doubling). A CPU's rates are for all `cores`; a stage
// given n threads gets n / cores of them (memory bandwidth is not divided: one thread is
// assumed able to reach it, which keeps a floor a lower bound). A type a device does not list
// falls back to its fastest listed rate (again a bound: never slower than the truth).
// Errors: unreadable file, bad JSON, a missing or non-positive figure, a figure without a
// source, an unknown kind or stage: rtf::Error(Usage) naming the file and the field.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rtf::predict {

struct MachineRates;

struct Figure {
    double value = 0;  // 0 = absent (optional figures only)
    std::string source;
};

struct DeviceSpec {
    std::string name;            // how --placement names it: "cpu", "gpu", "npu"
    std::string kind;            // "cpu" | "accelerator"
    std::string model;
    Figure cores;                // cpu: the cores the gflops are summed over
    Figure memory_gb_s;
    Figure host_link_gb_s;       // accelerator (cpu: absent)
    Figure kernel_launch_us;     // optional
    std::map<std::string, Figure> gflops;  // "f32" | "f16" | "bf16" | "int8"
    std::vector<std::string> cannot_run;   // stages this device's backend cannot run
    std::string cannot_run_source;
    bool software = false;       // an accelerator API emulated on the CPU (lavapipe): its figures are not a GPU's

    bool is_cpu() const { return kind == "cpu"; }
    // GFLOP/s for work of weight type `type` ("f32", "f16", "bf16", "q4_K", ...: the last and
    // other quantised types run at the f16 rate, as ggml dequantises them) on `threads`
    // threads (CPU; ignored for accelerators). `fallback` is set when the type was not listed.
    double gflops_for(const std::string &type, int threads, bool *fallback = nullptr) const;
    int max_threads() const;     // cpu: cores; accelerators: 1
};

struct Hardware {
    std::string name, title, path;
    std::vector<DeviceSpec> devices;
    std::map<std::string, std::string> placement;  // stage -> "device[:threads]"
    const DeviceSpec &device(const std::string &name, const std::string &what) const;  // Usage error naming `what`
};

// The stages a placement names: llm, tts, t2m (token2mel), voc (HiFT vocoder).
const std::vector<std::string> &predict_stages();

// Folders searched for `--hardware NAME` (NAME.json), in order: $RTF_HARDWARE_DIR, then the
// source tree's hardware/ (the binary knows where it was built from).
std::vector<std::string> hardware_dirs();
// Names of the shipped descriptions (every *.json in the folders above).
std::vector<std::string> list_hardware();
// `spec` ending in .json or containing '/': a file; else a name looked up in hardware_dirs().
Hardware load_hardware(const std::string &spec);
Hardware parse_hardware(const nlohmann::json &j, const std::string &what);

// This machine's CPU as a description, from `rtf limits` measurements at `threads` threads
// (read bandwidth, the arithmetic peak per type); each figure's source says so.
nlohmann::json hardware_from_limits(const MachineRates &rates, int threads, const std::string &cpu_model,
                                    const std::string &when);

}  // namespace rtf::predict
