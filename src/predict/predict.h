#pragma once
// `rtf predict`: each stage's floor on a described machine (hardware.h) with a given placement,
// from the same per-unit costs `rtf limits` uses (model-floors.h) — docs/method.md §4 taken to a
// machine we do not have.
//
// Stages: llm, tts, t2m (token2mel: encoder + flow matching) and voc (HiFT vocoder); the last
// two are `rtf limits`'s t2w split by its parts, because a placement may put them on different
// devices (the write-up's 910B: token2mel on the NPU, the vocoder on the CPU).
// Per stage s on device d with n threads, seconds of work per second of audio:
//   memory   bytes_s / d.memory_gb_s
//   compute  flops_s / d.gflops(type_s, n)         (CPU: n / cores of the whole-CPU rate)
//   launch   kernels_s x d.kernel_launch_us         (0 when the device gives no figure)
//   transfer bytes crossing into s from a stage on another device (LLM hidden rows, codes, mel;
//            the vocoder's PCM back to the host) / the accelerator's host link
//   floor    max(memory, compute, launch) + transfer
//   prefill  the LLM's prompt (FloorAssumptions::llm_kv_tokens tokens) in one pass:
//            max(weight bytes / bw, tokens x weight FLOPs / rate, kernels x launch), seconds
// serial = sum of floors; overlapped = max(the largest floor, per device: sum of its stages'
// bytes / its bandwidth and sum of their FLOPs / its whole rate) — stages sharing a device
// share its memory bus and cores. Every figure is a BOUND (the machine's datasheet limits),
// not a forecast: see calibrate() for the likely figure.
//
// Levers ("what changes the bottleneck"): repeatedly take the bottleneck stage, try it on each
// other device that can run it (all cores on a CPU) and with all cores on its own CPU, keep the
// best, and record the move with the stage's floor and prefill before and after and the next
// bottleneck — the order in which the stages would bind as each is fixed.
//
// Calibration: with a measured run on THIS machine (history), each stage's efficiency =
// its floor here / its measured RTF here; likely = floor there / efficiency. An
// extrapolation: it assumes the stage's kernels reach the same share of the limit there.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "predict/hardware.h"
#include "predict/model-floors.h"

namespace rtf::predict {

struct Placed {
    std::string device;
    int threads = 0;  // CPU threads; accelerators 0
};
using Placement = std::map<std::string, Placed>;  // stage -> device

// The hardware's default placement with `overrides` ("llm=npu,voc=cpu:8"; t2w=DEV sets t2m
// and voc) on top; every stage must end up placed. Throws rtf::Error(Usage) naming `what`
// for an unknown stage or device, threads < 1 or beyond the CPU's cores, or a stage the
// device cannot run.
Placement parse_placement(const std::string &overrides, const Hardware &hw, const std::string &what = "--placement");
std::string placement_text(const Placement &p);  // "llm=npu,tts=npu,t2m=npu,voc=cpu:8"

struct StagePrediction {
    std::string stage, device, weight_type;
    int threads = 0;
    double bytes_per_audio_s = 0, flops_per_audio_s = 0, kernels_per_audio_s = 0, link_bytes_per_audio_s = 0;
    double memory_rtf = 0, compute_rtf = 0, launch_rtf = 0, transfer_rtf = 0, floor_rtf = 0;
    std::string bound;             // "memory" | "compute" | "launch"
    bool rate_fallback = false;    // the device lists no rate for this type: its fastest was used
    // Calibration (NaN until calibrate()).
    double floor_here = 0, measured_here = 0, efficiency = 0, likely_rtf = 0;
};

struct Lever {
    std::string stage, from, to;   // "cpu:8" -> "npu"
    double from_rtf = 0, to_rtf = 0;
    double from_prefill_s = 0, to_prefill_s = 0;  // NaN unless the stage is the LLM
    std::string next_bottleneck;
    double next_floor_rtf = 0;
};

struct Prediction {
    std::string hardware, models;
    Placement placement;
    std::vector<StagePrediction> stages;
    double serial_rtf = 0, overlapped_rtf = 0;
    std::string overlapped_binding;
    std::vector<std::string> order;  // stages by floor, largest first
    double prefill_s = 0;            // the LLM's prompt on its device (NaN without an LLM)
    int prefill_tokens = 0;
    std::vector<Lever> levers;
    std::string calibration;         // where the efficiencies came from ("" = none)
    double likely_serial_rtf = 0, likely_overlapped_rtf = 0;
    std::vector<std::string> notes;
};

Prediction predict(const ModelCosts &costs, const Hardware &hw, const Placement &placement, const FloorAssumptions &a);

// Each stage's RTF measured here from a history row's metrics (flat names): rtf_stage.llm,
// rtf_stage.tts, and t2m / voc from t2w.token2mel_ms / t2w.vocoder_ms per 1-s window (median
// of chunks; mean when no median). Stages without a figure are absent.
std::map<std::string, double> measured_stage_rtfs(const nlohmann::json &metrics);

// Sets floor_here / measured_here / efficiency / likely_rtf of `target`'s stages from `here`
// (the prediction for the measured kit and threads on this machine's description) and
// `measured`; `from` names the source (history row, kit). Stages without both stay NaN.
void calibrate(Prediction &target, const Prediction &here, const std::map<std::string, double> &measured,
               const std::string &from);

nlohmann::json to_json(const Prediction &p);

}  // namespace rtf::predict
