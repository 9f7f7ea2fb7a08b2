#include "models/lm/llama-runtime.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <vector>

#include <unistd.h>

#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include "core/error.h"
#include "machine/backend-devices.h"
#include "machine/device-lock.h"

namespace rtf::lm {

namespace {
std::mutex g_log_mutex;
std::deque<std::string> g_log;  // recent WARN/ERROR lines
std::string g_partial;          // libllama logs some lines in pieces (CONT)
bool g_echo = false;

void log_callback(ggml_log_level level, const char *text, void *) {
    if (g_echo) std::fputs(text, stderr);
    if (level != GGML_LOG_LEVEL_ERROR && level != GGML_LOG_LEVEL_WARN && level != GGML_LOG_LEVEL_CONT) return;
    std::lock_guard<std::mutex> lock(g_log_mutex);
    if (level == GGML_LOG_LEVEL_CONT && g_partial.empty()) return;
    g_partial += text;
    if (!g_partial.empty() && g_partial.back() == '\n') {
        g_partial.pop_back();
        g_log.push_back(std::move(g_partial));
        g_partial.clear();
        while (g_log.size() > 20) g_log.pop_front();
    }
}

ggml_type kv_ggml_type(const std::string &t) {
    if (t == "f32") return GGML_TYPE_F32;
    if (t == "f16") return GGML_TYPE_F16;
    if (t == "bf16") return GGML_TYPE_BF16;
    if (t == "q8_0") return GGML_TYPE_Q8_0;
    if (t == "q4_0") return GGML_TYPE_Q4_0;
    if (t == "q4_1") return GGML_TYPE_Q4_1;
    if (t == "iq4_nl") return GGML_TYPE_IQ4_NL;
    if (t == "q5_0") return GGML_TYPE_Q5_0;
    if (t == "q5_1") return GGML_TYPE_Q5_1;
    throw_usage("unknown KV type '" + t + "'");
}

ThreadpoolPtr make_pool(const ModelPlacement &p, int n_threads) {
    ggml_threadpool_params tp = ggml_threadpool_params_default(n_threads);
    if (p.cpus.empty() && static_cast<uint32_t>(p.poll) == tp.poll) return nullptr;  // libllama's own pool
    for (int c : p.cpus) tp.cpumask[c] = true;
    tp.strict_cpu = !p.cpus.empty();
    tp.poll = static_cast<uint32_t>(p.poll);
    ggml_threadpool *pool = ggml_threadpool_new(&tp);
    if (!pool) throw_setup("could not create a ggml threadpool of " + std::to_string(n_threads) + " threads on the given CPU set");
    return ThreadpoolPtr(pool);
}
}  // namespace

void ThreadpoolFree::operator()(ggml_threadpool *t) const { ggml_threadpool_free(t); }

void ensure_llama_backend() {
    static std::once_flag once;
    std::call_once(once, [] {
        const char *e = std::getenv("RTF_LLAMA_LOG");
        g_echo = e && std::string(e) == "1";
        llama_log_set(log_callback, nullptr);
        backend_info();  // loads ggml's modules (Vulkan) the way `rtf devices` lists them
        llama_backend_init();
    });
}

std::string take_llama_log() {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    std::string out;
    for (auto &l : g_log) {
        if (!out.empty()) out += " | ";
        out += l;
    }
    g_log.clear();
    return out;
}

bool use_extra_bufts(bool requested, bool amx_buft_present, const char *env) {
    if (!requested || !amx_buft_present) return requested;
    return env && std::string(env) == "1";
}

bool amx_buffer_type_present() {
    ensure_llama_backend();
    ggml_backend_reg_t reg = ggml_backend_reg_by_name("CPU");
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) return false;
    auto fn = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts"));
    if (!fn) return false;
    for (ggml_backend_buffer_type_t *b = fn(ggml_backend_reg_dev_get(reg, 0)); b && *b; ++b)
        if (std::string(ggml_backend_buft_name(*b)) == "AMX") return true;
    return false;
}

namespace {
llama_ftype ftype_of(const std::string &t) {
    if (t == "f16") return LLAMA_FTYPE_MOSTLY_F16;
    if (t == "bf16") return LLAMA_FTYPE_MOSTLY_BF16;
    if (t == "q8_0") return LLAMA_FTYPE_MOSTLY_Q8_0;
    if (t == "q6_k") return LLAMA_FTYPE_MOSTLY_Q6_K;
    if (t == "q5_k_m") return LLAMA_FTYPE_MOSTLY_Q5_K_M;
    if (t == "q4_k_m") return LLAMA_FTYPE_MOSTLY_Q4_K_M;
    if (t == "q4_0") return LLAMA_FTYPE_MOSTLY_Q4_0;
    std::string all;
    for (const auto &w : weight_types()) all += (all.empty() ? "" : ", ") + w;
    throw_usage("weight type '" + t + "' is not one of: " + all);
}
}  // namespace

std::string ensure_weight_type(const std::string &path, const std::string &weight_type, const std::string &what) {
    if (weight_type == "file") return path;
    const llama_ftype ftype = ftype_of(weight_type);
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path src(path);
    const auto size = fs::file_size(src, ec);
    if (ec) throw_setup(what + " file not found: " + path);
    const auto mtime = fs::last_write_time(src, ec).time_since_epoch().count();
    const fs::path dir = src.parent_path().filename() == ".rtf-cache" ? src.parent_path() : src.parent_path() / ".rtf-cache";
    char id[17];
    std::snprintf(id, sizeof id, "%016zx", std::hash<std::string>{}(std::to_string(size) + "/" + std::to_string(mtime)));
    const fs::path out = dir / (src.stem().string() + "." + weight_type + "." + id + ".gguf");
    if (fs::is_regular_file(out, ec)) return out.string();
    fs::create_directories(dir, ec);
    if (ec) throw_setup(what + ": cannot create the cache folder " + dir.string() + ": " + ec.message());
    ensure_llama_backend();
    static std::mutex converting;  // engine sets loading at once convert once
    std::lock_guard<std::mutex> lock(converting);
    if (fs::is_regular_file(out, ec)) return out.string();
    const fs::path tmp = out.string() + "." + std::to_string(::getpid()) + ".tmp";  // another process may convert too
    llama_model_quantize_params q = llama_model_quantize_default_params();
    q.ftype = ftype;
    q.nthread = 0;                     // all CPUs
    q.quantize_output_tensor = false;  // the head (the logits the sampler draws from) stays as it is
    q.allow_requantize = true;
    std::fprintf(stderr, "rtf: converting the %s weights to %s once: %s\n", what.c_str(), weight_type.c_str(),
                 out.string().c_str());
    take_llama_log();
    const uint32_t rc = llama_model_quantize(path.c_str(), tmp.string().c_str(), &q);
    if (rc != 0) {
        fs::remove(tmp, ec);
        throw_setup(what + ": could not convert " + path + " to " + weight_type + ": " + take_llama_log());
    }
    fs::rename(tmp, out, ec);
    if (ec) throw_setup(what + ": could not write " + out.string() + ": " + ec.message());
    return out.string();
}

LlamaInstance load_llama(const std::string &path_in, const ModelPlacement &placement, bool embeddings,
                         const std::string &what, int n_seq) {
    ensure_llama_backend();
    if (!std::filesystem::is_regular_file(path_in)) throw_setup(what + " file not found: " + path_in);
    placement.validate(what);
    const std::string path = ensure_weight_type(path_in, placement.weight_type, what);

    llama_model_params mp = llama_model_default_params();
    std::vector<ggml_backend_dev_t> devs;
    if (placement.device != "auto") {
        ggml_backend_dev_t dev = ggml_backend_dev_by_name(placement.device.c_str());
        if (!dev) throw_usage(what + ".device '" + placement.device + "' does not exist in this build (see `rtf devices`)");
        if (ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_CPU) devs.push_back(dev);
        devs.push_back(nullptr);  // NULL-terminated; an empty list means CPU only
        mp.devices = devs.data();
        mp.n_gpu_layers = devs.size() > 1 ? placement.n_gpu_layers : 0;
    } else if (any_software_device()) {
        // libllama's own default would take a software device too (lavapipe, shown by the
        // opt-in): name the real ones instead
        for (const auto &name : auto_offload_devices()) devs.push_back(ggml_backend_dev_by_name(name.c_str()));
        devs.push_back(nullptr);
        mp.devices = devs.data();
        mp.n_gpu_layers = devs.size() > 1 ? placement.n_gpu_layers : 0;
    } else {
        mp.n_gpu_layers = placement.n_gpu_layers;
    }
    mp.load_mode = placement.mmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
    static const bool amx = amx_buffer_type_present();
    mp.use_extra_bufts = use_extra_bufts(placement.extra_bufts, amx, std::getenv("RTF_GGML_AMX"));
    if (placement.extra_bufts && !mp.use_extra_bufts) {
        static std::once_flag said;
        std::call_once(said, [] {
            std::fprintf(stderr, "rtf: this libllama has ggml's AMX buffer type, which crashes (SIGILL) in the pinned "
                                 "release; the LM stages load without extra buffer types (RTF_GGML_AMX=1 to use it)\n");
        });
    }
    mp.no_host = !placement.host_buffer;
    mp.progress_callback = [](float, void *) { return true; };  // no progress dots on stderr

    take_llama_log();
    LlamaInstance inst;
    inst.model.reset(llama_model_load_from_file(path.c_str(), mp));
    if (!inst.model) throw_setup(what + ": libllama could not load " + path + ": " + take_llama_log());

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = placement.n_ctx * static_cast<uint32_t>(std::max(1, n_seq));
    cp.n_batch = placement.n_batch;
    cp.n_ubatch = placement.n_batch;
    cp.n_seq_max = static_cast<uint32_t>(std::max(1, n_seq));
    // One KV buffer for all sequences: a batch of any set of them is one ubatch (with a KV
    // split per sequence, libllama puts only consecutive sequence ids into one ubatch).
    cp.kv_unified = n_seq > 1;
    cp.n_threads = placement.threads();
    cp.n_threads_batch = placement.threads_batch();
    cp.flash_attn_type = placement.flash_attn == "on"    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                         : placement.flash_attn == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                                         : LLAMA_FLASH_ATTN_TYPE_AUTO;
    cp.type_k = cp.type_v = kv_ggml_type(placement.kv_type);
    cp.embeddings = embeddings;
    cp.pooling_type = LLAMA_POOLING_TYPE_NONE;
    cp.no_perf = true;
    inst.ctx.reset(llama_init_from_model(inst.model.get(), cp));
    if (!inst.ctx) throw_setup(what + ": libllama could not create a context for " + path + " (n_ctx " +
                               std::to_string(placement.n_ctx) + "): " + take_llama_log());
    inst.pool = make_pool(placement, cp.n_threads);
    if (inst.pool) {
        inst.pool_batch = cp.n_threads_batch == cp.n_threads ? nullptr : make_pool(placement, cp.n_threads_batch);
        llama_attach_threadpool(inst.ctx.get(), inst.pool.get(), inst.pool_batch ? inst.pool_batch.get() : inst.pool.get());
    }
    for (auto *d : devs) {
        if (d) inst.devices.push_back(d);
    }
    inst.n_embd_inp = llama_model_n_embd_inp(inst.model.get());
    inst.n_embd = llama_model_n_embd(inst.model.get());
    inst.n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(inst.model.get()));
    inst.embeddings = embeddings;
    if (!mp.devices && mp.n_gpu_layers != 0)  // libllama's own choice: the devices it offloads to
        for (const auto &name : auto_offload_devices()) inst.devices.push_back(ggml_backend_dev_by_name(name.c_str()));
    return inst;
}

int locked_decode(LlamaInstance &inst, const llama_batch &batch) {
    DeviceComputeGuard serial(inst.devices);
    const int rc = llama_decode(inst.ctx.get(), batch);
    if (rc == 0 && !inst.devices.empty())
        inst.device_io_bytes += decode_io_bytes(batch, inst.n_embd_inp, inst.n_embd, inst.n_vocab, inst.embeddings);
    return rc;
}

uint64_t decode_io_bytes(const llama_batch &batch, int n_embd_inp, int n_embd, int n_vocab, bool embeddings) {
    const auto n = static_cast<uint64_t>(std::max(0, batch.n_tokens));
    uint64_t in = n * sizeof(llama_pos);
    in += batch.embd ? n * static_cast<uint64_t>(n_embd_inp) * sizeof(float) : n * sizeof(llama_token);
    uint64_t n_out = 0;
    if (!batch.logits) {
        n_out = n > 0 ? 1 : 0;
    } else {
        for (uint64_t i = 0; i < n; ++i) n_out += batch.logits[i] != 0;
    }
    const uint64_t row = static_cast<uint64_t>(n_vocab) + (embeddings ? static_cast<uint64_t>(n_embd) : 0);
    return in + n_out * row * sizeof(float);
}

}  // namespace rtf::lm
