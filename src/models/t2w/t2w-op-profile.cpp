#include "models/t2w/t2w-op-profile.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include <ggml.h>

#include "machine/backend-devices.h"
#include "machine/device-lock.h"

namespace rtf::t2w {

namespace {
std::mutex g_mu;
std::map<std::pair<std::string, std::string>, OpStat> g_stats;
std::mutex g_seen_mu;
std::set<const ggml_cgraph *> g_seen;  // graphs computed once on a software device (by address: forget_graph)

std::string op_name(const ggml_tensor *t) {
    std::string s = ggml_op_desc(t);
    if (t->op == GGML_OP_MUL_MAT && t->src[0]) s += std::string("(") + ggml_type_name(t->src[0]->type) + ")";
    // our kernels' custom ops carry their name (packed GEMMs, direct conv, oneDNN's): which
    // implementation did the work, per op class
    if (t->op == GGML_OP_CUSTOM && std::strncmp(t->name, "rtf:", 4) == 0) s += std::string("(") + (t->name + 4) + ")";
    return s;
}
}  // namespace

bool op_profile_enabled() {
    static const bool on = [] {
        const char *e = std::getenv("RTF_T2W_PROFILE_OPS");
        return e && *e && std::string(e) != "0";
    }();
    return on;
}

namespace {
// Computes gf one node at a time, each node's compute finished before the next starts
// (`timed`, when given, gets each node's op and wall time). A one-node graph, refilled per
// node: the node's inputs are already computed in the big graph's buffers, so computing it
// alone does exactly its share of the work.
ggml_status compute_node_by_node(ggml_backend_t backend, ggml_cgraph *gf,
                                 std::vector<std::pair<std::string, double>> *timed) {
    const int n = ggml_graph_n_nodes(gf);
    if (timed) timed->reserve(static_cast<size_t>(n));
    std::vector<uint8_t> meta(ggml_graph_overhead_custom(1, false) + ggml_tensor_overhead());
    ggml_init_params ip{meta.size(), meta.data(), true};
    ggml_context *ctx = ggml_init(ip);
    ggml_cgraph *one = ggml_new_graph_custom(ctx, 1, false);
    for (int i = 0; i < n; ++i) {
        ggml_tensor *node = ggml_graph_node(gf, i);
        if (ggml_is_empty(node) || node->op == GGML_OP_NONE || node->op == GGML_OP_VIEW || node->op == GGML_OP_RESHAPE ||
            node->op == GGML_OP_PERMUTE || node->op == GGML_OP_TRANSPOSE)
            continue;  // no work: metadata only
        ggml_graph_clear(one);
        ggml_graph_add_node(one, node);
        const auto t0 = std::chrono::steady_clock::now();
        const ggml_status st = ggml_backend_graph_compute(backend, one);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        if (st != GGML_STATUS_SUCCESS) {
            ggml_free(ctx);
            return st;
        }
        if (timed) timed->emplace_back(op_name(node), ms);
    }
    ggml_free(ctx);
    return GGML_STATUS_SUCCESS;
}

// Whether this is gf's first compute on a software Vulkan device (lavapipe). Mesa 22.3's
// lavapipe corrupted the heap when a graph's first compute ran whole: each of ggml-vulkan's
// pipelines is compiled (LLVM) when first dispatched, and with several new pipelines in one
// command buffer the run crashed in 4 of 6 tries with Mesa's shader cache off (0 of 6 with a
// warm one); node by node, every dispatch finished before the next pipeline is made, it
// passed 6 of 6 (docs/vulkan.md, "lavapipe: the Token2Wav crash"). Later computes of the
// graph run whole, its pipelines made.
bool first_compute_on_software_device(ggml_backend_t backend, const ggml_cgraph *gf) {
    ggml_backend_dev_t dev = ggml_backend_get_device(backend);
    if (!dev || ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU) return false;
    std::lock_guard lock(g_seen_mu);
    static std::map<ggml_backend_dev_t, bool> software;  // looked up once per device, not per compute
    auto it = software.find(dev);
    if (it == software.end()) {
        bool sw = false;
        for (const auto &d : backend_info().devices) sw = sw || (d.name == ggml_backend_dev_name(dev) && d.software);
        it = software.emplace(dev, sw).first;
    }
    return it->second && g_seen.insert(gf).second;
}
}  // namespace

void forget_graph(const ggml_cgraph *gf) {
    std::lock_guard lock(g_seen_mu);
    g_seen.erase(gf);
}

ggml_status compute_graph(ggml_backend_t backend, ggml_cgraph *gf, const char *graph) {
    DeviceComputeGuard serial(ggml_backend_get_device(backend));  // a Vulkan device: one compute at a time
    if (!op_profile_enabled()) {
        if (first_compute_on_software_device(backend, gf)) return compute_node_by_node(backend, gf, nullptr);
        return ggml_backend_graph_compute(backend, gf);
    }
    std::vector<std::pair<std::string, double>> local;
    const ggml_status st = compute_node_by_node(backend, gf, &local);
    if (st != GGML_STATUS_SUCCESS) return st;
    std::lock_guard lock(g_mu);
    for (auto &[op, ms] : local) {
        OpStat &s = g_stats[{graph, op}];
        s.graph = graph;
        s.op = op;
        ++s.n;
        s.ms += ms;
    }
    return GGML_STATUS_SUCCESS;
}

std::vector<OpStat> op_profile() {
    std::vector<OpStat> v;
    {
        std::lock_guard lock(g_mu);
        for (const auto &[k, s] : g_stats) v.push_back(s);
    }
    std::sort(v.begin(), v.end(), [](const OpStat &a, const OpStat &b) { return a.ms > b.ms; });
    return v;
}

void op_profile_reset() {
    std::lock_guard lock(g_mu);
    g_stats.clear();
}

}  // namespace rtf::t2w
