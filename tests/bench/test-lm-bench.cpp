// lm-bench's pure parts: the llama-bench argument mapping of every placement knob, and the
// parsing of llama-bench's JSON (including the failure modes a wrong binary produces).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bench/lm-bench.h"
#include "core/error.h"

namespace {

using rtf::bench::llama_bench_args;
using rtf::bench::parse_llama_bench_tps;

std::string after(const std::vector<std::string> &a, const std::string &flag) {
    auto it = std::find(a.begin(), a.end(), flag);
    return it == a.end() || it + 1 == a.end() ? "<absent>" : *(it + 1);
}

TEST(LmBench, ArgsMirrorPlacement) {
    rtf::lm::ModelPlacement pl;
    pl.n_threads = 3;
    pl.flash_attn = "on";
    pl.kv_type = "q8_0";
    pl.mmap = false;
    pl.device = "CPU";
    auto a = llama_bench_args("/m.gguf", pl, 64);
    EXPECT_EQ(after(a, "-m"), "/m.gguf");
    EXPECT_EQ(after(a, "-p"), "0");
    EXPECT_EQ(after(a, "-n"), "64");
    EXPECT_EQ(after(a, "-r"), "1");
    EXPECT_EQ(after(a, "-o"), "json");
    EXPECT_EQ(after(a, "-t"), "3");
    EXPECT_EQ(after(a, "-fa"), "on");
    EXPECT_EQ(after(a, "-ctk"), "q8_0");
    EXPECT_EQ(after(a, "-ctv"), "q8_0");
    EXPECT_EQ(after(a, "-lm"), "none");
    EXPECT_EQ(after(a, "-ngl"), "0");
    EXPECT_EQ(after(a, "-dev"), "<absent>");
    EXPECT_EQ(after(a, "--poll"), "<absent>");  // ggml's default 50 is llama-bench's default
    EXPECT_EQ(after(a, "-C"), "<absent>");
}

TEST(LmBench, ArgsDeviceCpusPoll) {
    rtf::lm::ModelPlacement pl;
    pl.device = "CUDA0";
    pl.n_gpu_layers = 12;
    pl.poll = 0;
    pl.cpus = {0, 1, 5, 12};
    auto a = llama_bench_args("m", pl, 8);
    EXPECT_EQ(after(a, "-dev"), "CUDA0");
    EXPECT_EQ(after(a, "-ngl"), "12");
    EXPECT_EQ(after(a, "--poll"), "0");
    EXPECT_EQ(after(a, "-C"), "0x1023");  // bits 0, 1, 5, 12
    EXPECT_EQ(after(a, "--cpu-strict"), "1");
    pl.device = "auto";
    pl.n_gpu_layers = -1;
    a = llama_bench_args("m", pl, 8);
    EXPECT_EQ(after(a, "-dev"), "<absent>");
    EXPECT_EQ(after(a, "-ngl"), "999");
}

TEST(LmBench, ParsesTheTgResult) {
    const std::string j = R"([
      {"n_prompt": 512, "n_gen": 0, "avg_ts": 900.5},
      {"n_prompt": 0, "n_gen": 128, "avg_ts": 21.75, "samples_ts": [21.75]}
    ])";
    EXPECT_DOUBLE_EQ(parse_llama_bench_tps(j), 21.75);
}

TEST(LmBench, BadOutputIsASetupErrorSayingWhy) {
    auto msg = [](const std::string &text) {
        try {
            parse_llama_bench_tps(text);
        } catch (const rtf::Error &e) {
            EXPECT_EQ(e.kind(), rtf::ErrorKind::Setup);
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(msg("| model | size |").find("not JSON"), std::string::npos);
    EXPECT_NE(msg(R"({"n_gen": 1})").find("array"), std::string::npos);
    EXPECT_NE(msg(R"([{"n_gen": 0, "avg_ts": 5}])").find("no tg result"), std::string::npos);
    EXPECT_NE(msg(R"([{"n_gen": 4, "avg_ts": "fast"}])").find("no tg result"), std::string::npos);
}

TEST(LmBench, ConfigValidationNamesTheField) {
    rtf::bench::LmBenchConfig c;
    c.model_path = "x.gguf";
    c.stage = "vocoder";
    EXPECT_THROW(c.validate(), rtf::Error);
    c.stage = "tts";
    c.n_gen = 0;
    try {
        c.validate();
        FAIL() << "n_gen 0 accepted";
    } catch (const rtf::Error &e) {
        EXPECT_NE(std::string(e.what()).find("-n"), std::string::npos);
    }
}

}  // namespace
