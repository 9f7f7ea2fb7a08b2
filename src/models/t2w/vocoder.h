#pragma once
// HiFT vocoder (24 kHz, 480 samples per mel frame) as two ggml graphs with plain-C++
// kernels between/after them (spec §3.8):
//   graph 1: F0 predictor (5 × conv+ELU, classifier, |·|)            -> f0 per frame
//   host:    harmonic source (9 harmonics, no noise), source-cache prefix, STFT(16, hop 4)
//   graph 2: conv_pre, 3 × (LeakyReLU, transposed conv, + source branch, mean of 3
//            ResBlocks), LeakyReLU, conv_post, exp/sin -> spectrum
//   host:    iSTFT (overlap-add, w² normalisation, trim 8+8), clamp ±0.99
// Graphs are built and allocated once per input length T (a few shapes recur: 50, 58 and
// the final window's) and recomputed in place. On a CPU device Snake is one fused custom
// op and the transposed convs are GEMMs on kernels packed at construction (ops.h).
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
    int64_t uses_ = 0;
    std::vector<float> harm_w_;
    float harm_b_ = 0;
};

}  // namespace rtf::t2w
