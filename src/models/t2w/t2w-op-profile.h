#pragma once
// Where Token2Wav's graph time goes, per graph and ggml op: with RTF_T2W_PROFILE_OPS=1
// every graph is computed one node at a time (ggml_graph_view) and each node's wall time
// is added to (graph, op). Per-node launches make such a run slower than a normal one,
// so its table is for shares ("mul_mat is 70 % of the DiT"), not for RTF; `rtf t2w`
// prints it and puts it in --json ("op_profile").
//
//   if (compute_graph(backend, gf, "dit") != GGML_STATUS_SUCCESS) ...   // everywhere
//   for (auto &s : op_profile()) printf("%s %s %.1f ms\n", s.graph.c_str(), s.op.c_str(), s.ms);
//
// Thread-safe: the two CFG lanes compute concurrently.
#include <cstdint>
#include <string>
#include <vector>

#include <ggml-backend.h>

namespace rtf::t2w {

// RTF_T2W_PROFILE_OPS=1 (read once).
bool op_profile_enabled();

// ggml_backend_graph_compute, or node by node (timed) when op profiling is on. On a
// software Vulkan device (lavapipe) a graph's first compute also goes node by node, each
// node finished before the next: whole, it crashed inside Mesa 22.3 while ggml-vulkan's
// pipelines were first made (the .cpp says more; docs/vulkan.md).
ggml_status compute_graph(ggml_backend_t backend, ggml_cgraph *gf, const char *graph);
// A graph is freed: its address may come back for another one (t2w::Graph's destructor).
void forget_graph(const ggml_cgraph *gf);

struct OpStat {
    std::string graph;  // "encoder", "dit", "dit-modulation", "vocoder-f0", "vocoder"
    std::string op;     // ggml op name; MUL_MAT also names src0's type, e.g. "MUL_MAT(bf16)"
    int64_t n = 0;      // node executions
    double ms = 0;      // summed wall time
};

// Accumulated since start (or the last reset), largest first.
std::vector<OpStat> op_profile();
void op_profile_reset();

}  // namespace rtf::t2w
