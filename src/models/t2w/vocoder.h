#pragma once
// HiFT vocoder (24 kHz, 480 samples per mel frame) as two ggml graphs with plain-C++
// kernels between/after them (docs/minicpmo45.md §4.8):
//   graph 1: F0 predictor (5 × conv+ELU, classifier, |·|)            -> f0 per frame
//   host:    harmonic source (9 harmonics, no noise), source-cache prefix, STFT(16, hop 4)
//   graph 2: conv_pre, 3 × (LeakyReLU, transposed conv, + source branch, mean of 3
//            ResBlocks), LeakyReLU, conv_post, exp/sin -> spectrum
//   host:    iSTFT (overlap-add, w² normalisation, trim 8+8), clamp ±0.99
// Graphs are built once per input length T (50 first, 58 steady, 2..64 final windows) and
// recomputed in place; every length shares two activation buffers sized by the longest
// length prepared, so prepare() can build all of them up front for a few MiB of metadata. On a CPU device Snake is one fused custom
// op, the transposed convs are GEMMs on kernels packed at construction (ops.h), and the convs
// whose kernels T2wModel packed for it run as the direct convolution (packed-conv.h; the
// ResBlocks' residual add fused into their second conv), else im2col + product.
// Not thread-safe: one Vocoder per stream.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <ggml-alloc.h>
#include <ggml-backend.h>

#include "models/t2w/t2w-config.h"
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-timing.h"

namespace rtf::t2w {

class Vocoder {
public:
    Vocoder(const T2wModel &model, const T2wConfig &cfg);
    ~Vocoder();
    Vocoder(const Vocoder &) = delete;
    Vocoder &operator=(const Vocoder &) = delete;

    // mel: [80][T] (time fastest). source_cache: the previous call's last <= 3840 source
    // samples (empty on the first call). Outputs wave and source, 480·T samples each.
    void run(const std::vector<float> &mel, int T, const std::vector<float> &source_cache, std::vector<float> &wave,
             std::vector<float> &source, PartTimes &tm);

    // F0 per frame (graph 1 only), for tests and diagnostics.
    std::vector<float> f0(const std::vector<float> &mel, int T, PartTimes &tm);

    // Builds the graphs of these input lengths now (run() builds a missing one on first
    // use) and sizes the shared activation buffers for the longest of them.
    void prepare(const std::vector<int> &lengths);
    // Input lengths whose graphs were built so far (two graphs each).
    int64_t graphs_built() const { return graphs_built_; }

    struct Shape;  // the two graphs of one input length

private:
    Shape &shape(int T);

    const T2wModel &m_;
    bool cpu_ = true;
    ggml_backend_t backend_ = nullptr;
    ggml_context *packed_ctx_ = nullptr;       // pre-packed transposed-conv kernels
    ggml_backend_buffer_t packed_buf_ = nullptr;
    std::vector<ggml_tensor *> ups_packed_;
    std::map<int, std::unique_ptr<Shape>> shapes_;
    ggml_gallocr_t f0_alloc_ = nullptr, dec_alloc_ = nullptr;  // shared by every length
    Shape *bound_f0_ = nullptr, *bound_dec_ = nullptr;          // the length placed in each
    int64_t graphs_built_ = 0;
    size_t dec_nodes_ = 8192;  // metadata capacity of a decoder graph (set from the first one built)
    std::vector<float> harm_w_;
    float harm_b_ = 0;
};

}  // namespace rtf::t2w
