#pragma once
// ApmEncoder: one audio stream through the audio encoder (docs/minicpmo45.md §5):
// 16 kHz mono samples of one frame (≈1 s in duplex) -> log-mel (log-mel.h) -> the encoder
// graph (apm-blocks.h) on ggml's CPU backend -> embedding rows of the LLM width.
//
//   rtf::apm::ApmModel model(kit.apm);
//   rtf::apm::ApmEncoder enc(model, {});           // 4 threads, F16 KV cache, streaming
//   for (auto &frame : frames) {                   // 16000 samples each
//       rtf::apm::ApmOutput out = enc.encode_pcm(frame);
//       // out.n_rows == 10 rows of out.n_embd floats for a 1 s frame
//   }
//   enc.reset();                                   // a new stream: forget past audio
//
// Streaming state (the reference's whisper_streaming_mode, on by default there): a per-layer
// K/V cache of n_ctx (1500) tokens. Each chunk's T tokens are written at token n_past, its
// queries attend to all n_past + T cached tokens (no mask), its positional rows are
// [n_past, n_past + T), then n_past += T. When a chunk would pass n_ctx the cache starts over
// (n_past = 0): 30 chunks of 1 s, as in the reference. The reference counts chunks and
// assumes one T for all; counting tokens gives the same offsets for equal chunks and stays
// in bounds for a shorter last chunk. With `streaming` off every chunk starts from an empty
// cache. When the reference clears the cache between turns is not known (docs/minicpmo45.md §9.10):
// callers decide with reset().
//
// Sizes per chunk: n_mel_frames = samples / 160, T = (n_mel_frames + 1) / 2 tokens,
// rows = (T - 5) / 5 + 1 (10 for 1 s). encode() needs T >= 5 (100 ms; encode_pcm pads to a
// multiple of 100 ms as the reference does) and T <= n_ctx.
//
// Errors: rtf::Error(Usage) for a chunk that is too short or too long (the state is left as
// it was), rtf::Error(Runtime) when ggml cannot allocate or compute the graph.
// Thread-safety: one encoder per stream/thread; several encoders may share one ApmModel.
#include <cstdint>
#include <memory>
#include <vector>

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include "models/apm/apm-model.h"
#include "models/apm/log-mel.h"

namespace rtf::apm {

struct ApmConfig {
    int n_threads = 4;                  // ggml CPU threads of the encoder graph
    ggml_type kv_type = GGML_TYPE_F16;  // the reference's cache type; F32 for exact tests
    bool streaming = true;              // attend to earlier chunks (the reference's default)
    std::string weight_type = "file";   // the model's matrices at load (apm_weight_types(); the model's, not the encoder's)

    void validate() const;  // throws rtf::Error(Usage) naming the field
};

struct ApmOutput {
    int64_t n_rows = 0;       // embeddings (pooled tokens)
    int64_t n_embd = 0;       // width of each (= the LLM's n_embd)
    std::vector<float> data;  // [n_rows][n_embd]
    int64_t n_mel_frames = 0;
    int64_t n_tokens = 0;     // encoder tokens of this chunk (before pooling)
    int64_t n_past = 0;       // cached tokens this chunk attended to besides its own
    bool cache_reset = false; // the cache started over before this chunk
    double mel_ms = 0.0;      // encode_pcm only: padding + log-mel
    double graph_ms = 0.0;    // graph build + allocation + compute + read-back
};

class ApmEncoder {
public:
    ApmEncoder(const ApmModel &model, const ApmConfig &cfg);
    ~ApmEncoder();
    ApmEncoder(const ApmEncoder &) = delete;
    ApmEncoder &operator=(const ApmEncoder &) = delete;

    // One chunk of 16 kHz mono samples: zero-padded to a multiple of 100 ms, log-mel, encode().
    ApmOutput encode_pcm(const std::vector<float> &samples_16k);
    // One chunk's log-mel features (n_mel must equal the model's).
    ApmOutput encode(const Mel &mel);

    void reset() noexcept { n_past_ = 0; }
    int64_t n_past() const noexcept { return n_past_; }
    const ApmModel &model() const noexcept { return model_; }
    const LogMel &log_mel() const noexcept { return mel_; }
    size_t cache_bytes() const;
    size_t compute_bytes() const;  // the activation buffer's size after the last encode

private:
    const ApmModel &model_;
    ApmConfig cfg_;
    LogMel mel_;
    ggml_backend_t backend_ = nullptr;
    ggml_context *cache_ctx_ = nullptr;
    ggml_backend_buffer_t cache_buf_ = nullptr;
    std::vector<struct LayerCache> caches_;
    ggml_gallocr_t alloc_ = nullptr;
    std::vector<uint8_t> meta_;
    int64_t n_past_ = 0;
};

}  // namespace rtf::apm
