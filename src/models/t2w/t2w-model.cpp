#include "models/t2w/t2w-model.h"
#include "models/t2w/voice.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <functional>
#include <filesystem>
#include <initializer_list>
#include <sstream>

#include <gguf.h>

#include "core/error.h"
#include "machine/backend-devices.h"
#include "models/gguf/gguf-file.h"
#include "models/t2w/onednn-conv.h"
#include "models/t2w/onednn-linear.h"
#include "models/t2w/packed-conv.h"
#include "models/t2w/packed-gemm-bf16.h"
#include "models/t2w/packed-gemm.h"

namespace rtf::t2w {

namespace fs = std::filesystem;

GgufWeights::~GgufWeights() {
    for (const ggml_tensor *t : packed) {
        gemm::unregister_packed(t);
        gemm::unregister_conv_k_major(t);
        conv::unregister_packed(t);
    }
    for (const ggml_tensor *t : onednn_weights) onednn::unregister_weight(t);
    for (const ggml_tensor *t : onednn_convs) onednn::unregister_conv(t);
    if (mm_buffer) ggml_backend_buffer_free(mm_buffer);
    if (mm_ctx) ggml_free(mm_ctx);
    if (buffer) ggml_backend_buffer_free(buffer);
    if (ctx) ggml_free(ctx);
}

ggml_tensor *GgufWeights::mm(const std::string &name) const {
    auto it = mm_tensors.find(name);
    return it != mm_tensors.end() ? it->second : get(name);
}

ggml_type parse_compute_type(const std::string &name, const std::string &what) {
    if (name == "f32") return GGML_TYPE_F32;
    if (name == "f16") return GGML_TYPE_F16;
    if (name == "bf16") return GGML_TYPE_BF16;
    if (name == "q8_0") return GGML_TYPE_Q8_0;
    throw_usage(what + ": '" + name + "' is not a compute type; use f32, f16, bf16 or q8_0");
}

ggml_tensor *GgufWeights::get(const std::string &name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw_usage(path + ": missing tensor '" + name + "' (not a token2wav GGUF of the expected layout)");
    return it->second;
}

namespace {

std::string shape_str(const ggml_tensor *t) {
    std::ostringstream s;
    s << "[";
    for (int i = 0; i < ggml_n_dims(t); ++i) s << (i ? "," : "") << t->ne[i];
    s << "]";
    return s.str();
}

// Checks type F32 and the shape (-1 = any); returns the tensor.
ggml_tensor *expect(const GgufWeights &w, const std::string &name, std::initializer_list<int64_t> ne) {
    ggml_tensor *t = w.get(name);
    if (t->type != GGML_TYPE_F32) {
        throw_usage(w.path + ": tensor '" + name + "' has type " + ggml_type_name(t->type) + ", expected f32");
    }
    int i = 0;
    bool ok = true;
    std::ostringstream want;
    want << "[";
    for (int64_t n : ne) {
        want << (i ? "," : "") << (n < 0 ? std::string("*") : std::to_string(n));
        if (n >= 0 && t->ne[i] != n) ok = false;
        ++i;
    }
    want << "]";
    for (; i < 4; ++i) {
        if (t->ne[i] != 1) ok = false;
    }
    if (!ok) throw_usage(w.path + ": tensor '" + name + "' has shape " + shape_str(t) + ", expected " + want.str());
    return t;
}

int count_blocks(const GgufWeights &w, const std::string &prefix, const std::string &suffix) {
    int n = 0;
    while (w.has(prefix + std::to_string(n) + suffix)) ++n;
    return n;
}

std::unique_ptr<GgufWeights> load_gguf(const std::string &path, ggml_backend_dev_t dev) {
    if (!fs::exists(path)) throw_usage("token2wav: missing file " + path);
    // The project's one GGUF parser reads the header (bad magic / corrupt header -> Usage
    // naming the file); a short file is refused before anything is allocated, naming the
    // first tensor it cuts.
    auto hdr = std::make_shared<gguf::GgufFile>(path);
    if (const gguf::TensorInfo *cut = hdr->first_cut_tensor()) {
        throw_usage(path + ": truncated: tensor '" + cut->name + "' needs bytes up to " +
                    std::to_string(hdr->data_offset() + cut->offset + cut->nbytes) + " but the file has " +
                    std::to_string(hdr->file_size()));
    }
    auto w = std::make_unique<GgufWeights>();
    w->path = path;
    w->header = hdr;
    const auto &infos = hdr->tensors();
    ggml_init_params cp{(infos.size() + 1) * ggml_tensor_overhead(), nullptr, true};
    w->ctx = ggml_init(cp);
    for (const auto &ti : infos) {
        ggml_tensor *t = ggml_new_tensor_4d(w->ctx, ti.type, ti.ne[0], ti.ne[1], ti.ne[2], ti.ne[3]);
        ggml_set_name(t, ti.name.c_str());
        w->tensors[ti.name] = t;
    }
    ggml_backend_buffer_type_t buft = ggml_backend_dev_buffer_type(dev);
    w->buffer = ggml_backend_alloc_ctx_tensors_from_buft(w->ctx, buft);
    if (!w->buffer && !infos.empty()) throw_setup(path + ": cannot allocate the weights on device " + ggml_backend_dev_name(dev));
    if (w->buffer) ggml_backend_buffer_set_usage(w->buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    std::unique_ptr<FILE, int (*)(FILE *)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) throw_usage(path + ": cannot open");
    const bool host = w->buffer && ggml_backend_buffer_is_host(w->buffer);
    std::vector<char> staging;
    for (const auto &ti : infos) {
        ggml_tensor *t = w->tensors[ti.name];
        const size_t nbytes = ggml_nbytes(t);
        if (std::fseek(f.get(), static_cast<long>(hdr->data_offset() + ti.offset), SEEK_SET) != 0)
            throw_usage(path + ": cannot seek to tensor '" + ti.name + "'");
        char *dst = host ? static_cast<char *>(t->data) : (staging.resize(nbytes), staging.data());
        // The header check above makes a short read a file that shrank while loading.
        if (std::fread(dst, 1, nbytes, f.get()) != nbytes) throw_usage(path + ": truncated data of tensor '" + ti.name + "'");
        if (!host) ggml_backend_tensor_set(t, dst, 0, nbytes);
    }
    return w;
}

// Makes the compute-type copies of `w`'s matrix weights: every F32 tensor `pick` selects
// whose rows suit the type's block size, converted row by row with ggml's own converters
// (ggml_quantize_chunk: the same rounding llama.cpp's quantizer uses), in one buffer on
// `dev`. The F32 originals stay (host code and non-matmul ops read them).
void make_mm_copies(GgufWeights &w, ggml_type type, ggml_backend_dev_t dev,
                    const std::function<bool(const std::string &, const ggml_tensor *)> &pick) {
    if (type == GGML_TYPE_F32) return;
    std::vector<std::pair<std::string, ggml_tensor *>> src;
    for (const auto &[name, t] : w.tensors)
        if (t->type == GGML_TYPE_F32 && t->ne[1] > 1 && t->ne[0] % ggml_blck_size(type) == 0 && pick(name, t))
            src.emplace_back(name, t);
    if (src.empty()) return;
    ggml_init_params cp{(src.size() + 1) * ggml_tensor_overhead(), nullptr, true};
    w.mm_ctx = ggml_init(cp);
    w.mm_type = type;
    for (const auto &[name, t] : src) {
        ggml_tensor *c = ggml_new_tensor(w.mm_ctx, type, ggml_n_dims(t), t->ne);
        ggml_set_name(c, (name + "." + ggml_type_name(type)).c_str());
        w.mm_tensors[name] = c;
    }
    w.mm_buffer = ggml_backend_alloc_ctx_tensors_from_buft(w.mm_ctx, ggml_backend_dev_buffer_type(dev));
    if (!w.mm_buffer) throw_setup(w.path + ": cannot allocate the " + ggml_type_name(type) + " weights on " + ggml_backend_dev_name(dev));
    ggml_backend_buffer_set_usage(w.mm_buffer, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    std::vector<float> f32;
    std::vector<uint8_t> out;
    for (const auto &[name, t] : src) {
        f32.resize(static_cast<size_t>(ggml_nelements(t)));
        ggml_backend_tensor_get(t, f32.data(), 0, f32.size() * sizeof(float));
        ggml_tensor *c = w.mm_tensors[name];
        out.resize(ggml_nbytes(c));
        const int64_t n_per_row = t->ne[0], nrows = ggml_nelements(t) / n_per_row;
        ggml_quantize_chunk(type, f32.data(), out.data(), 0, nrows, n_per_row, nullptr);
        ggml_backend_tensor_set(c, out.data(), 0, out.size());
    }
}

// Packs token2mel's matrix weights in place for the packed F32 GEMM: the 2-D linear
// weights ([K, N]) and the 3-D conv kernels ([k, Cin, Cout] = a [k·Cin, Cout] matrix) that
// `pick` selects, when N is a multiple of the 16-row panel (then the packed matrix has
// exactly the original's size; others stay for ggml's mul_mat). In place, so the F32 copy
// is gone: nothing but ops::linear / ops::conv1d_ct reads these tensors (host code reads
// only their shapes). `conv_k_major`: the conv kernels are token2mel's (ops::conv1d_ct over a
// channel-fastest input), packed k-major for gemm::conv_k_major (no im2col); else (the
// vocoder's, conv1d_tc) as the im2col matrix. Returns the count packed.
int pack_weights(GgufWeights &w, const std::function<bool(const std::string &, const ggml_tensor *)> &pick,
                 bool conv_k_major) {
    int n = 0;
    if (!w.buffer || !ggml_backend_buffer_is_host(w.buffer)) return 0;
    for (const auto &[name, t] : w.tensors) {
        if (t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t) || !pick(name, t)) continue;
        const int64_t N = t->ne[ggml_n_dims(t) - 1], K = ggml_nelements(t) / N;
        if (N % gemm::kPanel != 0 || K < 1) continue;
        if (conv_k_major && ggml_n_dims(t) == 3) {
            gemm::pack_conv_k_major_in_place(static_cast<float *>(t->data), t->ne[0], t->ne[1], t->ne[2]);
            gemm::register_conv_k_major(t);
            w.packed.push_back(t);
            ++n;
            continue;
        }
        gemm::pack_in_place(static_cast<float *>(t->data), N, K);
        gemm::register_packed(t);
        w.packed.push_back(t);
        ++n;
    }
    return n;
}

// The same for the BF16 compute copies (make_mm_copies) of `w`: each whose N is a multiple
// of the panel and K even is packed in place for the packed BF16 GEMM and registered (a
// 3-D conv kernel k-major, for conv1d_ct).
int pack_bf16_weights(GgufWeights &w, const std::function<bool(const ggml_tensor *)> &pick) {
    int n = 0;
    if (!w.mm_buffer || !ggml_backend_buffer_is_host(w.mm_buffer)) return 0;
    for (const auto &[name, t] : w.mm_tensors) {
        if (t->type != GGML_TYPE_BF16 || !ggml_is_contiguous(t) || !pick(t)) continue;
        if (ggml_n_dims(t) == 3) {  // a conv kernel (conv1d_ct): k-major, no im2col
            if (!gemm::pack_conv_k_major_bf16_in_place(static_cast<uint16_t *>(t->data), t->ne[0], t->ne[1], t->ne[2])) continue;
            gemm::register_conv_k_major(t);
            w.packed.push_back(t);
            ++n;
            continue;
        }
        if (ggml_n_dims(t) != 2 || !gemm::pack_bf16_in_place(static_cast<uint16_t *>(t->data), t->ne[1], t->ne[0])) continue;
        gemm::register_packed(t);
        w.packed.push_back(t);
        ++n;
    }
    return n;
}

// The same for the direct convolution (packed-conv.h): 3-D conv kernels [k, Cin, Cout] that
// `pick` selects, when Cout is a multiple of its 8-row block.
int pack_conv_weights(GgufWeights &w, const std::function<bool(const std::string &, const ggml_tensor *)> &pick) {
    int n = 0;
    if (!w.buffer || !ggml_backend_buffer_is_host(w.buffer)) return 0;
    for (const auto &[name, t] : w.tensors) {
        if (t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t) || ggml_n_dims(t) != 3 || !pick(name, t)) continue;
        if (t->ne[2] % conv::kRows != 0) continue;
        conv::pack_in_place(static_cast<float *>(t->data), t->ne[2], t->ne[1], t->ne[0]);
        conv::register_packed(t);
        w.packed.push_back(t);
        ++n;
    }
    return n;
}

// Hands the 2-D linear weights of `w` in compute type `type` (the file's F32 tensors for
// f32, the bf16 copies in mm_tensors for bf16) to oneDNN where onednn::backend_for() picks
// it for their shape: reordered into oneDNN's layout (its own copy). A weight oneDNN cannot
// take stays for the other kernels. Returns the count registered.
int register_onednn_weights(GgufWeights &w, ggml_type type,
                            const std::function<bool(const std::string &, const ggml_tensor *)> &pick) {
    int n = 0;
    auto &set = type == GGML_TYPE_F32 ? w.tensors : w.mm_tensors;
    ggml_backend_buffer_t buf = type == GGML_TYPE_F32 ? w.buffer : w.mm_buffer;
    if (!buf || !ggml_backend_buffer_is_host(buf)) return 0;
    for (const auto &[name, t] : set) {
        if (t->type != type || !ggml_is_contiguous(t) || ggml_n_dims(t) != 2 || !pick(name, t)) continue;
        const int64_t N = t->ne[1], K = t->ne[0];
        if (onednn::backend_for(type, N, K) != onednn::Backend::Onednn) continue;
        try {
            onednn::register_weight(t, t->data, type, N, K, type);
        } catch (const Error &) {
            continue;
        }
        w.onednn_weights.push_back(t);
        ++n;
    }
    return n;
}

// Whether the f32 vocoder's convolutions go to oneDNN's f32 convolution: by default where
// onednn::conv_pays() says it wins (no CPU measured so far: docs/measurements.md §24);
// RTF_T2W_VOC_ONEDNN_F32=1 / 0 forces it on / off (A/B).
enum class VocF32 { by_cpu, on, off };
VocF32 voc_f32_onednn() {
    const char *e = std::getenv("RTF_T2W_VOC_ONEDNN_F32");
    if (e && std::string(e) == "1") return VocF32::on;
    if (e && std::string(e) == "0") return VocF32::off;
    return VocF32::by_cpu;
}

// Hands the vocoder's conv kernels `pick` selects (3-D F32 [K, Cin, Cout]) to oneDNN's
// convolution of `type` (onednn-conv.h) where onednn::conv_pays() says it wins on this CPU. A
// kernel left out or refused stays f32 on the direct convolution. Returns the count registered.
int register_onednn_convs(GgufWeights &w, const std::function<bool(const std::string &, const ggml_tensor *)> &pick,
                          onednn::ConvType type, bool forced = false) {
    int n = 0;
    if (!w.buffer || !ggml_backend_buffer_is_host(w.buffer)) return 0;
    for (const auto &[name, t] : w.tensors) {
        if (t->type != GGML_TYPE_F32 || !ggml_is_contiguous(t) || ggml_n_dims(t) != 3 || !pick(name, t)) continue;
        if (!forced && !onednn::conv_pays(t->ne[1], type)) continue;
        try {
            onednn::register_conv(t, static_cast<const float *>(t->data), t->ne[2], t->ne[1], t->ne[0], type);
        } catch (const Error &) {
            continue;
        }
        w.onednn_convs.push_back(t);
        ++n;
    }
    return n;
}

std::string resolve_dir(const std::string &dir) {
    fs::path p(dir);
    if (fs::exists(p / "encoder.gguf")) return p.string();
    if (fs::exists(p / "token2wav-gguf" / "encoder.gguf")) return (p / "token2wav-gguf").string();
    throw_usage("token2wav: no encoder.gguf in " + dir + " or " + (p / "token2wav-gguf").string() +
                " (pass a kit dir containing token2wav-gguf/, or that dir itself)");
}

ggml_backend_dev_t find_dev(const std::string &name) {
    // throws Usage with the list of names when unknown (and for a software device without the opt-in)
    if (find_backend_device(name).software) {
        static std::once_flag said;
        std::call_once(said, [&] {
            std::fprintf(stderr, "rtf: note: Token2Wav on %s, a software Vulkan device (runs on the CPU, slower than the "
                                 "CPU backend): each graph's first compute goes node by node (docs/vulkan.md)\n",
                         name.c_str());
        });
    }
    ggml_backend_dev_t d = ggml_backend_dev_by_name(name.c_str());
    if (!d) throw_setup("token2wav: ggml device '" + name + "' not available");
    return d;
}

}  // namespace

T2wModel::~T2wModel() = default;

size_t T2wModel::weight_bytes() const {
    size_t s = 0;
    for (const auto *w : {encoder_.get(), flow_extra_.get(), flow_.get(), hift_w_.get()}) {
        if (w && w->buffer) s += ggml_backend_buffer_get_size(w->buffer);
    }
    return s + (voice_ ? voice_->bytes() : 0);
}

size_t Voice::bytes() const { return weights && weights->buffer ? ggml_backend_buffer_get_size(weights->buffer) : 0; }

const PromptCacheInfo &T2wModel::prompt() const {
    static const PromptCacheInfo none;
    return voice_ ? voice_->info : none;
}

std::string T2wModel::prompt_file() const { return voice_ ? voice_->path : std::string(); }

std::unique_ptr<T2wModel> T2wModel::load(const std::string &dir, const T2wConfig &cfg, const T2wLoadOptions &opt) {
    cfg.validate();  // the types and devices, in the engine's own terms (t2w-config.h)
    const std::string &device_t2m = cfg.device_t2m, &device_voc = cfg.device_voc;
    const std::string &type_t2m = cfg.type_t2m, &type_voc = cfg.type_voc;
    const bool with_prompt = opt.with_prompt;
    const std::string &prompt_path = opt.prompt_path;
    const ggml_type tt = parse_compute_type(type_t2m, "t2w: type_t2m");
    const ggml_type tv = parse_compute_type(type_voc, "t2w: type_voc");
    std::unique_ptr<T2wModel> m(new T2wModel());
    m->dir_ = resolve_dir(dir);
    m->dev_t2m_ = find_dev(device_t2m);
    m->dev_voc_ = find_dev(device_voc);
    const std::string d = m->dir_ + "/";
    m->encoder_ = load_gguf(d + "encoder.gguf", m->dev_t2m_);
    m->flow_extra_ = load_gguf(d + "flow_extra.gguf", m->dev_t2m_);
    m->flow_ = load_gguf(d + "flow_matching.gguf", m->dev_t2m_);
    m->hift_w_ = load_gguf(d + "hifigan2.gguf", m->dev_voc_);
    m->infer_dims();
    if (with_prompt) m->voice_ = m->load_voice(prompt_path.empty() ? d + "prompt_cache.gguf" : prompt_path, "default");
    // Matrix weights in the compute type: token2mel's linear layers (2-D "*.weight"; the
    // token embedding is a row lookup and stays F32); the vocoder's convolution kernels
    // (3-D, the im2col operand) and its f0-predictor classifier.
    m->type_t2m_ = type_t2m;
    m->type_voc_ = type_voc;
    auto linear_weight = [](const std::string &n, const ggml_tensor *t) {
        return ggml_n_dims(t) == 2 && n.size() > 7 && n.compare(n.size() - 7, 7, ".weight") == 0 &&
               n != "input_embedding.weight";
    };
    const bool cpu_t2m = ggml_backend_dev_type(m->dev_t2m_) == GGML_BACKEND_DEVICE_TYPE_CPU;
    auto conv_kernel = [](const std::string &n, const ggml_tensor *t) {
        return ggml_n_dims(t) == 3 && n.size() > 7 && n.compare(n.size() - 7, 7, ".weight") == 0;
    };
    // A bf16 token2mel where our packed BF16 GEMM is the linear layers' kernel (AVX512-BF16
    // without AMX: onednn::backend_for) also takes the DiT's conv kernels in bf16, without
    // im2col (22 % of its time stayed F32 before, docs/measurements.md §21; the encoder's few
    // convs stay F32). On AMX the linear layers go to oneDNN and VDPBF16PS is the slow
    // instruction, so the convs stay F32 there.
    const int64_t dit_h = m->dit_dims().hidden;  // the DiT's linear shape, asked as oneDNN's choice is made for it
    const bool bf16_convs = tt == GGML_TYPE_BF16 && cpu_t2m && gemm::bf16_packed_enabled() &&
                            onednn::backend_for(GGML_TYPE_BF16, dit_h, dit_h) == onednn::Backend::Packed;
    auto dit_matrix = [&](const std::string &n, const ggml_tensor *t) {
        return linear_weight(n, t) || (bf16_convs && conv_kernel(n, t));
    };
    for (auto *w : {m->encoder_.get(), m->flow_extra_.get()}) make_mm_copies(*w, tt, m->dev_t2m_, linear_weight);
    make_mm_copies(*m->flow_, tt, m->dev_t2m_, dit_matrix);
    // F32 token2mel on the CPU with AVX-512F: its linear weights and conv kernels packed in
    // place for the packed GEMM (packed-gemm.h; RTF_T2W_PACKED=0 keeps ggml's mul_mat).
    // The linear weights onednn::backend_for() gives to oneDNN are registered with it first
    // (from the plain data) and then left out of the packing.
    if ((tt == GGML_TYPE_F32 || tt == GGML_TYPE_BF16) && cpu_t2m && onednn::available()) {
        for (auto *w : {m->encoder_.get(), m->flow_extra_.get(), m->flow_.get()})
            m->n_onednn_ += register_onednn_weights(*w, tt, linear_weight);
    }
    auto not_onednn = [](const ggml_tensor *t) { return !onednn::is_registered(t) && !onednn::is_conv_registered(t); };
    if (tt == GGML_TYPE_F32 && cpu_t2m && gemm::packed_enabled()) {
        auto matrix = [&](const std::string &n, const ggml_tensor *t) {
            const bool is_weight = n.size() > 7 && n.compare(n.size() - 7, 7, ".weight") == 0;
            return (linear_weight(n, t) || (is_weight && ggml_n_dims(t) == 3)) && not_onednn(t);
        };
        for (auto *w : {m->encoder_.get(), m->flow_extra_.get(), m->flow_.get()}) m->n_packed_ += pack_weights(*w, matrix, true);
    }
    // BF16 token2mel on a CPU with AVX512-BF16: the bf16 copies of the linear weights (those
    // oneDNN did not take) and, with bf16_convs, of the DiT's conv kernels packed in place for
    // the packed BF16 GEMM (packed-gemm-bf16.h); the F32 conv kernels left for the F32 one.
    if (tt == GGML_TYPE_BF16 && cpu_t2m && gemm::bf16_packed_enabled()) {
        for (auto *w : {m->encoder_.get(), m->flow_extra_.get(), m->flow_.get()}) {
            m->n_packed_ += pack_bf16_weights(*w, not_onednn);
            if (gemm::packed_enabled() && !(bf16_convs && w == m->flow_.get())) m->n_packed_ += pack_weights(*w, conv_kernel, true);
        }
    }
    auto voc_conv = [](const std::string &n, const ggml_tensor *t) {
        return ggml_n_dims(t) == 3 && n.size() > 7 && n.compare(n.size() - 7, 7, ".weight") == 0 && n.rfind("ups.", 0) != 0;
    };
    // bf16: oneDNN's convolution (onednn-conv.h) on the CPU; a kernel it refuses stays f32
    // on the direct convolution below. No ggml bf16 copies: nothing else reads them.
    const bool cpu_voc = ggml_backend_dev_type(m->dev_voc_) == GGML_BACKEND_DEVICE_TYPE_CPU;
    if (tv == GGML_TYPE_BF16) {
        if (!cpu_voc || !onednn::available())
            throw_setting("t2w-type-voc",
                          std::string("bf16 needs the CPU device and oneDNN (") +
                        (!cpu_voc ? std::string("the vocoder is on ") + ggml_backend_dev_name(m->dev_voc_) +
                                        ": place it on CPU (t2w-device-voc)"
                         : !onednn::compiled() ? std::string("this build has no oneDNN: install libdnnl-dev and rebuild")
                                               : std::string("switched off by RTF_T2W_ONEDNN=0 or RTF_T2W_PACKED=0")) +
                        "); or use f32 or f16");
        m->n_onednn_ += register_onednn_convs(*m->hift_w_, voc_conv, onednn::ConvType::bf16);
    } else if (tv == GGML_TYPE_F32 && cpu_voc && onednn::available() && voc_f32_onednn() != VocF32::off) {
        // (a kernel oneDNN refuses stays on the direct convolution or im2col below)
        m->n_onednn_ += register_onednn_convs(*m->hift_w_, voc_conv, onednn::ConvType::f32, voc_f32_onednn() == VocF32::on);
    } else {
        make_mm_copies(*m->hift_w_, tv, m->dev_voc_, voc_conv);
    }
    // The F32 vocoder's convolution kernels: for the direct convolution (packed-conv.h), or
    // with RTF_T2W_CONV=0 for im2col + the packed GEMM (ops::conv1d_tc). The transposed
    // convolutions ("ups.") are packed by the Vocoder itself.
    auto voc_f32_conv = [&](const std::string &n, const ggml_tensor *t) { return voc_conv(n, t) && not_onednn(t); };
    if ((tv == GGML_TYPE_F32 || tv == GGML_TYPE_BF16) && cpu_voc && gemm::packed_enabled())
        m->n_packed_ +=
            conv::enabled() ? pack_conv_weights(*m->hift_w_, voc_f32_conv) : pack_weights(*m->hift_w_, voc_f32_conv, false);
    return m;
}

void T2wModel::infer_dims() {
    infer_encoder_dims();
    infer_flow_extra_dims();
    infer_dit_dims();
    infer_hift_dims();
}

// The token encoder: d_model from the embedding, look-ahead and up-sampling kernels from the
// convolutions, conformer blocks counted, every block's tensors checked against them.
void T2wModel::infer_encoder_dims() {
    const GgufWeights &e = *encoder_;
    ggml_tensor *emb = e.get("embed.out.0.weight");
    const int d = static_cast<int>(emb->ne[1]);
    enc_.d_model = d;
    expect(e, "embed.out.0.weight", {d, d});
    expect(e, "embed.out.0.bias", {d});
    expect(e, "embed.out.1.weight", {d});
    expect(e, "embed.out.1.bias", {d});
    ggml_tensor *c1 = e.get("pre_lookahead_layer.conv1.weight");
    enc_.lookahead = static_cast<int>(c1->ne[0]) - 1;
    expect(e, "pre_lookahead_layer.conv1.weight", {-1, d, d});
    expect(e, "pre_lookahead_layer.conv1.bias", {d});
    enc_.conv2_k = static_cast<int>(e.get("pre_lookahead_layer.conv2.weight")->ne[0]);
    expect(e, "pre_lookahead_layer.conv2.weight", {-1, d, d});
    expect(e, "pre_lookahead_layer.conv2.bias", {d});
    enc_.up_k = static_cast<int>(e.get("up_layer.conv.weight")->ne[0]);
    expect(e, "up_layer.conv.weight", {-1, d, d});
    expect(e, "up_layer.conv.bias", {d});
    expect(e, "up_embed.out.0.weight", {d, d});
    expect(e, "up_embed.out.0.bias", {d});
    expect(e, "up_embed.out.1.weight", {d});
    expect(e, "up_embed.out.1.bias", {d});
    expect(e, "after_norm.weight", {d});
    expect(e, "after_norm.bias", {d});
    if (enc_.lookahead < 1 || enc_.conv2_k < 2 || enc_.up_k < 2 * enc_.up_rate) {
        throw_usage(e.path + ": unexpected conv kernel sizes (pre-look-ahead conv1 K>=2, conv2 K>=2, up K>=4)");
    }
    enc_.n_token_layers = count_blocks(e, "encoders.", ".norm_mha.weight");
    enc_.n_mel_layers = count_blocks(e, "up_encoders.", ".norm_mha.weight");
    if (enc_.n_token_layers < 1 || enc_.n_mel_layers < 1) {
        throw_usage(e.path + ": needs at least one encoders.N and one up_encoders.N conformer block");
    }
    ggml_tensor *pbu = e.get("encoders.0.self_attn.pos_bias_u");
    enc_.head_dim = static_cast<int>(pbu->ne[0]);
    enc_.n_heads = static_cast<int>(pbu->ne[1]);
    if (enc_.head_dim * enc_.n_heads != d) throw_usage(e.path + ": pos_bias_u shape does not split d_model into heads");
    enc_.d_ffn = static_cast<int>(e.get("encoders.0.feed_forward.w_1.weight")->ne[1]);
    auto check_layer = [&](const std::string &p) {
        for (const char *n : {"norm_mha", "norm_ff"}) {
            expect(e, p + n + ".weight", {d});
            expect(e, p + n + ".bias", {d});
        }
        for (const char *n : {"linear_q", "linear_k", "linear_v", "linear_out"}) {
            expect(e, p + "self_attn." + n + ".weight", {d, d});
            expect(e, p + "self_attn." + n + ".bias", {d});
        }
        expect(e, p + "self_attn.linear_pos.weight", {d, d});
        expect(e, p + "self_attn.pos_bias_u", {enc_.head_dim, enc_.n_heads});
        expect(e, p + "self_attn.pos_bias_v", {enc_.head_dim, enc_.n_heads});
        expect(e, p + "feed_forward.w_1.weight", {d, enc_.d_ffn});
        expect(e, p + "feed_forward.w_1.bias", {enc_.d_ffn});
        expect(e, p + "feed_forward.w_2.weight", {enc_.d_ffn, d});
        expect(e, p + "feed_forward.w_2.bias", {d});
    };
    for (int i = 0; i < enc_.n_token_layers; ++i) check_layer("encoders." + std::to_string(i) + ".");
    for (int i = 0; i < enc_.n_mel_layers; ++i) check_layer("up_encoders." + std::to_string(i) + ".");
}

// The flow's extra tensors: the code vocabulary, the speaker affine, the encoder projection.
void T2wModel::infer_flow_extra_dims() {
    const int d = enc_.d_model;
    const GgufWeights &x = *flow_extra_;
    ggml_tensor *ie = expect(x, "input_embedding.weight", {d, -1});
    enc_.vocab = static_cast<int>(ie->ne[1]);
    expect(x, "spk_embed_affine_layer.weight", {kSpkDim, kMelBins});
    expect(x, "spk_embed_affine_layer.bias", {kMelBins});
    expect(x, "encoder_proj.weight", {d, kMelBins});
    expect(x, "encoder_proj.bias", {kMelBins});
}

// The DiT estimator: hidden size, heads, depth and MLP width from its first block, every block checked.
void T2wModel::infer_dit_dims() {
    const GgufWeights &f = *flow_;
    ggml_tensor *ip = f.get("estimator.in_proj.weight");
    dit_.in_channels = static_cast<int>(ip->ne[0]);
    dit_.hidden = static_cast<int>(ip->ne[1]);
    const int h = dit_.hidden;
    if (dit_.in_channels != 4 * kMelBins) {
        throw_usage(f.path + ": estimator.in_proj.weight has " + std::to_string(dit_.in_channels) +
                    " inputs, expected 320 (x, mu, speaker, cond: 4 x 80)");
    }
    expect(f, "estimator.in_proj.bias", {h});
    dit_.freq_dim = static_cast<int>(f.get("estimator.t_embedder.mlp.0.weight")->ne[0]);
    expect(f, "estimator.t_embedder.mlp.0.weight", {dit_.freq_dim, h});
    expect(f, "estimator.t_embedder.mlp.0.bias", {h});
    expect(f, "estimator.t_embedder.mlp.2.weight", {h, h});
    expect(f, "estimator.t_embedder.mlp.2.bias", {h});
    dit_.depth = count_blocks(f, "estimator.blocks.", ".attn.to_q.weight");
    if (dit_.depth < 1) throw_usage(f.path + ": no estimator.blocks.N found");
    dit_.head_dim = static_cast<int>(f.get("estimator.blocks.0.attn.q_norm.weight")->ne[0]);
    if (dit_.head_dim < 1 || h % dit_.head_dim != 0) throw_usage(f.path + ": q_norm size does not divide the hidden size");
    dit_.n_heads = h / dit_.head_dim;
    dit_.d_mlp = static_cast<int>(f.get("estimator.blocks.0.mlp.fc1.weight")->ne[1]);
    for (int b = 0; b < dit_.depth; ++b) {
        const std::string p = "estimator.blocks." + std::to_string(b) + ".";
        expect(f, p + "adaLN_modulation.1.weight", {h, 9 * h});
        expect(f, p + "adaLN_modulation.1.bias", {9 * h});
        for (const char *n : {"to_q", "to_k", "to_v", "proj"}) {
            expect(f, p + "attn." + n + ".weight", {h, h});
            expect(f, p + "attn." + n + ".bias", {h});
        }
        for (const char *n : {"q_norm", "k_norm"}) {
            expect(f, p + "attn." + n + ".weight", {dit_.head_dim});
            expect(f, p + "attn." + n + ".bias", {dit_.head_dim});
        }
        expect(f, p + "conv.block.1.weight", {3, h, h});
        expect(f, p + "conv.block.1.bias", {h});
        expect(f, p + "conv.block.3.weight", {h});
        expect(f, p + "conv.block.3.bias", {h});
        expect(f, p + "conv.block.6.weight", {3, h, h});
        expect(f, p + "conv.block.6.bias", {h});
        expect(f, p + "mlp.fc1.weight", {h, dit_.d_mlp});
        expect(f, p + "mlp.fc1.bias", {dit_.d_mlp});
        expect(f, p + "mlp.fc2.weight", {dit_.d_mlp, h});
        expect(f, p + "mlp.fc2.bias", {h});
    }
    expect(f, "estimator.final_layer.adaLN_modulation.1.weight", {h, 2 * h});
    expect(f, "estimator.final_layer.adaLN_modulation.1.bias", {2 * h});
    expect(f, "estimator.final_layer.linear.weight", {h, kMelBins});
    expect(f, "estimator.final_layer.linear.bias", {kMelBins});
}

// The HiFT vocoder: three upsampling stages (kernels, channels), the source and residual
// blocks, conv_pre/conv_post, the F0 predictor and the harmonic source.
void T2wModel::infer_hift_dims() {
    const GgufWeights &v = *hift_w_;
    hift_.n_stages = count_blocks(v, "ups.", ".weight");
    if (hift_.n_stages != 3) throw_usage(v.path + ": expected 3 upsampling stages ups.0..2, found " + std::to_string(hift_.n_stages));
    hift_.up_rates = {8, 5, 3};  // interface constant: 8·5·3·(hop 4) = 480 samples per frame
    ggml_tensor *pre = v.get("conv_pre.weight");
    hift_.conv_pre_k = static_cast<int>(pre->ne[0]);
    const int c0 = static_cast<int>(pre->ne[2]);
    expect(v, "conv_pre.weight", {-1, kMelBins, c0});
    expect(v, "conv_pre.bias", {c0});
    int cin = c0;
    for (int s = 0; s < 3; ++s) {
        const std::string p = "ups." + std::to_string(s);
        ggml_tensor *u = v.get(p + ".weight");
        const int k = static_cast<int>(u->ne[0]);
        const int co = static_cast<int>(u->ne[1]);
        expect(v, p + ".weight", {k, co, cin});
        expect(v, p + ".bias", {co});
        if ((k - hift_.up_rates[s]) < 0 || (k - hift_.up_rates[s]) % 2 != 0) {
            throw_usage(v.path + ": " + p + ".weight kernel " + std::to_string(k) + " does not fit stride " +
                        std::to_string(hift_.up_rates[s]));
        }
        hift_.up_kernels.push_back(k);
        hift_.channels.push_back(co);
        cin = co;
    }
    for (int s = 0; s < 3; ++s) {
        const int c = hift_.channels[s];
        // source_downs: stride = product of the later upsample rates, kernel 2·stride (1 for the last).
        int stride = 1;
        for (int j = s + 1; j < 3; ++j) stride *= hift_.up_rates[j];
        const int k = s < 2 ? 2 * stride : 1;
        expect(v, "source_downs." + std::to_string(s) + ".weight", {k, 18, c});
        expect(v, "source_downs." + std::to_string(s) + ".bias", {c});
    }
    for (int r = 0; r < 3; ++r) {
        hift_.rb_kernels.push_back(static_cast<int>(v.get("resblocks." + std::to_string(r) + ".convs1.0.weight")->ne[0]));
    }
    for (int s = 0; s < 3; ++s) {
        hift_.src_rb_kernels.push_back(
            static_cast<int>(v.get("source_resblocks." + std::to_string(s) + ".convs1.0.weight")->ne[0]));
    }
    auto check_rb = [&](const std::string &p, int k, int c) {
        for (int m = 0; m < 3; ++m) {
            const std::string q = p + ".";
            for (const char *cv : {"convs1.", "convs2."}) {
                expect(v, q + cv + std::to_string(m) + ".weight", {k, c, c});
                expect(v, q + cv + std::to_string(m) + ".bias", {c});
            }
            expect(v, q + "activations1." + std::to_string(m) + ".alpha", {c});
            expect(v, q + "activations2." + std::to_string(m) + ".alpha", {c});
        }
    };
    for (int s = 0; s < 3; ++s) {
        for (int j = 0; j < 3; ++j) check_rb("resblocks." + std::to_string(3 * s + j), hift_.rb_kernels[j], hift_.channels[s]);
        check_rb("source_resblocks." + std::to_string(s), hift_.src_rb_kernels[s], hift_.channels[s]);
    }
    ggml_tensor *post = v.get("conv_post.weight");
    hift_.conv_post_k = static_cast<int>(post->ne[0]);
    expect(v, "conv_post.weight", {-1, hift_.channels[2], 18});
    expect(v, "conv_post.bias", {18});
    if (hift_.conv_pre_k % 2 == 0 || hift_.conv_post_k % 2 == 0) throw_usage(v.path + ": conv_pre/conv_post kernels must be odd");
    hift_.f0_layers = 0;
    while (v.has("f0_predictor.condnet." + std::to_string(2 * hift_.f0_layers) + ".weight")) ++hift_.f0_layers;
    if (hift_.f0_layers < 1) throw_usage(v.path + ": missing f0_predictor.condnet.0.weight");
    int fc = kMelBins;
    int fw = static_cast<int>(v.get("f0_predictor.condnet.0.weight")->ne[2]);
    for (int i = 0; i < hift_.f0_layers; ++i) {
        const std::string p = "f0_predictor.condnet." + std::to_string(2 * i);
        expect(v, p + ".weight", {3, fc, fw});
        expect(v, p + ".bias", {fw});
        fc = fw;
    }
    expect(v, "f0_predictor.classifier.weight", {fw, 1});
    expect(v, "f0_predictor.classifier.bias", {1});
    ggml_tensor *ml = v.get("m_source.l_linear.weight");
    hift_.n_harmonics = static_cast<int>(ml->ne[0]);
    expect(v, "m_source.l_linear.weight", {hift_.n_harmonics, 1});
    expect(v, "m_source.l_linear.bias", {1});
}

std::shared_ptr<const Voice> T2wModel::load_voice(const std::string &path, const std::string &name) const {
    auto v = std::make_shared<Voice>();
    v->name = name;
    v->path = path;
    v->weights = load_gguf(path, dev_t2m_);
    const GgufWeights &p = *v->weights;
    // KV: n_timesteps / temperature (the only two the reference reads).
    const gguf::GgufFile &g = *p.header;
    if (!g.has_key("mtmd.prompt_cache.n_timesteps") || g.key_type("mtmd.prompt_cache.n_timesteps") != GGUF_TYPE_INT32)
        throw_usage(p.path + ": missing int32 key mtmd.prompt_cache.n_timesteps");
    PromptCacheInfo &info = v->info;
    info.n_timesteps = static_cast<int>(g.get_int("mtmd.prompt_cache.n_timesteps"));
    if (g.has_key("mtmd.prompt_cache.temperature") && g.key_type("mtmd.prompt_cache.temperature") == GGUF_TYPE_FLOAT32)
        info.temperature = static_cast<float>(g.get_float("mtmd.prompt_cache.temperature"));
    if (info.n_timesteps < 1 || info.n_timesteps > 100) {
        throw_usage(p.path + ": mtmd.prompt_cache.n_timesteps = " + std::to_string(info.n_timesteps) + ", expected 1..100");
    }
    const int d = enc_.d_model;
    const int N = info.n_timesteps;
    ggml_tensor *spk = p.get("prompt_cache.spk_cb");
    if (spk->type != GGML_TYPE_F32 || spk->ne[0] != kSpkDim || ggml_nelements(spk) != kSpkDim) {
        throw_usage(p.path + ": prompt_cache.spk_cb must be f32 [192] (batch 1), got " + shape_str(spk));
    }
    ggml_tensor *ca = p.get("prompt_cache.conformer_att_cache");
    const int L = static_cast<int>(ca->ne[1]);
    info.att_len = L;
    if (L < 2 || L % 2 != 0) throw_usage(p.path + ": conformer_att_cache length L=" + std::to_string(L) + " must be even and >= 2");
    // Another voice of a loaded model runs on the graphs built for the default one.
    if (voice_ && (L != voice_->info.att_len || N != voice_->info.n_timesteps)) {
        throw_usage(p.path + ": prompt length L=" + std::to_string(L) + " and " + std::to_string(N) +
                    " flow steps do not match the model's default voice " + voice_->path + " (L=" +
                    std::to_string(voice_->info.att_len) + ", " + std::to_string(voice_->info.n_timesteps) +
                    " steps): rebuild the voice with `rtf t2w-prompt --steps " + std::to_string(voice_->info.n_timesteps) + "`");
    }
    expect(p, "prompt_cache.conformer_att_cache", {2 * enc_.head_dim, L, enc_.n_heads, enc_.n_token_layers + enc_.n_mel_layers});
    expect(p, "prompt_cache.conformer_cnn_cache", {d, (enc_.conv2_k - 1) + (enc_.up_k - 1), 1});
    expect(p, "prompt_cache.estimator_cnn_cache", {2 * dit_.hidden, 2, dit_.depth * N, 2});
    expect(p, "prompt_cache.estimator_att_cache", {2 * dit_.head_dim, L, dit_.n_heads * dit_.depth * N, 2});
    auto fetch = [&](const char *tensor, std::vector<float> &out) {
        ggml_tensor *t = p.get(tensor);
        out.resize(static_cast<size_t>(ggml_nelements(t)));
        ggml_backend_tensor_get(t, out.data(), 0, ggml_nbytes(t));
    };
    fetch("prompt_cache.spk_cb", v->spk);
    fetch("prompt_cache.conformer_cnn_cache", v->conf_cnn);
    fetch("prompt_cache.conformer_att_cache", v->conf_att);
    fetch("prompt_cache.estimator_cnn_cache", v->est_cnn);
    return v;
}

}  // namespace rtf::t2w
