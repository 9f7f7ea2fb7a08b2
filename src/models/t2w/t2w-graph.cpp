#include "models/t2w/t2w-graph.h"

#include <string>

#include "core/error.h"
#include "models/t2w/t2w-op-profile.h"

namespace rtf::t2w {

Graph::Graph(size_t max_nodes) {
    meta.resize(ggml_tensor_overhead() * max_nodes + ggml_graph_overhead_custom(max_nodes, false));
    ggml_init_params ip{meta.size(), meta.data(), true};
    ctx = ggml_init(ip);
    gf = ggml_new_graph_custom(ctx, max_nodes, false);
}

Graph::~Graph() {
    forget_graph(gf);
    if (alloc) ggml_gallocr_free(alloc);
    ggml_free(ctx);
}

void Graph::allocate(ggml_backend_t backend, const char *what) {
    alloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    if (!ggml_gallocr_alloc_graph(alloc, gf)) {
        throw_runtime(std::string("t2w: cannot allocate the ") + what + " graph on " + ggml_backend_name(backend));
    }
}

void Graph::bind(ggml_gallocr_t shared, const char *what) {
    // Forget the last placement first: the allocator keeps a tensor that already has data
    // where it is, and that address is stale once `shared` grew for a longer graph bound
    // since (it frees its old buffer). Every tensor of ctx is an activation (see the header).
    for (ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        t->data = nullptr;
        t->buffer = nullptr;
    }
    if (!ggml_gallocr_alloc_graph(shared, gf)) throw_runtime(std::string("t2w: cannot allocate the ") + what + " graph");
}

}  // namespace rtf::t2w
