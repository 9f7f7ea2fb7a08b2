#pragma once
// ApmModel: MiniCPM-o 4.5's audio encoder file (audio/MiniCPM-o-4_5-audio-F16.gguf,
// docs/minicpmo45.md §2.10), loaded once and read-only afterwards: a Whisper-medium encoder (two
// convolutions, a 1500-row positional table, pre-LN blocks whose key projection has no bias) and a
// two-layer projector to the LLM width.
//
//   rtf::apm::ApmModel m("kit/audio/MiniCPM-o-4_5-audio-F16.gguf");
//   m.hparams().n_out  // embedding width (= the LLM's n_embd)
//   ApmEncoder enc(m, cfg);  // per-stream state: apm-encoder.h
//
// Loading: the file is checked against the layout table first (models/gguf, the same check
// as `rtf inspect`), so a wrong file fails naming the tensor or key. Widths are read the way
// the reference runtime reads them: n_layer, d, n_head from `encoder_layers`, `d_model`,
// `encoder_attention_heads`; n_mel from `n_mel` (default 80); n_ctx from
// `max_source_positions` (default 1500); the projector widths from its tensors. The mel
// filter bank comes from the `filters` array (required). LayerNorm eps is the runtime's 1e-5.
// Weights live in one host (CPU) backend buffer, copied from the file in its own types.
//
// Errors: rtf::Error(Usage) for a missing file or one without the layout (the message lists
// the problems), rtf::Error(Setup) when the buffer cannot be allocated.
// Thread-safety: immutable after construction; any number of ApmEncoder may share it.
#include <cstdint>
#include <string>
#include <vector>

#include <ggml-backend.h>
#include <ggml.h>

namespace rtf::apm {

struct ApmHparams {
    int64_t n_layer = 0, d = 0, n_head = 0, n_ff = 0;
    int64_t n_mel = 80, n_ctx = 1500;
    int64_t n_proj = 0, n_out = 0;  // projector hidden and output widths
    float eps = 1e-5f;
    int64_t head_dim() const { return n_head > 0 ? d / n_head : 0; }
};

// One pre-LN encoder block. Shapes with d = width, f = FFN width (ggml ne order).
struct ApmLayer {
    ggml_tensor *attn_ln_w = nullptr, *attn_ln_b = nullptr;  // [d]
    ggml_tensor *q_w = nullptr, *q_b = nullptr;              // [d, d], [d]
    ggml_tensor *k_w = nullptr;                              // [d, d]: no bias
    ggml_tensor *v_w = nullptr, *v_b = nullptr;              // [d, d], [d]
    ggml_tensor *o_w = nullptr, *o_b = nullptr;              // [d, d], [d]
    ggml_tensor *mlp_ln_w = nullptr, *mlp_ln_b = nullptr;    // [d]
    ggml_tensor *fc1_w = nullptr, *fc1_b = nullptr;          // [d, f], [f]
    ggml_tensor *fc2_w = nullptr, *fc2_b = nullptr;          // [f, d], [d]
};

struct ApmWeights {
    ggml_tensor *conv1_w = nullptr, *conv1_b = nullptr;  // [3, n_mel, d], [1, d]
    ggml_tensor *conv2_w = nullptr, *conv2_b = nullptr;  // [3, d, d], [1, d]
    ggml_tensor *pos = nullptr;                          // [d, n_ctx]
    std::vector<ApmLayer> layers;
    ggml_tensor *ln_post_w = nullptr, *ln_post_b = nullptr;
    ggml_tensor *proj1_w = nullptr, *proj1_b = nullptr;  // [d, n_proj], [n_proj]
    ggml_tensor *proj2_w = nullptr, *proj2_b = nullptr;  // [n_proj, n_out], [n_out]
};

// The audio encoder's weight types (ApmConfig::weight_type): "file" keeps the file's (F16);
// the others convert the matrices of the blocks and the projector at load (the convolutions,
// norms and biases stay as stored). bf16 runs ggml's bf16 dot products, q8_0 / q4_0 its int8
// ones (the activations quantised per block): fewer bytes and, on VNNI, faster arithmetic.
const std::vector<std::string> &apm_weight_types();

class ApmModel {
public:
    // `weight_type`: one of apm_weight_types(); throws rtf::Error(Usage) for another.
    explicit ApmModel(const std::string &path, const std::string &weight_type = "file");
    ~ApmModel();
    ApmModel(const ApmModel &) = delete;
    ApmModel &operator=(const ApmModel &) = delete;

    const std::string &path() const noexcept { return path_; }
    const ApmHparams &hparams() const noexcept { return hp_; }
    const ApmWeights &weights() const noexcept { return w_; }
    const std::vector<float> &filters() const noexcept { return filters_; }  // [n_mel][201]
    size_t weight_bytes() const;
    const std::string &weight_type() const noexcept { return weight_type_; }

private:
    std::string path_;
    std::string weight_type_;
    ApmHparams hp_;
    ApmWeights w_;
    std::vector<float> filters_;
    ggml_context *ctx_ = nullptr;
    ggml_backend_buffer_t buf_ = nullptr;
};

}  // namespace rtf::apm
