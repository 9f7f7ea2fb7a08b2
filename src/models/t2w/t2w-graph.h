#pragma once
// Graph: one ggml compute graph of the Token2Wav engine and the context that holds its
// tensor metadata. The context never holds data: weights live in the model buffers,
// constants in resident buffers, activations in an allocator's buffer, either the graph's
// own (allocate()) or one shared by graphs that never run at the same time (the vocoder's
// input lengths: bind()).
//
//   Graph g(n_nodes);                       // metadata for at most n_nodes tensors
//   ggml_tensor *y = ...build on g.ctx...;
//   ggml_build_forward_expand(g.gf, y);
//   g.allocate(backend, "decoder");         // plan + allocate once, recompute in place
//
// Not thread-safe; owned by one engine.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <ggml-alloc.h>
#include <ggml-backend.h>

namespace rtf::t2w {

struct Graph {
    std::vector<uint8_t> meta;
    ggml_context *ctx = nullptr;
    ggml_cgraph *gf = nullptr;
    ggml_gallocr_t alloc = nullptr;  // this graph's own activation buffer (allocate()), or null

    explicit Graph(size_t max_nodes);
    ~Graph();
    Graph(const Graph &) = delete;
    Graph &operator=(const Graph &) = delete;

    // Plans and allocates the activations in a buffer of this graph's own, once; the graph
    // is then recomputed in place. Throws rtf::Error(Runtime) naming `what` and the backend.
    void allocate(ggml_backend_t backend, const char *what);
    // Places the activations in `shared` (which keeps the largest buffer it ever needed):
    // call before each compute when other graphs used `shared` since (each call places them
    // anew, so a buffer that grew in between is no hazard). Throws like allocate().
    void bind(ggml_gallocr_t shared, const char *what);
    size_t bytes() const { return alloc ? ggml_gallocr_get_buffer_size(alloc, 0) : 0; }
};

}  // namespace rtf::t2w
