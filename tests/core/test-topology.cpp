#include <gtest/gtest.h>

#include <thread>

#include "core/error.h"
#include "core/topology.h"

using namespace rtf;

TEST(Topology, HasAtLeastOnePu) {
    const auto &t = cpu_topology();
    EXPECT_GE(t.n_pus, 1);
    EXPECT_FALSE(t.allowed_pus.empty());
}

TEST(Topology, BindToFirstAllowedPu) {
    const auto &t = cpu_topology();
    int pu = t.allowed_pus.front();
    std::thread th([&] {
        auto bound = bind_current_thread({pu}, -1);
        EXPECT_EQ(bound, std::vector<int>{pu});
    });
    th.join();
}

TEST(Topology, MissingCpuAndNodeAreClearErrors) {
    std::thread th([] {
        try {
            bind_current_thread({100000}, -1);
            ADD_FAILURE();
        } catch (const Error &e) {
            EXPECT_NE(std::string(e.what()).find("CPU 100000"), std::string::npos) << e.what();
        }
        try {
            bind_current_thread({}, 999);
            ADD_FAILURE();
        } catch (const Error &e) {
            EXPECT_NE(std::string(e.what()).find("NUMA node 999"), std::string::npos) << e.what();
        }
    });
    th.join();
}

TEST(Topology, FormatPuList) {
    EXPECT_EQ(format_pu_list({0, 1, 2, 3, 6, 8, 9}), "0-3,6,8-9");
    EXPECT_EQ(format_pu_list({}), "");
}
