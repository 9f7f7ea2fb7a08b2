#pragma once
// Shared libllama plumbing for the LLM and TTS engines: one-time backend init, log capture
// (libllama's messages are kept, not printed, and quoted in our errors), owning handles,
// and ModelPlacement -> llama params.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <llama.h>

#include "models/lm/placement.h"

struct ggml_threadpool;

namespace rtf::lm {

// Initialises llama/ggml backends once (thread-safe) and installs the log capture. Set
// RTF_LLAMA_LOG=1 to also see libllama's log on stderr.
void ensure_llama_backend();

// The last warning/error lines libllama logged (up to ~20), then forgets them. Used to say
// *why* a load or decode failed.
std::string take_llama_log();

// ggml's AMX extra buffer type (ggml-cpu/amx: Q4_0/Q4_1/Q8_0/Q4_K/Q5_K/Q6_K/IQ4_XS mul_mat on
// AMX tiles) crashes with SIGILL on `tilezero` in the pinned release (issue 29 §1b). Our own
// build of it compiles AMX out (scripts/fetch-llama.sh); a libllama brought with
// RTF_LLAMA_CPP_DIR may still have it. Then the LM stages load without extra buffer types
// (use_extra_bufts = false: also no CPU repacking) unless RTF_GGML_AMX=1 asks for them.
// `amx_buft_present`: the CPU backend offers a buffer type named "AMX" (amx_buffer_type_present()).
bool use_extra_bufts(bool requested, bool amx_buft_present, const char *rtf_ggml_amx_env);
bool amx_buffer_type_present();

// `path` converted to `weight_type` (ModelPlacement::weight_type; "file" returns `path`):
// <folder of path>/.rtf-cache/<stem>.<type>.<hash of size and mtime>.gguf (a file already in a
// .rtf-cache folder converts beside itself), made once with llama_model_quantize (all CPUs,
// the output tensor kept), written to a temporary name and renamed, so an interrupted run
// leaves no half file. Throws rtf::Error(Setup) naming the file when it cannot be made.
std::string ensure_weight_type(const std::string &path, const std::string &weight_type, const std::string &what);

struct LlamaModelFree { void operator()(llama_model *m) const { llama_model_free(m); } };
struct LlamaContextFree { void operator()(llama_context *c) const { llama_free(c); } };
struct LlamaSamplerFree { void operator()(llama_sampler *s) const { llama_sampler_free(s); } };
struct ThreadpoolFree { void operator()(ggml_threadpool *t) const; };
using LlamaModelPtr = std::unique_ptr<llama_model, LlamaModelFree>;
using LlamaContextPtr = std::unique_ptr<llama_context, LlamaContextFree>;
using LlamaSamplerPtr = std::unique_ptr<llama_sampler, LlamaSamplerFree>;
using ThreadpoolPtr = std::unique_ptr<ggml_threadpool, ThreadpoolFree>;

// A loaded model with one context (and its pinned threadpools when placement.cpus is set).
// Members are destroyed context first, then threadpools, then the model.
struct LlamaInstance {
    LlamaModelPtr model;
    ThreadpoolPtr pool;
    ThreadpoolPtr pool_batch;
    LlamaContextPtr ctx;
    std::vector<ggml_backend_dev_t> devices;  // what it offloads to (empty: CPU only)
    // Bytes of the decodes' inputs and outputs (decode_io_bytes), counted when `devices` is
    // not empty: what crossed the host link at least. Written by locked_decode on the one
    // thread that decodes this instance.
    uint64_t device_io_bytes = 0;
    int n_embd_inp = 0, n_embd = 0, n_vocab = 0;
    bool embeddings = false;
};

// llama_decode holding the compute locks of the instance's devices (machine/device-lock.h:
// a Vulkan device takes one compute at a time). Every decode in the engines goes here.
int locked_decode(LlamaInstance &inst, const llama_batch &batch);

// The bytes a decode of `batch` hands libllama and reads back: token ids or embedding rows
// (n_embd_inp floats each) and positions in; per output row the logits (n_vocab floats) and,
// with `embeddings`, the hidden row (n_embd floats) out (batch.logits null: the last row
// only). A lower bound on an offloaded decode's host <-> device copies: libllama's own
// inputs (the attention mask, ...) and any split of the graph between devices are not seen.
uint64_t decode_io_bytes(const llama_batch &batch, int n_embd_inp, int n_embd, int n_vocab, bool embeddings);

// Loads `path` with `placement` and creates a context (embeddings output on when
// `embeddings`). Throws rtf::Error(Setup) naming `what` and the file, quoting libllama's
// reason, when the file is missing or libllama refuses it. `n_seq` > 1: a context for that
// many sequences (decode-batcher.h) with one unified KV cache of n_seq x placement.n_ctx cells.
LlamaInstance load_llama(const std::string &path, const ModelPlacement &placement, bool embeddings,
                         const std::string &what, int n_seq = 1);

}  // namespace rtf::lm
