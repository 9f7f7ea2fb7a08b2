#include <ctime>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "pipeline/synthetic.h"

using namespace rtf;
using namespace rtf::pipe;

namespace {
std::string usage_message(const std::function<void()> &f) {
    try {
        f();
    } catch (const Error &e) {
        EXPECT_EQ(e.kind(), ErrorKind::Usage);
        return e.what();
    }
    ADD_FAILURE() << "no usage error";
    return "";
}
}  // namespace

TEST(Synthetic, CostsTypesAndCpusParse) {
    SimulateConfig c = SimulateConfig::defaults();
    apply_costs(c, "llm=120ms, t2w=0.35s", "--cost");
    EXPECT_DOUBLE_EQ(c.stages[0].cost_ms, 120);
    EXPECT_DOUBLE_EQ(c.stages[1].cost_ms, 300);  // unchanged default
    EXPECT_DOUBLE_EQ(c.stages[2].cost_ms, 350);
    apply_cost_types(c, "busy", "--cost-type");
    EXPECT_EQ(c.stages[1].type, CostType::busy);
    apply_cost_types(c, "tts=wait", "--cost-type");
    EXPECT_EQ(c.stages[1].type, CostType::wait);
    EXPECT_EQ(c.stages[2].type, CostType::busy);
    apply_cpus(c, "llm=0,t2w=1-2,4", "--cpus");
    EXPECT_EQ(c.stages[0].cpus, std::vector<int>{0});
    EXPECT_EQ(c.stages[2].cpus, (std::vector<int>{1, 2, 4}));
    EXPECT_EQ(c.to_json()["stages"][2]["cost_type"], "busy");
}

TEST(Synthetic, BadValuesNameTheValue) {
    SimulateConfig c = SimulateConfig::defaults();
    EXPECT_NE(usage_message([&] { apply_costs(c, "vocoder=10ms", "--cost"); }).find("'vocoder'"), std::string::npos);
    EXPECT_NE(usage_message([&] { apply_costs(c, "llm=fast", "--cost"); }).find("fast"), std::string::npos);
    EXPECT_NE(usage_message([&] { apply_costs(c, "llm=-5ms", "--cost"); }).find("-5ms"), std::string::npos);
    EXPECT_NE(usage_message([&] { apply_costs(c, "llm", "--cost"); }).find("KEY=VALUE"), std::string::npos);
    EXPECT_NE(usage_message([&] { apply_cost_types(c, "lazy", "--cost-type"); }).find("lazy"), std::string::npos);
    EXPECT_NE(usage_message([&] { apply_cpus(c, "0,1", "--cpus"); }).find("STAGE=CPUS"), std::string::npos);
    EXPECT_NE(usage_message([&] { apply_cpus(c, "t2w=x", "--cpus"); }).find("'x'"), std::string::npos);
    c.n_chunks = 0;
    EXPECT_EQ(usage_message([&] { c.validate(); }).rfind("chunks: ", 0), 0u);
}

// A busy cost spends CPU time on the calling thread (a sleep would spend wall time only).
TEST(Synthetic, BusyCostUsesCpuTime) {
    auto cpu_ms = [] {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
    };
    const double c0 = cpu_ms();
    burn_cpu_ms(5);
    EXPECT_GE(cpu_ms() - c0, 5.0);
}
