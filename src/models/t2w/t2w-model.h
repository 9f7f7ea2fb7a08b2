#pragma once
// T2wModel: the five token2wav GGUF files of a MiniCPM-o 4.5 kit (token2wav-gguf/),
// loaded once and read-only afterwards.
//
//   encoder.gguf        UpsampleConformerEncoderV2 (token-rate + mel-rate conformer stacks)
//   flow_extra.gguf     token embedding, speaker affine, encoder projection
//   flow_matching.gguf  DiT estimator
//   hifigan2.gguf       HiFT vocoder
//   prompt_cache.gguf   the default voice (voice.h): speaker vector + streaming state after the prompt
//
// Layout facts: shared/specs/minicpmo45-speak-path.md §1.5-1.9. Every width, head count
// and block count is read from the tensors present (so tiny twins with fewer blocks
// load); only interface constants (80 mel bins, 192-d speaker, 6561 codes, n_fft 16 /
// hop 4, upsample rates 8·5·3, 480 samples per frame) are fixed. Weights live in ggml
// backend buffers of the device chosen per part; the DiT attention cache (never updated
// while streaming, docs/minicpmo45.md §4.7) lives with them. Thread-safety: immutable after load(),
// so any number of T2wStream objects may share one model.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ggml-backend.h>
#include <ggml.h>

#include "models/t2w/t2w-config.h"

namespace rtf::gguf {
class GgufFile;
}

namespace rtf::t2w {

struct Voice;

constexpr int kMelBins = 80;
constexpr int kSpkDim = 192;
constexpr int kSilenceToken = 4218;
constexpr int kWindowTokens = 28;   // 25 + 3 look-ahead
constexpr int kStrideTokens = 25;
// Shortest non-last window (--t2w-first-window): 5 tokens of output, 10 mel frames, so the
// vocoder's 8-frame (3840-sample) trim still leaves audio.
constexpr int kMinFirstWindow = 8;
// Most windows of a ramp (T2wConfig::ramp): each size is a token2mel graph built at load.
constexpr size_t kMaxRampWindows = 8;
constexpr int kSampleRate = 24000;
constexpr int kSamplesPerFrame = 480;
constexpr int kMelCacheFrames = 8;
constexpr int kCrossfadeSamples = 3840;  // = kMelCacheFrames * kSamplesPerFrame

// One loaded GGUF file: tensors by name in a backend buffer.
struct GgufWeights {
    std::string path;
    std::shared_ptr<const gguf::GgufFile> header;  // key/values and tensor infos (rtf_gguf's parser)
    ggml_context *ctx = nullptr;
    ggml_backend_buffer_t buffer = nullptr;
    std::map<std::string, ggml_tensor *> tensors;

    GgufWeights() = default;
    GgufWeights(const GgufWeights &) = delete;
    GgufWeights &operator=(const GgufWeights &) = delete;
    ~GgufWeights();
    bool has(const std::string &name) const { return tensors.count(name) != 0; }
    // Throws rtf::Error(Usage) naming the file and tensor when it is absent.
    ggml_tensor *get(const std::string &name) const;
    // The weight `name` as the src0 of a matrix product: its copy in the part's compute
    // type when load() made one (T2wConfig::type_*), else the file's F32 tensor. Host
    // code and non-matmul ops keep using get() (always F32).
    ggml_tensor *mm(const std::string &name) const;

    // Copies converted at load (compute type != f32), in their own buffer.
    ggml_type mm_type = GGML_TYPE_F32;
    ggml_context *mm_ctx = nullptr;
    ggml_backend_buffer_t mm_buffer = nullptr;
    std::map<std::string, ggml_tensor *> mm_tensors;

    // Weights packed in place at load for the packed F32 GEMM (packed-gemm.h) or, bf16
    // copies in mm_tensors, the packed BF16 GEMM (packed-gemm-bf16.h): their data is no
    // longer a plain matrix, only ops::linear / ops::conv1d_ct may read them (they route them
    // to gemm::linear / linear_bf16). Registered with gemm::register_packed; unregistered here.
    std::vector<ggml_tensor *> packed;
    // Linear weights handed to oneDNN at load (onednn-linear.h: reordered into its own
    // copy; the tensor is then a handle ops::linear routes). Unregistered here.
    std::vector<ggml_tensor *> onednn_weights;
    // Vocoder conv kernels handed to oneDNN's bf16 convolution (onednn-conv.h). Unregistered here.
    std::vector<ggml_tensor *> onednn_convs;
};

// "f32" | "f16" | "bf16" | "q8_0" -> ggml type; Usage error naming `what` otherwise.
ggml_type parse_compute_type(const std::string &name, const std::string &what);

struct EncoderDims {
    int d_model = 0, n_heads = 0, head_dim = 0, d_ffn = 0;
    int n_token_layers = 0, n_mel_layers = 0;
    int lookahead = 0;  // conv1 K - 1 (3)
    int conv2_k = 0;    // pre-look-ahead conv2 kernel (3) -> cache_pl = conv2_k - 1 frames
    int up_k = 0;       // upsample conv kernel (5) -> cache_up = up_k - 1 frames
    int up_rate = 2;
    int vocab = 0;      // input_embedding rows (6561)
};

struct DitDims {
    int hidden = 0, n_heads = 0, head_dim = 0, d_mlp = 0, depth = 0, in_channels = 0, freq_dim = 0;
};

struct HiftDims {
    int n_stages = 0;
    std::vector<int> channels;       // per stage (256, 128, 64)
    std::vector<int> up_rates;       // 8, 5, 3
    std::vector<int> up_kernels;     // 16, 11, 7
    std::vector<int> rb_kernels;     // per stage resblock kernels (3, 7, 11)
    std::vector<int> src_rb_kernels; // per stage source resblock kernel (7, 7, 11)
    int conv_pre_k = 0, conv_post_k = 0, f0_layers = 0, n_harmonics = 0;
};

struct PromptCacheInfo {
    int n_timesteps = 0;
    float temperature = 1.0f;
    int att_len = 0;  // L
};

// What T2wModel::load reads besides the weights.
struct T2wLoadOptions {
    // false skips prompt_cache.gguf (it may be absent): the weights alone, for building a
    // prompt cache (prompt-cache-builder.h); such a model has prompt() all zero and no
    // est_att_cache(), so it cannot run a stream.
    bool with_prompt = true;
    // Another prompt cache file instead of the kit's (e.g. one that `rtf t2w-prompt` built for
    // another step count); "" = <dir>/prompt_cache.gguf.
    std::string prompt_path;

    static T2wLoadOptions weights_only() {
        T2wLoadOptions o;
        o.with_prompt = false;
        return o;
    }
    static T2wLoadOptions prompt(const std::string &path) {
        T2wLoadOptions o;
        o.prompt_path = path;
        return o;
    }
};

class T2wModel {
public:
    // `dir` holds the five files (or contains token2wav-gguf/ holding them). From `cfg` the
    // load takes what is fixed with the weights: the devices of the two parts and the compute
    // types of their matrix weights (T2wConfig::type_*, converted here, once); the rest of
    // `cfg` is the streams' (T2wStream). Throws rtf::Error(Usage) for a bad config or a
    // missing, malformed or mismatching file, naming the file, tensor and expected/actual
    // shape; rtf::Error(Setup) for an unknown device.
    static std::unique_ptr<T2wModel> load(const std::string &dir, const T2wConfig &cfg = {},
                                          const T2wLoadOptions &opt = {});
    ~T2wModel();
    // Output PCM rate (24 kHz mono): consumers read it here instead of re-spelling it.
    static constexpr int sample_rate() { return kSampleRate; }
    T2wModel(const T2wModel &) = delete;
    T2wModel &operator=(const T2wModel &) = delete;

    const std::string &dir() const { return dir_; }
    const EncoderDims &enc_dims() const { return enc_; }
    const DitDims &dit_dims() const { return dit_; }
    const HiftDims &hift_dims() const { return hift_; }
    // The default voice's (voice.h): its prompt cache's step count, temperature and length.
    const PromptCacheInfo &prompt() const;
    // The prompt cache file loaded ("" when loaded without one).
    std::string prompt_file() const;
    // The default voice (the kit's prompt_cache.gguf, or T2wLoadOptions::prompt_path); null
    // when loaded without one.
    const std::shared_ptr<const Voice> &voice() const { return voice_; }
    // Another voice for this model's streams: a prompt cache with the default voice's shapes
    // (L, N), loaded onto the token2mel device. Throws rtf::Error(Usage) naming the file and
    // the tensor that does not fit. Thread-safe (const; the model is not changed).
    std::shared_ptr<const Voice> load_voice(const std::string &path, const std::string &name) const;

    const GgufWeights &encoder() const { return *encoder_; }
    const GgufWeights &flow_extra() const { return *flow_extra_; }
    const GgufWeights &flow() const { return *flow_; }
    const GgufWeights &hift() const { return *hift_w_; }

    ggml_backend_dev_t device_t2m() const { return dev_t2m_; }
    ggml_backend_dev_t device_voc() const { return dev_voc_; }
    const std::string &type_t2m() const { return type_t2m_; }
    const std::string &type_voc() const { return type_voc_; }
    size_t weight_bytes() const;
    // Matrix weights packed in place for the packed F32 GEMM at load: token2mel's linear
    // weights and conv kernels when it is F32 on the CPU, the vocoder's conv kernels (not its
    // transposed convs) when it is: for the direct convolution (packed-conv.h, Cout a multiple
    // of 8), or with RTF_T2W_CONV=0 for the GEMM (Cout a multiple of 16); 0 with no
    // AVX-512F or RTF_T2W_PACKED=0. Packing replaces the F32 data, so no second copy is kept.
    // With a bf16 token2mel on a CPU with AVX512-BF16: its bf16 linear weights (packed BF16
    // GEMM) and its F32 conv kernels.
    int packed_weights() const { return n_packed_; }
    // Weights that run on oneDNN: token2mel's linear weights on its matmul (onednn-linear.h:
    // onednn::backend_for()'s choice per CPU and type) and, with a bf16 vocoder, its conv
    // kernels on its convolution (onednn-conv.h); 0 without oneDNN.
    int onednn_weights() const { return n_onednn_; }

private:
    T2wModel() = default;
    void infer_dims();
    void infer_encoder_dims();
    void infer_flow_extra_dims();
    void infer_dit_dims();
    void infer_hift_dims();

    std::string dir_;
    std::string type_t2m_ = "f32", type_voc_ = "f32";
    int n_packed_ = 0, n_onednn_ = 0;
    ggml_backend_dev_t dev_t2m_ = nullptr, dev_voc_ = nullptr;
    std::unique_ptr<GgufWeights> encoder_, flow_extra_, flow_, hift_w_;
    EncoderDims enc_;
    DitDims dit_;
    HiftDims hift_;
    std::shared_ptr<const Voice> voice_;
};

}  // namespace rtf::t2w
