#pragma once
// Where and how a libllama model runs: the placement knobs of docs/method.md §5 (layers 1, 2, 4)
// shared by the LLM and the TTS engine. Every field maps to one llama_model_params /
// llama_context_params field (named below), but for the weight type: the file's own unless
// `weight_type` asks for another (converted once by llama_model_quantize, llama-runtime.h).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rtf::lm {

struct ModelPlacement {
    // ggml backend device ("CPU", "CUDA0", ... as `rtf devices` lists them) or "auto"
    // (libllama's default: every GPU, then the CPU). -> llama_model_params.devices
    std::string device = "auto";
    // Transformer layers stored on the device; -1 = all. Ignored for "CPU". -> n_gpu_layers
    int n_gpu_layers = -1;
    // Memory-map the weights (true) or read them into buffers (false). -> load_mode MMAP|NONE
    bool mmap = true;
    // Stage weights through a pinned host buffer (true) or bypass it (false). -> !no_host
    bool host_buffer = true;
    // Let the CPU backend repack weights into its faster layouts (e.g. Q4_0 x8). -> use_extra_bufts
    bool extra_bufts = true;
    // Flash attention: "auto", "on" or "off". -> flash_attn_type
    std::string flash_attn = "auto";
    // Weight type of the matrices: "file" (the file's own) or f16, bf16, q8_0, q6_k, q5_k_m,
    // q4_k_m, q4_0: the file converted once at load (libllama's quantizer, as llama-quantize;
    // the output/head tensor kept as it is) into <its folder>/.rtf-cache and that file loaded.
    // Changes the math: fewer bytes per token where decode is memory-bound.
    std::string weight_type = "file";
    // KV cache element type: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1. -> type_k, type_v
    // (a quantised V cache needs flash attention.)
    std::string kv_type = "f16";
    // Threads for single-token decode (n_threads) and for batches/prefill (n_threads_batch);
    // 0 = number of CPUs in `cpus` if set, else std::thread::hardware_concurrency().
    int n_threads = 0;
    int n_threads_batch = 0;
    // Pin the compute threads to these CPU ids (ggml threadpool cpumask, strict placement);
    // empty = the OS places them.
    std::vector<int> cpus;
    // How hard idle compute threads spin waiting for work, 0 (sleep at once) .. 100 (busy
    // poll); ggml's default is 50. Lower it when stages share cores (oversubscribed CPUs make
    // spinning threads steal time from the thread that has work). Setting it, or `cpus`,
    // makes us create the ggml threadpool ourselves.
    int poll = 50;
    // Context length in tokens (KV cache size) and logical/physical batch size.
    uint32_t n_ctx = 4096;
    uint32_t n_batch = 512;

    // Throws rtf::Error(Usage) naming `<prefix>.<field>` and the accepted values.
    void validate(const std::string &prefix) const;
    nlohmann::json to_json() const;

    // Resolved thread counts (0 replaced as documented above).
    int threads() const;
    int threads_batch() const;
};

// The accepted `weight_type` values, "file" first.
const std::vector<std::string> &weight_types();
// The accepted `kv_type` values and `flash_attn` modes.
const std::vector<std::string> &kv_types();
const std::vector<std::string> &flash_attn_modes();

}  // namespace rtf::lm
