// rtf limits: the LLM floor from a GGUF file matches bytes / bandwidth by hand; the
// roofline combination; the token2wav FLOP estimate against the golden README's hand
// estimate (when the full-size twin is present); bandwidth / matmul measurements return
// sane numbers (no speed is asserted).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <ggml.h>
#include <gguf.h>

#include "common/require.h"
#include "predict/limits.h"
#include "predict/model-floors.h"
#include "predict/peak-flops.h"
#include "predict/roofline.h"
#include "common/scratch-dir.h"
#include "core/error.h"

#include "test-paths.h"  // RTF_TESTS_SOURCE_DIR, RTF_SHARED_DIR

using namespace rtf::predict;
namespace fs = std::filesystem;

namespace {
// A tiny qwen3-like LLM GGUF: 1 layer, n_embd 64, 4 heads, 2 KV heads, vocab 1000.
void write_tiny_llm(const std::string &path) {
    ggml_init_params ip{8 * 1024 * 1024, nullptr, false};
    ggml_context *ctx = ggml_init(ip);
    gguf_context *g = gguf_init_empty();
    gguf_set_val_str(g, "general.architecture", "qwen3");
    gguf_set_val_u32(g, "qwen3.block_count", 1);
    gguf_set_val_u32(g, "qwen3.embedding_length", 64);
    gguf_set_val_u32(g, "qwen3.attention.head_count", 4);
    gguf_set_val_u32(g, "qwen3.attention.head_count_kv", 2);
    auto add = [&](const char *name, ggml_type t, int64_t ne0, int64_t ne1) {
        ggml_tensor *x = ne1 > 1 ? ggml_new_tensor_2d(ctx, t, ne0, ne1) : ggml_new_tensor_1d(ctx, t, ne0);
        ggml_set_name(x, name);
        std::memset(x->data, 0, ggml_nbytes(x));
        gguf_add_tensor(g, x);
    };
    add("token_embd.weight", GGML_TYPE_F16, 64, 1000);
    add("blk.0.attn_q.weight", GGML_TYPE_F16, 64, 64);
    add("blk.0.attn_norm.weight", GGML_TYPE_F32, 64, 1);
    add("output_norm.weight", GGML_TYPE_F32, 64, 1);
    add("output.weight", GGML_TYPE_F16, 64, 1000);
    ASSERT_TRUE(gguf_write_to_file(g, path.c_str(), false));
    gguf_free(g);
    ggml_free(ctx);
}
// Machine rates of one CPU row each: read bandwidth and a ggml mul_mat rate of one type.
MachineRates cpu_rates(int n_threads, double read_gib_s, const std::string &type, double gflops) {
    MachineRates r;
    BandwidthResult bw;
    bw.n_threads = n_threads;
    bw.read_gib_s = read_gib_s;
    r.bandwidth = {bw};
    MatmulResult m;
    m.device = "CPU";
    m.type = type;
    m.n_threads = n_threads;
    m.gflops = gflops;
    r.matmul = {m};
    return r;
}
}  // namespace

TEST(ModelFloors, LlmBytesPerTokenByHand) {
    rtf::test::ScratchDir dir("limits");
    write_tiny_llm(dir.file("llm.gguf"));
    FloorAssumptions fa;
    fa.text_tokens_per_s = 4;
    fa.llm_kv_tokens = 512;
    auto mc = model_costs(dir.dir.string(), fa);
    ASSERT_EQ(mc.stages.size(), 1u);
    const auto &c = mc.stages[0];
    EXPECT_EQ(c.stage, "llm");
    EXPECT_EQ(c.weight_type, "f16");
    // weights read per token: attn_q 64*64*2 + attn_norm 64*4 + output_norm 64*4 + output 64*1000*2
    // + one token_embd row 64*2; KV: 2 (K,V) x 1 layer x 2 kv heads x 16 head dim x 512 x 2 bytes
    const double weights = 64 * 64 * 2 + 64 * 4 + 64 * 4 + 64 * 1000 * 2 + 64 * 2;
    const double kv = 2.0 * 1 * 2 * 16 * 512 * 2;
    EXPECT_DOUBLE_EQ(c.bytes_per_unit, weights + kv);
    EXPECT_DOUBLE_EQ(c.flops_per_unit, 2.0 * (64 * 64 + 64 * 1000) + 4.0 * 1 * 4 * 16 * 512);
    // Floor = 4 tokens/s x bytes / bandwidth (memory-bound at these rates).
    MachineRates rates = cpu_rates(1, 10, "f16", 100);
    auto p = path_limits(mc, rates, {}, 1);
    ASSERT_EQ(p.stages.size(), 1u);
    const double by_hand = 4 * (weights + kv) / (10.0 * 1024 * 1024 * 1024);
    EXPECT_DOUBLE_EQ(p.stages[0].floor_rtf, by_hand);
    EXPECT_EQ(p.stages[0].bound, "memory");
    EXPECT_DOUBLE_EQ(p.serial_rtf, by_hand);
    EXPECT_DOUBLE_EQ(p.overlapped_rtf, by_hand);
    EXPECT_THROW(model_costs(dir.file("missing"), fa), rtf::Error);
}

TEST(Roofline, SharedCoresBindTheOverlappedLimit) {
    ModelCosts mc;
    StageCost a, b;
    a.stage = "a";
    a.units_per_audio_s = 1;
    a.flops_per_unit = 50e9;  // 0.5 s at 100 GFLOP/s
    a.weight_type = "f32";
    b = a;
    b.stage = "b";
    mc.stages = {a, b};
    MachineRates r = cpu_rates(2, 20, "f32", 100);
    auto p = path_limits(mc, r, {}, 2);
    EXPECT_DOUBLE_EQ(p.serial_rtf, 1.0);
    // Overlap cannot help: both stages need the same two cores.
    EXPECT_DOUBLE_EQ(p.overlapped_rtf, 1.0);
    EXPECT_NE(p.overlapped_binding.find("shared cores"), std::string::npos);
    // More threads measured slower (an oversubscribed machine): n threads use the best rate
    // measured at <= n threads.
    MatmulResult one = r.matmul[0];
    one.n_threads = 1;
    one.gflops = 200;
    r.matmul.push_back(one);
    EXPECT_DOUBLE_EQ(r.gflops("f32", 2), 200);
    EXPECT_DOUBLE_EQ(r.gflops("f32", 1), 200);
    EXPECT_TRUE(std::isnan(r.gflops("f16", 2)));
}

TEST(ModelFloors, Token2WavEstimateMatchesTheGoldenHandEstimate) {
    fs::path twin = fs::path(RTF_TESTS_SOURCE_DIR) / "../.cache/t2w-golden-twin";
    if (!fs::exists(twin / "flow_matching.gguf"))
        RTF_SKIP_OR_FAIL("golden", "the full-size t2w twin is not generated here (scripts/golden-twins.sh)");
    auto mc = model_costs(twin.string(), {});
    ASSERT_EQ(mc.stages.size(), 1u);
    double t2m = 0, voc = 0;
    for (const auto &[k, v] : mc.stages[0].parts) {
        if (k == "token2mel_flops") t2m = v;
        if (k == "vocoder_flops") voc = v;
    }
    // golden README "Floor estimate": token2mel ~95 GFLOP, HiFT 25-30 GFLOP per window.
    EXPECT_GT(t2m, 80e9);
    EXPECT_LT(t2m, 115e9);
    EXPECT_GT(voc, 18e9);
    EXPECT_LT(voc, 40e9);
}

TEST(Limits, MeasurementsAreSane) {
    auto b = measure_bandwidth(4u << 20, 1, 1);
    for (const double v : {b.read_gib_s, b.triad_gib_s, b.copy_gib_s}) {  // measured, so > 0; no speed asserted
        EXPECT_TRUE(std::isfinite(v));
        EXPECT_GT(v, 0.0);
    }
    EXPECT_THROW(measure_bandwidth(1024, 1, 1), rtf::Error);
    auto m = measure_matmul("CPU", "f16", 1, 64, 1);
    EXPECT_TRUE(std::isfinite(m.gflops));
    EXPECT_GT(m.gflops, 0.0);
    EXPECT_EQ(m.type, "f16");
    auto g = measure_gemv("CPU", 1, 256, 256, 1);
    EXPECT_GT(g.gib_s, 0.0);
    EXPECT_THROW(measure_matmul("NoSuchDevice", "f32", 1, 64, 1), rtf::Error);
    EXPECT_THROW(measure_matmul("CPU", "q4", 1, 64, 1), rtf::Error);
}

// Issue 13: the compute floor uses the CPU's measured arithmetic peak, not ggml's achieved
// rate; the ggml figure stays beside it (the operator layer's headroom).
TEST(Roofline, ComputeFloorUsesThePeakWhenMeasured) {
    ModelCosts mc;
    StageCost t;
    t.stage = "t2w";
    t.units_per_audio_s = 1;
    t.flops_per_unit = 100e9;
    t.weight_type = "f32";
    mc.stages = {t};
    MachineRates r = cpu_rates(2, 20, "f32", 100);
    auto ggml_only = path_limits(mc, r, {}, 2);
    EXPECT_EQ(ggml_only.stages[0].compute_rate, "ggml");
    EXPECT_DOUBLE_EQ(ggml_only.stages[0].compute_rtf, 1.0);
    PeakResult pk;
    pk.type = "f32";
    pk.isa = "avx512f";
    pk.n_threads = 2;
    pk.gflops = 400;
    r.peak = {pk};
    auto p = path_limits(mc, r, {}, 2);
    EXPECT_EQ(p.stages[0].compute_rate, "peak");
    EXPECT_DOUBLE_EQ(p.stages[0].compute_rtf, 0.25);       // 100 GFLOP at 400 GFLOP/s
    EXPECT_DOUBLE_EQ(p.stages[0].compute_rtf_ggml, 1.0);   // at ggml's 100
    EXPECT_DOUBLE_EQ(p.serial_rtf, 0.25);
    EXPECT_TRUE(std::isnan(r.peak_gflops("f16", 2)));       // no f16 row measured: no peak, never a guess
    EXPECT_DOUBLE_EQ(r.peak_gflops("f32", 4), 400);        // best at <= 4 threads
}

namespace {
// The ISA a peak loop must use on this CPU, asked of the CPU independently of the loop
// picker (x86-64; elsewhere every type is unsupported).
std::string expected_peak_isa(const std::string &type) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f");
    if (type == "f32" || type == "f16") {
        if (avx512) return "avx512f";
        if (__builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2")) return "fma";
    } else if (type == "bf16") {
        if (avx512 && __builtin_cpu_supports("avx512bf16")) return "avx512bf16";
    } else if (type == "int8") {
        if (avx512 && __builtin_cpu_supports("avx512vnni")) return "avx512vnni";
    }
#else
    (void)type;
#endif
    return "unsupported";
}

// Each type's loop runs on the instruction set the CPU has (a loop that says "unsupported"
// on a CPU with the feature, or runs without it, fails here) and gives a finite, positive
// rate; a type the CPU lacks reports rate 0. No speed is asserted: the rate is the machine's.
void check_peak(const std::string &type) {
    const std::string want = expected_peak_isa(type);
    const auto r = measure_peak(type, 1, 10);
    EXPECT_EQ(r.type, type);
    EXPECT_EQ(r.n_threads, 1);
    EXPECT_EQ(r.isa, want) << type;
    if (r.isa == "unsupported") {
        EXPECT_EQ(r.gflops, 0.0) << type;
    } else {
        EXPECT_TRUE(std::isfinite(r.gflops)) << type;
        EXPECT_GT(r.gflops, 0.0) << type;
    }
}
}  // namespace

TEST(Limits, PeakTypesAndRefusals) {
    EXPECT_EQ(peak_types(), (std::vector<std::string>{"f32", "f16", "bf16", "int8"}));
    EXPECT_THROW(measure_peak("f8", 1), rtf::Error);
    EXPECT_THROW(measure_peak("f32", 0), rtf::Error);
}

TEST(Limits, PeakLoopF32) {
    check_peak("f32");
    check_peak("f16");
    if (expected_peak_isa("f32") == "unsupported") GTEST_SKIP() << "no AVX-512F and no FMA3/AVX2 on this CPU: the f32 loop reports unsupported";
}

TEST(Limits, PeakLoopBf16) {
    check_peak("bf16");
    if (expected_peak_isa("bf16") == "unsupported") GTEST_SKIP() << "no AVX512-BF16 on this CPU: the bf16 loop reports unsupported";
}

TEST(Limits, PeakLoopInt8) {
    check_peak("int8");
    if (expected_peak_isa("int8") == "unsupported") GTEST_SKIP() << "no AVX512-VNNI on this CPU: the int8 loop reports unsupported";
}
