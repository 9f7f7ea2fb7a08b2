#pragma once
// CPU topology and thread binding through hwloc.
//
// PU numbers are the OS indices (as in /proc/cpuinfo, `taskset`, `lscpu`).
// bind_current_thread() is what pipeline stages call on their own threads; it throws
// rtf::Error(Usage) when a requested PU or NUMA node does not exist on this machine,
// and returns the PU set the OS actually applied (so reports show the truth).
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rtf {

struct NumaNode {
    int os_index = 0;
    std::vector<int> pus;          // OS indices of the PUs in this node
    unsigned long long memory = 0;  // bytes, 0 when unknown
};

struct CpuTopology {
    std::string cpu_model;  // from /proc/cpuinfo "model name"; empty when unknown
    int n_packages = 0;
    int n_cores = 0;
    int n_pus = 0;
    std::vector<NumaNode> numa_nodes;
    std::vector<int> allowed_pus;  // PUs this process may run on (cgroup/affinity)
};

// Reads the machine's topology (cached after the first call; thread-safe).
const CpuTopology &cpu_topology();

nlohmann::json to_json(const CpuTopology &topo);

// Binds the calling thread to the union of `pus` and the PUs of `numa_node` (-1: none).
// Empty `pus` with numa_node -1 is a no-op returning the current affinity.
// Throws rtf::Error(Usage) naming the missing PU / node; returns the applied PU set.
std::vector<int> bind_current_thread(const std::vector<int> &pus, int numa_node);

// The PUs the calling thread may run on now.
std::vector<int> current_thread_affinity();

// "0-3,6" style rendering of a sorted PU list.
std::string format_pu_list(const std::vector<int> &pus);

}  // namespace rtf
