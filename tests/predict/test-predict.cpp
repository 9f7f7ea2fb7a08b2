// rtf predict's model (bench/predict.h, bench/hardware.h): behaviour, not timings. The
// full-scale kit is costed from the layout table, so these run without model files.
#include <cmath>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "predict/hardware.h"
#include "predict/model-floors.h"
#include "predict/predict.h"
#include "core/error.h"

using namespace rtf;
using namespace rtf::predict;
using nlohmann::json;
namespace m = rtf::gguf::minicpmo45;

namespace {

json fig(double v) { return {{"value", v}, {"source", "test"}}; }

// One CPU (8 cores) and one accelerator; figures round so the arithmetic is checkable.
json two_devices() {
    return {{"schema", "rtfkit.hardware/1"},
            {"name", "test"},
            {"devices",
             json::array({{{"name", "cpu"},
                           {"kind", "cpu"},
                           {"cores", fig(8)},
                           {"memory_gb_s", fig(100)},
                           {"gflops", {{"f32", fig(800)}, {"f16", fig(800)}}}},
                          {{"name", "acc"},
                           {"kind", "accelerator"},
                           {"memory_gb_s", fig(1000)},
                           {"host_link_gb_s", fig(32)},
                           {"gflops", {{"f16", fig(100000)}, {"f32", fig(50000)}}}}})},
            {"placement", {{"llm", "cpu"}, {"tts", "cpu"}, {"t2m", "cpu"}, {"voc", "cpu"}}}};
}

const StagePrediction &stage(const Prediction &p, const std::string &s) {
    for (const auto &x : p.stages)
        if (x.stage == s) return x;
    throw std::runtime_error("no stage " + s);
}

std::string usage_message(const json &j) {
    try {
        parse_hardware(j, "hw.json");
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Usage);
        return e.what();
    }
    return "(no error)";
}

ModelCosts full_f16() { return model_costs_for_layout(m::Scale::full, gguf::WeightType::f16, {}); }

}  // namespace

TEST(Hardware, BadFilesNameTheField) {
    json j = two_devices();
    j["devices"][1].erase("memory_gb_s");
    EXPECT_NE(usage_message(j).find("hw.json: devices[1].memory_gb_s: missing"), std::string::npos) << usage_message(j);
    j = two_devices();
    j["devices"][0]["gflops"]["f32"].erase("source");
    EXPECT_NE(usage_message(j).find("devices[0].gflops.f32.source"), std::string::npos) << usage_message(j);
    j = two_devices();
    j["devices"][0]["kind"] = "gpu";
    EXPECT_NE(usage_message(j).find("devices[0].kind"), std::string::npos);
    j = two_devices();
    j["devices"][0].erase("cores");  // a CPU needs its core count
    EXPECT_NE(usage_message(j).find("devices[0].cores"), std::string::npos);
    j = two_devices();
    j["devices"][1]["gflops"]["f8"] = fig(1);
    EXPECT_NE(usage_message(j).find("gflops.f8: unknown type"), std::string::npos);
    j = two_devices();
    j["devices"][1]["memory_gb_s"]["value"] = -1;
    EXPECT_NE(usage_message(j).find("memory_gb_s.value: must be > 0"), std::string::npos);
    EXPECT_THROW(load_hardware("/nonexistent/hw.json"), Error);
    EXPECT_THROW(load_hardware("no-such-machine"), Error);
}

TEST(Hardware, ShippedDescriptionsLoadWithTheirPlacement) {
    auto names = list_hardware();
    for (const char *n : {"rtx-4090", "h200", "ascend-910b", "apple-m2-ultra", "epyc-2c-vm"}) {
        ASSERT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
        Hardware h = load_hardware(n);
        EXPECT_NO_THROW(parse_placement("", h)) << n;
        for (const auto &d : h.devices)
            for (const auto &[t, f] : d.gflops) EXPECT_FALSE(f.source.empty()) << n << " " << d.name << " " << t;
    }
}

TEST(Predict, PlacementErrorsNameStageAndDevice) {
    Hardware h = parse_hardware(two_devices(), "hw.json");
    EXPECT_THROW(parse_placement("vocoder=cpu", h), Error);
    EXPECT_THROW(parse_placement("llm=tpu", h), Error);
    EXPECT_THROW(parse_placement("llm=cpu:9", h), Error);   // beyond the 8 cores
    EXPECT_THROW(parse_placement("llm=acc:2", h), Error);   // threads on an accelerator
    Placement p = parse_placement("t2w=acc,llm=cpu:2", h);
    EXPECT_EQ(placement_text(p), "llm=cpu:2,tts=cpu:8,t2m=acc,voc=acc");
    Hardware a = load_hardware("ascend-910b");
    try {
        parse_placement("voc=npu", a);
        FAIL() << "the 910B's NPU cannot run the vocoder";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("cannot run voc"), std::string::npos) << e.what();
    }
}

TEST(Predict, FloorScalesWithBandwidthAndThreads) {
    const ModelCosts c = model_costs_for_layout(m::Scale::cpu, gguf::WeightType::f16, {});
    json j = two_devices();
    Hardware h1 = parse_hardware(j, "a");
    j["devices"][0]["memory_gb_s"] = fig(200);
    Hardware h2 = parse_hardware(j, "b");
    const Placement pl = parse_placement("", h1);
    auto p1 = predict::predict(c, h1, pl, {}), p2 = predict::predict(c, h2, pl, {});
    // The LLM decode is memory-bound on this CPU: twice the bandwidth, half the floor.
    EXPECT_EQ(stage(p1, "llm").bound, "memory");
    EXPECT_NEAR(stage(p2, "llm").floor_rtf, stage(p1, "llm").floor_rtf / 2, 1e-12);
    // token2mel is compute-bound: half the threads, twice the compute floor.
    auto p4 = predict::predict(c, h1, parse_placement("t2m=cpu:4", h1), {});
    EXPECT_EQ(stage(p1, "t2m").bound, "compute");
    EXPECT_NEAR(stage(p4, "t2m").compute_rtf, 2 * stage(p1, "t2m").compute_rtf, 1e-12);
    // Serial = sum; overlapped >= the largest floor and <= serial.
    double sum = 0, mx = 0;
    for (const auto &s : p1.stages) sum += s.floor_rtf, mx = std::max(mx, s.floor_rtf);
    EXPECT_NEAR(p1.serial_rtf, sum, 1e-12);
    EXPECT_GE(p1.overlapped_rtf, mx);
    EXPECT_LE(p1.overlapped_rtf, p1.serial_rtf + 1e-12);
    // A stage on another device than its predecessor pays the host link; on the same, nothing.
    EXPECT_EQ(stage(p1, "tts").transfer_rtf, 0);
    auto px = predict::predict(c, h1, parse_placement("tts=acc", h1), {});
    EXPECT_GT(stage(px, "tts").transfer_rtf, 0);
    EXPECT_GT(stage(px, "t2m").transfer_rtf, 0);  // and back to the CPU after it
}

TEST(Predict, LayoutCostsSplitToken2WavIntoItsParts) {
    const ModelCosts c = full_f16();
    ASSERT_EQ(c.stages.size(), 3u);
    // Qwen3-8B F16: ~8.2 G parameters read per text token besides one embedding row.
    EXPECT_GT(c.stages[0].bytes_per_unit, 15e9);
    EXPECT_LT(c.stages[0].bytes_per_unit, 17.5e9);
    json j = two_devices();
    Hardware h = parse_hardware(j, "hw");
    auto p = predict::predict(c, h, parse_placement("", h), {});
    EXPECT_NEAR(stage(p, "t2m").flops_per_audio_s + stage(p, "voc").flops_per_audio_s, c.stages[2].flops_per_unit,
                1e-6 * c.stages[2].flops_per_unit);
    EXPECT_NEAR(stage(p, "t2m").bytes_per_audio_s + stage(p, "voc").bytes_per_audio_s, c.stages[2].bytes_per_unit, 1.0);
}

TEST(Predict, Ascend910bWriteUpPlacementBindsOnTheCpuLlmThenTheVocoder) {
    const Hardware h = load_hardware("ascend-910b");
    auto p = predict::predict(full_f16(), h, parse_placement("", h), {});
    ASSERT_GE(p.order.size(), 2u);
    EXPECT_EQ(p.order[0], "llm");
    EXPECT_EQ(stage(p, "llm").device, "cpu");
    // Placing the LLM on the NPU is the first lever and moves the bottleneck to the CPU vocoder.
    ASSERT_FALSE(p.levers.empty());
    EXPECT_EQ(p.levers[0].stage, "llm");
    EXPECT_EQ(p.levers[0].to, "npu");
    EXPECT_EQ(p.levers[0].next_bottleneck, "voc");
    EXPECT_LT(p.levers[0].to_prefill_s, p.levers[0].from_prefill_s);
    auto moved = predict::predict(full_f16(), h, parse_placement("llm=npu", h), {});
    EXPECT_EQ(moved.order[0], "voc");
    EXPECT_LT(moved.serial_rtf, p.serial_rtf);
}

TEST(Predict, Rtx4090LlmIsNotTheBottleneck) {
    const Hardware h = load_hardware("rtx-4090");
    auto p = predict::predict(model_costs_for_layout(m::Scale::full, gguf::WeightType::q4_k_m, {}), h, parse_placement("", h), {});
    EXPECT_NE(p.order.front(), "llm");
}

TEST(Predict, CalibrationDividesByTheEfficiencyMeasuredHere) {
    const ModelCosts c = model_costs_for_layout(m::Scale::cpu, gguf::WeightType::f16, {});
    Hardware h = parse_hardware(two_devices(), "hw");
    auto here = predict::predict(c, h, parse_placement("", h), {});
    auto there = predict::predict(c, h, parse_placement("t2w=acc", h), {});
    json metrics = {{"rtf_stage.llm", 2 * stage(here, "llm").floor_rtf},
                    {"rtf_stage.tts", 4 * stage(here, "tts").floor_rtf},
                    {"t2w.token2mel_ms.p50", 1000 * 10 * stage(here, "t2m").floor_rtf},
                    {"t2w.vocoder_ms.mean", 1000 * 5 * stage(here, "voc").floor_rtf}};
    auto measured = measured_stage_rtfs(metrics);
    ASSERT_EQ(measured.size(), 4u);
    calibrate(there, here, measured, "test row");
    EXPECT_NEAR(stage(there, "llm").efficiency, 0.5, 1e-9);
    EXPECT_NEAR(stage(there, "tts").efficiency, 0.25, 1e-9);
    EXPECT_NEAR(stage(there, "t2m").efficiency, 0.1, 1e-9);
    EXPECT_NEAR(stage(there, "voc").efficiency, 0.2, 1e-9);
    for (const auto &s : there.stages) EXPECT_NEAR(s.likely_rtf, s.floor_rtf / s.efficiency, 1e-12) << s.stage;
    EXPECT_NEAR(there.likely_serial_rtf,
                stage(there, "llm").likely_rtf + stage(there, "tts").likely_rtf + stage(there, "t2m").likely_rtf +
                    stage(there, "voc").likely_rtf,
                1e-12);
    // A stage without a measurement stays uncalibrated, and so does the total.
    auto partial = predict::predict(c, h, parse_placement("", h), {});
    calibrate(partial, here, {{"llm", 1.0}}, "one stage");
    EXPECT_TRUE(std::isnan(stage(partial, "tts").likely_rtf));
    EXPECT_TRUE(std::isnan(partial.likely_serial_rtf));
}
