#include "lm-fixtures.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <ggml.h>
#include <gguf.h>

#include "common/scratch-dir.h"

namespace fs = std::filesystem;

namespace rtf::lm::test {

namespace {
struct Rng {
    uint64_t s;
    explicit Rng(unsigned seed) : s(0x9E3779B97F4A7C15ull ^ seed) {}
    uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    float uni() { return static_cast<float>((next() >> 11) * (1.0 / 9007199254740992.0)); }
    float normal() {
        const float u1 = std::max(uni(), 1e-7f), u2 = uni();
        return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853f * u2);
    }
};

class Writer {
public:
    Writer(const std::string &arch, size_t mem) {
        gguf_ = gguf_init_empty();
        ctx_ = ggml_init({mem, nullptr, false});
        gguf_set_val_str(gguf_, "general.architecture", arch.c_str());
    }
    ~Writer() {
        gguf_free(gguf_);
        ggml_free(ctx_);
    }
    gguf_context *meta() { return gguf_; }
    // Tensor with ggml ne order; values = scale * N(0,1) + offset (+ dim0_add on element 0 of every row).
    float *add(const std::string &name, ggml_type type, std::vector<int64_t> ne, Rng &r, float scale, float offset = 0,
               float dim0_add = 0) {
        ggml_tensor *t = ggml_new_tensor(ctx_, type, static_cast<int>(ne.size()), ne.data());
        ggml_set_name(t, name.c_str());
        const int64_t n = ggml_nelements(t);
        std::vector<float> v(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = offset + scale * r.normal() + ((i % ne[0]) == 0 ? dim0_add : 0.0f);
        if (type == GGML_TYPE_F32) {
            std::memcpy(t->data, v.data(), v.size() * 4);
        } else {
            ggml_fp32_to_fp16_row(v.data(), static_cast<ggml_fp16_t *>(t->data), n);
        }
        gguf_add_tensor(gguf_, t);
        return type == GGML_TYPE_F32 ? static_cast<float *>(t->data) : nullptr;
    }
    void write(const std::string &path) {
        fs::create_directories(fs::path(path).parent_path());
        if (!gguf_write_to_file(gguf_, path.c_str(), false)) throw std::runtime_error("cannot write " + path);
    }

private:
    gguf_context *gguf_;
    ggml_context *ctx_;
};
}  // namespace

std::string temp_dir(const std::string &name) {
    // One scratch folder per test process, removed when the process exits (suite fixtures
    // keep their files for the whole run); each name is a fresh subfolder of it.
    static const rtf::test::ScratchDir root("lm-test");
    fs::path d = root.dir / name;
    fs::remove_all(d);
    fs::create_directories(d);
    return d.string();
}

std::string write_tiny_tts(const std::string &dir, const TinyTtsSpec &s) {
    const int D = s.n_embd;
    const size_t mem = static_cast<size_t>(D) * (static_cast<size_t>(s.n_text) + 3u * static_cast<size_t>(s.n_codes) + 4u * static_cast<size_t>(s.n_llm) + 64u * static_cast<size_t>(s.n_ff) * static_cast<size_t>(s.n_layer)) * 4 + (1u << 24);
    Writer w("llama", mem);
    gguf_context *m = w.meta();
    gguf_set_val_u32(m, "llama.block_count", static_cast<uint32_t>(s.n_layer));
    gguf_set_val_u32(m, "llama.context_length", 4096);
    gguf_set_val_u32(m, "llama.embedding_length", static_cast<uint32_t>(D));
    gguf_set_val_u32(m, "llama.feed_forward_length", static_cast<uint32_t>(s.n_ff));
    gguf_set_val_u32(m, "llama.attention.head_count", static_cast<uint32_t>(s.n_head));
    gguf_set_val_u32(m, "llama.attention.head_count_kv", static_cast<uint32_t>(s.n_head));
    gguf_set_val_u32(m, "llama.rope.dimension_count", static_cast<uint32_t>(D / s.n_head));
    gguf_set_val_f32(m, "llama.rope.freq_base", 10000.0f);
    gguf_set_val_f32(m, "llama.attention.layer_norm_rms_epsilon", 1e-6f);
    gguf_set_val_u32(m, "llama.vocab_size", static_cast<uint32_t>(s.n_codes + s.n_text));
    gguf_set_val_str(m, "tokenizer.ggml.model", "gpt2");  // dropped by the derived file
    Rng r(s.seed);
    auto want = [&](const std::string &n) { return n != s.skip_tensor; };
    auto shape = [&](const std::string &n, std::vector<int64_t> ne) {
        if (n == s.bad_shape_tensor) ne[0] += 1;
        return ne;
    };
    const auto F16 = GGML_TYPE_F16, F32 = GGML_TYPE_F32;
    w.add("token_embd.weight", F16, {D, 16}, r, 0.02f);
    for (int i = 0; i < s.n_layer; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        for (auto [n, ty, ne, sc, off] : std::vector<std::tuple<std::string, ggml_type, std::vector<int64_t>, float, float>>{
                 {"attn_norm.weight", F32, {D}, 0.1f, 1.0f},
                 {"attn_q.weight", F16, {D, D}, 0.05f, 0.0f},
                 {"attn_k.weight", F16, {D, D}, 0.05f, 0.0f},
                 {"attn_v.weight", F16, {D, D}, 0.01f, 0.0f},
                 {"attn_output.weight", F16, {D, D}, 0.01f, 0.0f},
                 {"ffn_norm.weight", F32, {D}, 0.1f, 1.0f},
                 {"ffn_gate.weight", F16, {D, s.n_ff}, 0.02f, 0.0f},
                 {"ffn_up.weight", F16, {D, s.n_ff}, 0.02f, 0.0f},
                 {"ffn_down.weight", F16, {s.n_ff, D}, 0.01f, 0.0f}}) {
            if (want(b + n)) w.add(b + n, ty, shape(b + n, ne), r, sc, off);
        }
    }
    if (want("output_norm.weight")) w.add("output_norm.weight", F32, shape("output_norm.weight", {D}), r, 0.1f, 1.0f);
    const ggml_type et = s.emb_f16 ? F16 : F32;
    if (want("emb_code.0.weight")) w.add("emb_code.0.weight", et, shape("emb_code.0.weight", {D, s.n_codes}), r, 0.3f, 0.0f, 3.0f);
    if (want("emb_text.weight")) w.add("emb_text.weight", et, shape("emb_text.weight", {D, s.n_text}), r, 0.3f, 0.0f, 3.0f);
    // projector (the same values go to the projector file)
    const unsigned pseed = s.seed + 7;
    Rng rp(pseed);
    for (auto &[n, ne, sc] : std::vector<std::tuple<std::string, std::vector<int64_t>, float>>{
             {"linear1.weight", {s.n_llm, D}, 1.0f / std::sqrt(static_cast<float>(s.n_llm))},
             {"linear1.bias", {D}, 0.01f},
             {"linear2.weight", {D, D}, 1.0f / std::sqrt(static_cast<float>(D))},
             {"linear2.bias", {D}, 0.01f}}) {
        const std::string full = "projector_semantic." + n;
        if (want(full)) w.add(full, F32, shape(full, ne), rp, sc);
        w.add("projector_spk." + n, F32, ne, r, sc);
    }
    if (want("head_code.0.weight")) {
        float *h = w.add("head_code.0.weight", F32, shape("head_code.0.weight", {s.n_codes, D}), r, 0.05f);
        if (h && s.bad_shape_tensor != "head_code.0.weight") {
            for (int j = 0; j < D; ++j) h[static_cast<size_t>(j) * static_cast<size_t>(s.n_codes) + static_cast<size_t>(s.n_codes - 1)] = j == 0 ? s.eos_beta : 0.0f;
        }
    }
    const std::string tts = (fs::path(dir) / "tts" / "MiniCPM-o-4_5-tts-F16.gguf").string();
    w.write(tts);
    if (s.projector_file) {
        Writer p("projector", static_cast<size_t>(s.n_llm + D + 4) * static_cast<size_t>(D) * 4 + (1u << 20));
        Rng rp2(pseed);
        p.add("linear1.weight", F32, {s.n_llm, D}, rp2, 1.0f / std::sqrt(static_cast<float>(s.n_llm)));
        p.add("linear1.bias", F32, {D}, rp2, 0.01f);
        p.add("linear2.weight", F32, {D, D}, rp2, 1.0f / std::sqrt(static_cast<float>(D)));
        p.add("linear2.bias", F32, {D}, rp2, 0.01f);
        p.write((fs::path(dir) / "tts" / "MiniCPM-o-4_5-projector-F16.gguf").string());
    }
    return tts;
}

std::string write_tiny_qwen3(const std::string &path, unsigned seed) {
    const std::string vocab = std::string(RTF_VOCAB_DIR) + "/ggml-vocab-qwen2.gguf";
    gguf_init_params vp{true, nullptr};
    gguf_context *v = gguf_init_from_file(vocab.c_str(), vp);
    if (!v) throw std::runtime_error("cannot read " + vocab);
    const int64_t kt = gguf_find_key(v, "tokenizer.ggml.tokens");
    const int64_t n_vocab = static_cast<int64_t>(gguf_get_arr_n(v, kt));
    const int D = 64, H = 4, HKV = 2, HD = 16, FF = 128, L = 2;
    Writer w("qwen3", static_cast<size_t>(n_vocab) * D * 2 * 2 + (1u << 24));
    gguf_context *m = w.meta();
    gguf_set_kv(m, v);
    gguf_free(v);
    gguf_set_val_str(m, "general.architecture", "qwen3");
    gguf_set_val_u32(m, "qwen3.block_count", L);
    gguf_set_val_u32(m, "qwen3.context_length", 4096);
    gguf_set_val_u32(m, "qwen3.embedding_length", D);
    gguf_set_val_u32(m, "qwen3.feed_forward_length", FF);
    gguf_set_val_u32(m, "qwen3.attention.head_count", H);
    gguf_set_val_u32(m, "qwen3.attention.head_count_kv", HKV);
    gguf_set_val_u32(m, "qwen3.attention.key_length", HD);
    gguf_set_val_u32(m, "qwen3.attention.value_length", HD);
    gguf_set_val_f32(m, "qwen3.rope.freq_base", 1000000.0f);
    gguf_set_val_f32(m, "qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
    Rng r(seed);
    const auto F16 = GGML_TYPE_F16, F32 = GGML_TYPE_F32;
    w.add("token_embd.weight", F16, {D, n_vocab}, r, 0.5f);
    for (int i = 0; i < L; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        w.add(b + "attn_norm.weight", F32, {D}, r, 0.1f, 1.0f);
        w.add(b + "attn_q.weight", F16, {D, H * HD}, r, 0.1f);
        w.add(b + "attn_k.weight", F16, {D, HKV * HD}, r, 0.1f);
        w.add(b + "attn_v.weight", F16, {D, HKV * HD}, r, 0.1f);
        w.add(b + "attn_output.weight", F16, {H * HD, D}, r, 0.1f);
        w.add(b + "attn_q_norm.weight", F32, {HD}, r, 0.1f, 1.0f);
        w.add(b + "attn_k_norm.weight", F32, {HD}, r, 0.1f, 1.0f);
        w.add(b + "ffn_norm.weight", F32, {D}, r, 0.1f, 1.0f);
        w.add(b + "ffn_gate.weight", F16, {D, FF}, r, 0.1f);
        w.add(b + "ffn_up.weight", F16, {D, FF}, r, 0.1f);
        w.add(b + "ffn_down.weight", F16, {FF, D}, r, 0.1f);
    }
    w.add("output_norm.weight", F32, {D}, r, 0.1f, 1.0f);
    w.add("output.weight", F16, {D, n_vocab}, r, 0.5f);
    w.write(path);
    return path;
}

}  // namespace rtf::lm::test
