#include "core/topology.h"

#include <hwloc.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace rtf {

namespace {

std::vector<int> bitmap_to_list(hwloc_const_bitmap_t set) {
    std::vector<int> out;
    unsigned i = 0;
    hwloc_bitmap_foreach_begin(i, set) { out.push_back(static_cast<int>(i)); }
    hwloc_bitmap_foreach_end();
    return out;
}

std::string read_cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            auto colon = line.find(':');
            if (colon != std::string::npos) {
                auto v = line.substr(colon + 1);
                v.erase(0, v.find_first_not_of(' '));
                return v;
            }
        }
    }
    return {};
}

// hwloc topologies are not cheap to load; one per process, guarded for binding calls.
struct Hwloc {
    hwloc_topology_t topo = nullptr;
    std::mutex mu;
    Hwloc() {
        hwloc_topology_init(&topo);
        hwloc_topology_load(topo);
    }
    ~Hwloc() { hwloc_topology_destroy(topo); }
};

Hwloc &hwloc() {
    static Hwloc h;
    return h;
}

}  // namespace

const CpuTopology &cpu_topology() {
    static const CpuTopology topo = [] {
        CpuTopology t;
        auto &h = hwloc();
        std::lock_guard lock(h.mu);
        t.cpu_model = read_cpu_model();
        t.n_packages = std::max(1, hwloc_get_nbobjs_by_type(h.topo, HWLOC_OBJ_PACKAGE));
        t.n_cores = hwloc_get_nbobjs_by_type(h.topo, HWLOC_OBJ_CORE);
        t.n_pus = hwloc_get_nbobjs_by_type(h.topo, HWLOC_OBJ_PU);
        int n_numa = hwloc_get_nbobjs_by_type(h.topo, HWLOC_OBJ_NUMANODE);
        for (int i = 0; i < n_numa; ++i) {
            hwloc_obj_t node = hwloc_get_obj_by_type(h.topo, HWLOC_OBJ_NUMANODE, i);
            NumaNode n;
            n.os_index = static_cast<int>(node->os_index);
            n.pus = bitmap_to_list(node->cpuset);
            n.memory = node->attr ? node->attr->numanode.local_memory : 0;
            t.numa_nodes.push_back(std::move(n));
        }
        t.allowed_pus = bitmap_to_list(hwloc_topology_get_allowed_cpuset(h.topo));
        return t;
    }();
    return topo;
}

nlohmann::json to_json(const CpuTopology &t) {
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto &n : t.numa_nodes) {
        nodes.push_back({{"os_index", n.os_index}, {"pus", format_pu_list(n.pus)},
                         {"memory_bytes", n.memory}});
    }
    return {{"cpu_model", t.cpu_model}, {"packages", t.n_packages}, {"cores", t.n_cores},
            {"pus", t.n_pus},           {"numa_nodes", nodes},      {"allowed_pus", format_pu_list(t.allowed_pus)}};
}

std::string format_pu_list(const std::vector<int> &pus) {
    std::string out;
    for (size_t i = 0; i < pus.size();) {
        size_t j = i;
        while (j + 1 < pus.size() && pus[j + 1] == pus[j] + 1) ++j;
        if (!out.empty()) out += ',';
        out += std::to_string(pus[i]);
        if (j > i) out += "-" + std::to_string(pus[j]);
        i = j + 1;
    }
    return out;
}

std::vector<int> current_thread_affinity() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> out;
    if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) == 0) {
        for (int i = 0; i < CPU_SETSIZE; ++i)
            if (CPU_ISSET(i, &set)) out.push_back(i);
    }
    return out;
}

std::vector<int> bind_current_thread(const std::vector<int> &pus, int numa_node) {
    if (pus.empty() && numa_node < 0) return current_thread_affinity();
    const CpuTopology &t = cpu_topology();
    std::vector<int> want = pus;
    for (int pu : pus) {
        if (!std::binary_search(t.allowed_pus.begin(), t.allowed_pus.end(), pu)) {
            throw_usage("CPU " + std::to_string(pu) + " is not available on this machine; allowed CPUs: " +
                        format_pu_list(t.allowed_pus));
        }
    }
    if (numa_node >= 0) {
        auto it = std::find_if(t.numa_nodes.begin(), t.numa_nodes.end(),
                               [&](const NumaNode &n) { return n.os_index == numa_node; });
        if (it == t.numa_nodes.end()) {
            std::string have;
            for (const auto &n : t.numa_nodes) have += (have.empty() ? "" : ",") + std::to_string(n.os_index);
            throw_usage("NUMA node " + std::to_string(numa_node) + " does not exist; this machine has node(s) " +
                        (have.empty() ? "none" : have));
        }
        want.insert(want.end(), it->pus.begin(), it->pus.end());
    }
    auto &h = hwloc();
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (int pu : want) hwloc_bitmap_set(set, static_cast<unsigned>(pu));
    int rc;
    {
        std::lock_guard lock(h.mu);
        rc = hwloc_set_cpubind(h.topo, set, HWLOC_CPUBIND_THREAD);
    }
    hwloc_bitmap_free(set);
    if (rc != 0) throw_setup("binding thread to CPUs " + format_pu_list(want) + " failed");
    return current_thread_affinity();
}

}  // namespace rtf
