#include "twin/twin.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/gguf/gguf-file.h"
#include "models/t2w/voice.h"
#include "rtf/build-info.h"
#include "twin/prompt-bundle.h"
#include "twin/tensor-data.h"

namespace rtf::twin {

namespace fs = std::filesystem;
using gguf::GgufFile;
namespace m45 = gguf::minicpmo45;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct GgmlCtxDeleter {
    void operator()(ggml_context *c) const noexcept { ggml_free(c); }
};

// Token ids named by the Qwen3 tokenizer (151643..151668) and by the spec (§2.1, MiniCPM-o 4.5).
// Type 3 = CONTROL (special), 4 = USER_DEFINED (added, not special), as llama.cpp's converter sets them.
struct NamedToken {
    int32_t id;
    const char *text;
    int32_t type;
};
constexpr NamedToken kNamedTokens[] = {
    {151643, "<|endoftext|>", 3},     {151644, "<|im_start|>", 3},      {151645, "<|im_end|>", 3},
    {151646, "<|object_ref_start|>", 3}, {151647, "<|object_ref_end|>", 3}, {151648, "<|box_start|>", 3},
    {151649, "<|box_end|>", 3},       {151650, "<|quad_start|>", 3},    {151651, "<|quad_end|>", 3},
    {151652, "<|vision_start|>", 3},  {151653, "<|vision_end|>", 3},    {151654, "<|vision_pad|>", 3},
    {151655, "<|image_pad|>", 3},     {151656, "<|video_pad|>", 3},     {151657, "<tool_call>", 4},
    {151658, "</tool_call>", 4},      {151659, "<|fim_prefix|>", 4},    {151660, "<|fim_middle|>", 4},
    {151661, "<|fim_suffix|>", 4},    {151662, "<|fim_pad|>", 4},       {151663, "<|repo_name|>", 4},
    {151664, "<|file_sep|>", 4},      {151665, "<tool_response>", 4},   {151666, "</tool_response>", 4},
    {151667, "<think>", 4},           {151668, "</think>", 4},          {151704, "<|tts_eos|>", 3},
    {151705, "<|listen|>", 3},        {151706, "<|speak|>", 3},         {151717, "<|turn_eos|>", 3},
    {151718, "<|chunk_eos|>", 3},     {151721, "<|chunk_tts_eos|>", 3},
};

// Copies tokenizer.ggml.* from the vocabulary GGUF, with the token list cut or padded
// ("[PAD<i>]", user-defined) to n_tokens entries — the vocab size must equal the embedding rows.
void add_tokenizer(gguf_context *ctx, const std::string &vocab_path, int64_t n_tokens,
                   const std::vector<std::pair<int64_t, std::string>> &named = {}, int64_t eos = -1) {
    if (vocab_path.empty() || !fs::exists(vocab_path))
        throw_setup("vocabulary file '" + vocab_path + "' not found (llama.cpp's models/ggml-vocab-qwen2.gguf; pass --vocab FILE)");
    GgufFile v(vocab_path);
    const gguf_context *vc = v.ctx();
    const int64_t id_tokens = gguf_find_key(vc, "tokenizer.ggml.tokens");
    const int64_t id_types = gguf_find_key(vc, "tokenizer.ggml.token_type");
    if (id_tokens < 0 || id_types < 0 || gguf_get_arr_type(vc, id_types) != GGUF_TYPE_INT32)
        throw_setup(vocab_path + ": not a vocabulary GGUF (tokenizer.ggml.tokens / token_type missing)");
    const auto n_src = static_cast<int64_t>(gguf_get_arr_n(vc, id_tokens));
    const auto *src_types = static_cast<const int32_t *>(gguf_get_arr_data(vc, id_types));

    std::deque<std::string> storage;
    std::vector<const char *> tokens(static_cast<size_t>(n_tokens));
    std::vector<int32_t> types(static_cast<size_t>(n_tokens));
    for (int64_t i = 0; i < n_tokens; ++i) {
        if (i < n_src) {
            tokens[static_cast<size_t>(i)] = gguf_get_arr_str(vc, id_tokens, static_cast<size_t>(i));
            types[static_cast<size_t>(i)] = src_types[i];
        } else {
            storage.push_back("[PAD" + std::to_string(i) + "]");
            tokens[static_cast<size_t>(i)] = storage.back().c_str();
            types[static_cast<size_t>(i)] = 4;
        }
    }
    if (named.empty()) {
        for (const auto &t : kNamedTokens) {
            if (t.id >= n_tokens) continue;
            tokens[static_cast<size_t>(t.id)] = t.text;
            types[static_cast<size_t>(t.id)] = t.type;
        }
    }
    for (const auto &[id, text] : named) {
        if (id < 0 || id >= n_tokens) continue;
        tokens[static_cast<size_t>(id)] = text.c_str();
        types[static_cast<size_t>(id)] = 3;  // CONTROL
    }

    const int64_t n_kv = gguf_get_n_kv(vc);
    for (int64_t i = 0; i < n_kv; ++i) {
        const std::string key = gguf_get_key(vc, i);
        if (key.rfind("tokenizer.", 0) != 0) continue;
        if (key == "tokenizer.ggml.tokens") {
            gguf_set_arr_str(ctx, key.c_str(), tokens.data(), tokens.size());
        } else if (key == "tokenizer.ggml.token_type") {
            gguf_set_arr_data(ctx, key.c_str(), GGUF_TYPE_INT32, types.data(), types.size());
        } else {
            switch (gguf_get_kv_type(vc, i)) {
                case GGUF_TYPE_STRING: gguf_set_val_str(ctx, key.c_str(), gguf_get_val_str(vc, i)); break;
                case GGUF_TYPE_UINT32: gguf_set_val_u32(ctx, key.c_str(), gguf_get_val_u32(vc, i)); break;
                case GGUF_TYPE_INT32: gguf_set_val_i32(ctx, key.c_str(), gguf_get_val_i32(vc, i)); break;
                case GGUF_TYPE_BOOL: gguf_set_val_bool(ctx, key.c_str(), gguf_get_val_bool(vc, i)); break;
                case GGUF_TYPE_FLOAT32: gguf_set_val_f32(ctx, key.c_str(), gguf_get_val_f32(vc, i)); break;
                case GGUF_TYPE_ARRAY: {
                    const size_t n = gguf_get_arr_n(vc, i);
                    if (gguf_get_arr_type(vc, i) == GGUF_TYPE_STRING) {
                        std::vector<const char *> s(n);
                        for (size_t k = 0; k < n; ++k) s[k] = gguf_get_arr_str(vc, i, k);
                        gguf_set_arr_str(ctx, key.c_str(), s.data(), n);
                    } else {
                        gguf_set_arr_data(ctx, key.c_str(), gguf_get_arr_type(vc, i), gguf_get_arr_data(vc, i), n);
                    }
                    break;
                }
                default: break;  // other scalar types do not occur in llama.cpp's vocabulary files
            }
        }
    }
    // Qwen3 chat models end a turn with <|im_end|> (as shared/tools/tts_twin.py writes it).
    if (!named.empty() && eos >= 0) gguf_set_val_u32(ctx, "tokenizer.ggml.eos_token_id", static_cast<uint32_t>(eos));
    else if (n_tokens > 151645) gguf_set_val_u32(ctx, "tokenizer.ggml.eos_token_id", 151645);
}

void set_kv(gguf_context *ctx, const gguf::KvSpec &k) {
    const char *key = k.key.c_str();
    std::visit(
        [&](const auto &v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, uint32_t>) gguf_set_val_u32(ctx, key, v);
            else if constexpr (std::is_same_v<T, int32_t>) gguf_set_val_i32(ctx, key, v);
            else if constexpr (std::is_same_v<T, float>) gguf_set_val_f32(ctx, key, v);
            else if constexpr (std::is_same_v<T, bool>) gguf_set_val_bool(ctx, key, v);
            else if constexpr (std::is_same_v<T, std::string>) gguf_set_val_str(ctx, key, v.c_str());
            else if constexpr (std::is_same_v<T, uint64_t>) gguf_set_val_u64(ctx, key, v);
            else if constexpr (std::is_same_v<T, std::vector<float>>)
                gguf_set_arr_data(ctx, key, GGUF_TYPE_FLOAT32, v.data(), v.size());
            else if constexpr (std::is_same_v<T, std::vector<int32_t>>)
                gguf_set_arr_data(ctx, key, GGUF_TYPE_INT32, v.data(), v.size());
            else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                std::vector<const char *> p;
                p.reserve(v.size());
                for (const auto &x : v) p.push_back(x.c_str());
                gguf_set_arr_str(ctx, key, p.data(), p.size());
            }
        },
        k.value);
}

uint64_t pad_to(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

class Output {
public:
    Output(const std::string &path) : path_(path), part_(path + ".part") {
        std::error_code ec;
        const auto dir = fs::path(path).parent_path();
        if (!dir.empty()) fs::create_directories(dir, ec);
        if (ec) throw_setup("cannot create directory " + dir.string() + ": " + ec.message());
        f_ = std::fopen(part_.c_str(), "wb");
        if (!f_) throw_setup("cannot write " + part_);
        std::setvbuf(f_, nullptr, _IOFBF, 4 << 20);
    }
    ~Output() {
        if (f_) {
            std::fclose(f_);
            std::remove(part_.c_str());
        }
    }
    std::FILE *file() { return f_; }
    void write(const void *p, size_t n) {
        if (n && std::fwrite(p, 1, n, f_) != n) throw_setup(part_ + ": write failed (disk full?)");
    }
    void zeros(uint64_t n) {
        static const char z[4096] = {};
        while (n) {
            const size_t k = static_cast<size_t>(std::min<uint64_t>(n, sizeof z));
            write(z, k);
            n -= k;
        }
    }
    void commit() {
        const bool ok = std::fclose(f_) == 0;
        f_ = nullptr;
        if (!ok) throw_setup(part_ + ": close failed (disk full?)");
        std::error_code ec;
        fs::rename(part_, path_, ec);
        if (ec) throw_setup("cannot rename " + part_ + " to " + path_ + ": " + ec.message());
    }

private:
    std::string path_, part_;
    std::FILE *f_ = nullptr;
};

// Throttled progress reporting per file.
struct Progress {
    const ProgressFn &fn;
    std::string file;
    uint64_t total, done = 0;
    Clock::time_point last = Clock::now();
    void add(uint64_t n) {
        done += n;
        if (!fn) return;
        const auto now = Clock::now();
        if (done == total || now - last > std::chrono::milliseconds(500)) {
            last = now;
            fn(file, done, total);
        }
    }
};

gguf::Init like_init(const gguf::TensorInfo &t) {
    const std::string &n = t.name;
    auto ends_with = [&](const char *s) {
        const std::string x(s);
        return n.size() >= x.size() && n.compare(n.size() - x.size(), x.size(), x) == 0;
    };
    if (t.n_dims == 1) {
        if (ends_with(".bias")) return gguf::init_normal(0.01f);
        if (n.find("norm") != std::string::npos || n.find("alpha") != std::string::npos ||
            n.find("scale") != std::string::npos) {
            gguf::Init i;
            i.mean = 1.0f;
            i.std = 0.05f;
            return i;
        }
        return gguf::init_normal(0.02f);
    }
    return gguf::init_normal(1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(1, t.ne[0]))));
}

// Writing some roles into an existing kit (e.g. `--only apm` to give an older kit the audio
// encoder): the kit's rtf-kit.json keeps listing the files of the roles not rewritten, as
// long as they still exist, so the kit stays whole. An unreadable old manifest is replaced.
void keep_other_files(const std::string &manifest, nlohmann::json &j) {
    std::error_code ec;
    if (!fs::is_regular_file(manifest, ec)) return;
    nlohmann::json old;
    try {
        std::ifstream in(manifest);
        old = nlohmann::json::parse(in);
    } catch (const std::exception &) {
        return;
    }
    if (!old.contains("files") || !old["files"].is_array()) return;
    std::set<std::string> written;
    for (const auto &f : j["files"]) written.insert(f.value("role", ""));
    if (!written.count("prompt_cache") && old.contains("voices")) j["voices"] = old["voices"];  // written with it
    const fs::path dir = fs::path(manifest).parent_path();
    nlohmann::json merged = nlohmann::json::array();
    uint64_t total = 0;
    for (const auto &f : old["files"]) {
        if (!f.is_object() || written.count(f.value("role", "")) || !f.contains("path") || !f["path"].is_string()) continue;
        if (!fs::is_regular_file(dir / f["path"].get<std::string>(), ec)) continue;
        merged.push_back(f);
        total += f.value("bytes", uint64_t{0});
    }
    if (merged.empty()) return;
    for (const auto &f : j["files"]) {
        merged.push_back(f);
        total += f.value("bytes", uint64_t{0});
    }
    j["files"] = merged;
    j["total_bytes"] = total;
    nlohmann::json roles = nlohmann::json::array();
    for (const auto &f : merged) roles.push_back(f.value("role", ""));
    j["roles"] = roles;
}

}  // namespace

std::string default_vocab_path() { return std::string(RTF_VOCAB_DIR) + "/ggml-vocab-qwen2.gguf"; }

FileResult write_layout(const gguf::FileLayout &layout, const std::string &path, uint64_t seed,
                        const std::string &vocab_path, bool dry_run, const ProgressFn &progress) {
    const auto t0 = Clock::now();
    gguf::GgufCtxPtr ctx(gguf_init_empty());
    for (const auto &k : layout.kvs)
        if (!std::holds_alternative<std::monostate>(k.value)) set_kv(ctx.get(), k);
    if (layout.tokenizer_tokens > 0)
        add_tokenizer(ctx.get(), vocab_path, layout.tokenizer_tokens, layout.named_tokens, layout.tokenizer_eos);
    gguf_set_val_str(ctx.get(), "rtf.twin.generator", (std::string("rtf twin ") + RTF_VERSION).c_str());
    gguf_set_val_u64(ctx.get(), "rtf.twin.seed", seed);

    ggml_init_params ip{};
    ip.mem_size = (layout.tensors.size() + 1) * ggml_tensor_overhead();
    ip.mem_buffer = nullptr;
    ip.no_alloc = true;
    std::unique_ptr<ggml_context, GgmlCtxDeleter> gctx(ggml_init(ip));
    for (const auto &t : layout.tensors) {
        if (t.name.size() >= GGML_MAX_NAME) throw_usage("tensor name too long for GGUF: " + t.name);
        ggml_tensor *x = ggml_new_tensor(gctx.get(), t.type, gguf::shape_dims(t.ne), t.ne.data());
        ggml_set_name(x, t.name.c_str());
        gguf_add_tensor(ctx.get(), x);
    }
    const size_t meta = gguf_get_meta_size(ctx.get());
    const uint64_t align = gguf_get_alignment(ctx.get());
    uint64_t total = meta;
    for (const auto &t : layout.tensors) total += pad_to(gguf::tensor_nbytes(t.type, t.ne), align);

    FileResult r;
    r.role = layout.role;
    r.path = path;
    r.bytes = total;
    r.n_tensors = static_cast<int64_t>(layout.tensors.size());
    if (dry_run) return r;

    Output out(path);
    {
        std::vector<uint8_t> header(meta);
        gguf_get_meta_data(ctx.get(), header.data());
        out.write(header.data(), header.size());
    }
    Progress prog{progress, path, total};
    prog.add(meta);
    for (const auto &t : layout.tensors) {
        TensorStream s{t.seed_name.empty() ? t.name : t.seed_name, t.type, t.ne, t.init};
        write_tensor_data(out.file(), path, s, seed, [&](uint64_t n) { prog.add(n); });
        const uint64_t nb = gguf::tensor_nbytes(t.type, t.ne);
        out.zeros(pad_to(nb, align) - nb);
        prog.add(pad_to(nb, align) - nb);
    }
    out.commit();
    r.seconds = since(t0);
    return r;
}

FileResult make_like(const std::string &in_path, const std::string &out_path, uint64_t seed,
                     const ProgressFn &progress) {
    const auto t0 = Clock::now();
    GgufFile src(in_path);
    if (fs::exists(out_path)) {
        std::error_code ec;
        if (fs::equivalent(in_path, out_path, ec)) throw_usage("--out " + out_path + " is the input file itself");
    }
    const size_t meta = gguf_get_meta_size(src.ctx());
    const uint64_t align = gguf_get_alignment(src.ctx());
    std::vector<gguf::TensorInfo> ts = src.tensors();
    std::stable_sort(ts.begin(), ts.end(), [](const auto &a, const auto &b) { return a.offset < b.offset; });
    uint64_t data_end = 0;
    for (const auto &t : ts) data_end = std::max<uint64_t>(data_end, t.offset + pad_to(t.nbytes, align));

    FileResult r;
    r.role = gguf::Role::llm;  // not meaningful for --like
    r.path = out_path;
    r.bytes = meta + data_end;
    r.n_tensors = static_cast<int64_t>(ts.size());

    Output out(out_path);
    std::vector<uint8_t> header(meta);
    gguf_get_meta_data(src.ctx(), header.data());
    out.write(header.data(), header.size());
    Progress prog{progress, out_path, r.bytes};
    prog.add(meta);
    uint64_t pos = 0;
    for (const auto &t : ts) {
        if (t.offset < pos) throw_usage(in_path + ": tensor '" + t.name + "' overlaps the previous tensor's data");
        out.zeros(t.offset - pos);
        prog.add(t.offset - pos);
        TensorStream s{t.name, t.type, t.ne, like_init(t)};
        write_tensor_data(out.file(), out_path, s, seed, [&](uint64_t n) { prog.add(n); });
        pos = t.offset + t.nbytes;
    }
    out.zeros(data_end - pos);
    prog.add(data_end - pos);
    out.commit();
    r.seconds = since(t0);
    return r;
}

void KitOptions::validate() const {
    if (family != "minicpmo45" && family != "pocket-tts" && family != "qwen3-tts")
        throw_usage("--family: unknown family '" + family + "' (allowed: minicpmo45, pocket-tts, qwen3-tts)");
    if (out_dir.empty() && !dry_run) throw_usage("--out: the kit directory is required");
    if (family != "minicpmo45") {  // a libmtmd family: its two files only
        const bool default_roles = std::equal(roles.begin(), roles.end(), gguf::default_kit_roles.begin(),
                                              gguf::default_kit_roles.end());
        for (Role r : roles)
            if (!default_roles && r != Role::backbone && r != Role::mmproj)
                throw_usage("--only: " + family + " has no '" + gguf::role_name(r) + "' file (backbone, mmproj)");
    }
    if (family == "qwen3-tts") {
        const auto &t = qwen3.talker;
        if (t.n_head % t.n_head_kv != 0 || t.head_dim % 8 != 0)
            throw_usage("dims: the talker's KV heads must divide its heads and its head size be a multiple of 8");
        if (qwen3.spk.c % 8 != 0) throw_usage("dims: the speaker encoder's width must be a multiple of 8 (res2net scale)");
        if ((qwen3.c2w.dac >> 4) < 1 || qwen3.c2w.dac % 16 != 0) throw_usage("dims: the DAC width must be a multiple of 16");
        return;
    }
    if (family == "pocket-tts") {
        const auto &b = pocket.backbone;
        if (b.n_embd % b.n_head != 0 || (b.n_embd / b.n_head) % 2 != 0)
            throw_usage("dims: the backbone's heads (" + std::to_string(b.n_head) + ") must divide its width " +
                        std::to_string(b.n_embd) + " into an even head size");
        if (pocket.mimi.d % pocket.mimi.n_head != 0 || (pocket.mimi.d / pocket.mimi.n_head) % 2 != 0)
            throw_usage("dims: the mimi transformer's heads must divide its width into an even head size");
        if (b.n_text < 72 + 8) throw_usage("dims: the backbone's vocabulary needs at least 80 text pieces");
        return;
    }
    if (roles.empty()) throw_usage("--only: no file selected");
    for (const auto &v : voices)
        if (!t2w::valid_voice_name(v))
            throw_usage("--voices: '" + v + "' is not a voice name (1-32 of a-z, 0-9, '_', '-'; not 'default')");
    auto pos = [](int64_t v, const char *flag, int64_t max = 1 << 20) {
        if (v < 1 || v > max)
            throw_usage(std::string(flag) + ": " + std::to_string(v) + " is out of range (1.." + std::to_string(max) + ")");
    };
    const auto &l = dims.llm;
    pos(l.n_layer, "--llm-layers", 1000);
    pos(l.n_embd, "--llm-hidden");
    pos(l.n_ff, "--llm-ff");
    pos(l.n_head, "--llm-heads", 1024);
    pos(l.n_head_kv, "--llm-kv-heads", 1024);
    pos(l.head_dim, "--llm-head-dim", 4096);
    if (l.n_head % l.n_head_kv != 0)
        throw_usage("--llm-kv-heads: " + std::to_string(l.n_head_kv) + " must divide --llm-heads " + std::to_string(l.n_head));
    const auto &t = dims.tts;
    pos(t.n_layer, "--tts-layers", 1000);
    pos(t.n_embd, "--tts-hidden");
    pos(t.n_ff, "--tts-ff");
    pos(t.n_head, "--tts-heads", 1024);
    if (t.n_embd % t.n_head != 0 || (t.n_embd / t.n_head) % 2 != 0)
        throw_usage("--tts-heads: " + std::to_string(t.n_head) + " must divide --tts-hidden " + std::to_string(t.n_embd) +
                    " into an even head size");
    pos(dims.encoder.n_blocks, "--encoder-blocks", 64);
    pos(dims.encoder.n_up_blocks, "--encoder-up-blocks", 64);
    pos(dims.flow_matching.n_blocks, "--dit-blocks", 64);
    if (dims.projector.n_in != l.n_embd || t.n_llm_embd != l.n_embd)
        throw_usage("dims: the projector input (" + std::to_string(dims.projector.n_in) + ") and the TTS projectors (" +
                    std::to_string(t.n_llm_embd) + ") must take the LLM hidden size " + std::to_string(l.n_embd));
    const auto &a = dims.apm;
    pos(a.n_layer, "--apm-layers", 1000);
    if (a.d < 1 || a.n_head < 1 || a.d % a.n_head != 0)
        throw_usage("dims: the audio encoder's heads (" + std::to_string(a.n_head) + ") must divide its width " +
                    std::to_string(a.d));
    if (a.n_out != l.n_embd)
        throw_usage("dims: the audio projector's output (" + std::to_string(a.n_out) + ") must equal the LLM hidden size " +
                    std::to_string(l.n_embd));
    const auto &v = dims.vpm;
    if (v.d < 1 || v.n_head < 1 || v.d % v.n_head != 0)
        throw_usage("dims: the vision encoder's heads (" + std::to_string(v.n_head) + ") must divide its width " +
                    std::to_string(v.d));
    if (v.n_embd != l.n_embd)
        throw_usage("dims: the vision resampler's width (" + std::to_string(v.n_embd) + ") must equal the LLM hidden size " +
                    std::to_string(l.n_embd));
    if (dims.projector.n_out != t.n_embd)
        throw_usage("dims: the projector output (" + std::to_string(dims.projector.n_out) + ") must equal the TTS hidden size " +
                    std::to_string(t.n_embd));
}

nlohmann::json KitOptions::to_json() const {
    const auto &d = dims;
    nlohmann::json roles_j = nlohmann::json::array();
    for (Role r : roles) roles_j.push_back(gguf::role_name(r));
    nlohmann::json head = {{"family", family}, {"scale", m45::scale_name(scale)}, {"type", gguf::weight_type_name(type)},
                           {"seed", seed}, {"roles", roles_j}};
    if (family == "qwen3-tts") {
        const auto &q = qwen3;
        head["vocab"] = vocab_path;
        head["dims"] = {{"talker",
                         {{"n_layer", q.talker.n_layer}, {"n_embd", q.talker.n_embd}, {"n_head", q.talker.n_head},
                          {"n_head_kv", q.talker.n_head_kv}, {"head_dim", q.talker.head_dim}, {"n_ff", q.talker.n_ff},
                          {"n_vocab", q.talker.n_vocab()}}},
                        {"predictor",
                         {{"n_layer", q.predictor.n_layer}, {"n_embd", q.predictor.n_embd},
                          {"n_head", q.predictor.n_head}, {"n_ff", q.predictor.n_ff}}},
                        {"code2wav", {{"latent", q.c2w.latent}, {"hidden", q.c2w.hidden}, {"dac", q.c2w.dac}}},
                        {"speaker", {{"c", q.spk.c}}}};
        return head;
    }
    if (family == "pocket-tts") {
        const auto &p = pocket;
        head["dims"] = {{"backbone",
                         {{"n_layer", p.backbone.n_layer}, {"n_embd", p.backbone.n_embd}, {"n_head", p.backbone.n_head},
                          {"n_ff", p.backbone.n_ff}, {"n_vocab", p.backbone.n_vocab()}, {"n_ctx", p.backbone.n_ctx}}},
                        {"mimi",
                         {{"d", p.mimi.d}, {"n_head", p.mimi.n_head}, {"n_ff", p.mimi.n_ff}, {"n_layer", p.mimi.n_layer},
                          {"n_filters", p.mimi.n_filters}}},
                        {"flow", {{"d", p.flow.d}, {"depth", p.flow.depth}}},
                        {"variant", p.variant}};
        return head;
    }
    return {{"family", family},
            {"scale", m45::scale_name(scale)},
            {"type", gguf::weight_type_name(type)},
            {"seed", seed},
            {"roles", roles_j},
            {"vocab", vocab_path},
            {"dims",
             {{"llm",
               {{"n_layer", d.llm.n_layer}, {"n_embd", d.llm.n_embd}, {"n_head", d.llm.n_head},
                {"n_head_kv", d.llm.n_head_kv}, {"head_dim", d.llm.head_dim}, {"n_ff", d.llm.n_ff},
                {"n_vocab", d.llm.n_vocab}, {"n_ctx", d.llm.n_ctx}}},
              {"tts",
               {{"n_layer", d.tts.n_layer}, {"n_embd", d.tts.n_embd}, {"n_head", d.tts.n_head},
                {"n_head_kv", d.tts.n_head_kv}, {"n_ff", d.tts.n_ff}, {"n_llm_embd", d.tts.n_llm_embd},
                {"n_vocab", m45::kTtsVocab}, {"n_audio", m45::kTtsAudio}, {"n_text", m45::kTtsText}}},
              {"projector", {{"n_in", d.projector.n_in}, {"n_out", d.projector.n_out}}},
              {"encoder",
               {{"n_blocks", d.encoder.n_blocks}, {"n_up_blocks", d.encoder.n_up_blocks}, {"d", d.encoder.d},
                {"n_head", d.encoder.n_head}, {"n_ff", d.encoder.n_ff}}},
              {"flow_matching",
               {{"n_blocks", d.flow_matching.n_blocks}, {"d", d.flow_matching.d}, {"n_head", d.flow_matching.n_head},
                {"n_mlp", d.flow_matching.n_mlp}}},
              {"hift", {{"c_pre", d.hift.c_pre}}},
              {"prompt_cache",
               {{"L", d.prompt_cache.L}, {"n_steps", d.prompt_cache.n_steps},
                {"n_dit_blocks", d.prompt_cache.n_dit_blocks}, {"n_conf_layers", d.prompt_cache.n_conf_layers}}},
              {"apm",
               {{"n_layer", d.apm.n_layer}, {"d", d.apm.d}, {"n_head", d.apm.n_head}, {"n_ff", d.apm.n_ff},
                {"n_mel", d.apm.n_mel}, {"n_ctx", d.apm.n_ctx}, {"n_proj", d.apm.n_proj}, {"n_out", d.apm.n_out}}},
              {"vpm",
               {{"n_layer", d.vpm.n_layer}, {"d", d.vpm.d}, {"n_head", d.vpm.n_head}, {"n_ff", d.vpm.n_ff},
                {"patch", d.vpm.patch}, {"image_size", d.vpm.image_size}, {"n_query", d.vpm.n_query},
                {"n_embd", d.vpm.n_embd}}}}}};
}

nlohmann::json KitResult::to_json(const KitOptions &o) const {
    nlohmann::json j = o.to_json();
    j["format"] = "rtf-kit/1";
    j["generator"] = std::string("rtf twin ") + RTF_VERSION;
    j["twin"] = true;
    nlohmann::json files_j = nlohmann::json::array();
    for (const auto &f : files)
        files_j.push_back({{"role", gguf::role_name(f.role)}, {"path", f.path}, {"bytes", f.bytes}, {"n_tensors", f.n_tensors}});
    j["files"] = files_j;
    j["total_bytes"] = total_bytes;
    nlohmann::json voices_j = nlohmann::json::array();
    for (size_t i = 0; i < voices.size(); ++i)
        voices_j.push_back({{"name", o.voices.at(i)}, {"path", voices[i].path}, {"bytes", voices[i].bytes},
                            {"seed", voice_seed(o.seed, i)}});
    j["voices"] = voices_j;
    return j;
}

uint64_t voice_seed(uint64_t seed, size_t i) { return seed + 0x9E3779B97F4A7C15ULL * (i + 1); }

KitResult make_kit(const KitOptions &o_in) {
    o_in.validate();
    KitOptions o = o_in;
    const bool pocket = o.family == "pocket-tts" || o.family == "qwen3-tts";  // a libmtmd family: two files
    const bool qwen3 = o.family == "qwen3-tts";
    if (pocket) {
        if (std::any_of(o.roles.begin(), o.roles.end(), [](Role r) { return r != Role::backbone && r != Role::mmproj; }))
            o.roles.assign(gguf::mtmd_family_roles.begin(), gguf::mtmd_family_roles.end());
        o.voices.clear();
        if (!qwen3) o.vocab_path.clear();
    }
    const auto t0 = Clock::now();
    const std::string vocab = pocket && !qwen3 ? "" : o.vocab_path.empty() ? default_vocab_path() : o.vocab_path;
    KitResult res;
    for (Role r : o.roles) {
        const auto layout = qwen3    ? gguf::qwen3tts::layout_for(r, o.qwen3, o.type)
                            : pocket ? gguf::pockettts::layout_for(r, o.pocket, o.type)
                                     : m45::layout_for(r, o.dims, o.type);
        const std::string rel = layout.file_name;
        const std::string full = o.dry_run && o.out_dir.empty() ? rel : (fs::path(o.out_dir) / rel).string();
        FileResult f = write_layout(layout, full, o.seed, vocab, o.dry_run, o.progress);
        f.path = rel;
        res.total_bytes += f.bytes;
        res.files.push_back(f);
        // the seeded prompt bundle beside the prompt cache (prompt-bundle.h)
        if (r == Role::prompt_cache && !o.dry_run) write_prompt_bundle(fs::path(full).parent_path().string(), o.dims.prompt_cache.L, o.seed);
        if (r != Role::prompt_cache) continue;
        for (size_t i = 0; i < o.voices.size(); ++i) {
            const std::string vrel = "voices/" + o.voices[i] + "/prompt_cache.gguf";
            const std::string vfull = o.dry_run && o.out_dir.empty() ? vrel : (fs::path(o.out_dir) / vrel).string();
            if (!o.dry_run) fs::create_directories(fs::path(vfull).parent_path());
            FileResult v = write_layout(layout, vfull, voice_seed(o.seed, i), vocab, o.dry_run, o.progress);
            v.path = vrel;
            res.total_bytes += v.bytes;
            res.voices.push_back(v);
        }
    }
    res.seconds = since(t0);
    if (!o.dry_run) {
        KitOptions o2 = o;
        if (!pocket || qwen3) o2.vocab_path = vocab;
        auto j = res.to_json(o2);
        const std::string p = (fs::path(o.out_dir) / "rtf-kit.json").string();
        keep_other_files(p, j);
        std::FILE *f = std::fopen(p.c_str(), "wb");
        if (!f) throw_setup("cannot write " + p);
        const std::string s = j.dump(2) + "\n";
        const bool ok = std::fwrite(s.data(), 1, s.size(), f) == s.size();
        if (std::fclose(f) != 0 || !ok) throw_setup("write failed for " + p);
    }
    return res;
}

}  // namespace rtf::twin
