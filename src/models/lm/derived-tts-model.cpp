#include "models/lm/derived-tts-model.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include <gguf.h>

#include "core/error.h"
#include "models/lm/tts-weights.h"

namespace fs = std::filesystem;

namespace rtf::lm {

namespace {
constexpr uint32_t kDerivedVersion = 1;

uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const auto *p = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

struct GgufFree { void operator()(gguf_context *c) const { gguf_free(c); } };
struct GgmlFree { void operator()(ggml_context *c) const { ggml_free(c); } };
struct FileClose { void operator()(FILE *f) const { std::fclose(f); } };

void write_all(FILE *f, const void *data, size_t n, const std::string &path) {
    if (n && std::fwrite(data, 1, n, f) != n) throw_setup("cannot write " + path + ": " + std::strerror(errno));
}
}  // namespace

std::string default_tts_cache_dir(const std::string &tts_path) {
    fs::path dir = fs::absolute(tts_path).parent_path();
    if (dir.filename() == "tts") dir = dir.parent_path();
    return (dir / ".rtf-cache").string();
}

std::string ensure_derived_tts_model(const TtsWeights &w, const std::string &cache_dir) {
    const gguf::MappedGguf &src = w.tts_file();
    const auto &d = w.dims();
    struct stat st {};
    if (::stat(src.path().c_str(), &st) != 0) throw_setup("cannot stat " + src.path());
    const std::string canon = fs::weakly_canonical(src.path()).string();
    uint64_t h = 1469598103934665603ull;
    h = fnv1a(h, canon.data(), canon.size());
    const int64_t size = st.st_size, mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    h = fnv1a(h, &size, sizeof size);
    h = fnv1a(h, &mtime_ns, sizeof mtime_ns);
    h = fnv1a(h, &kDerivedVersion, sizeof kDerivedVersion);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    const fs::path out = fs::path(cache_dir) / (fs::path(src.path()).stem().string() + ".llama-" + hex + ".gguf");
    if (fs::is_regular_file(out)) return out.string();

    std::error_code ec;
    fs::create_directories(cache_dir, ec);
    if (ec) throw_setup("cannot create the TTS cache folder " + cache_dir + ": " + ec.message());

    // Metadata: the TTS file's, without its text tokenizer.
    std::unique_ptr<gguf_context, GgufFree> dst(gguf_init_empty());
    gguf_set_kv(dst.get(), src.header().ctx());
    std::vector<std::string> drop;
    for (int64_t i = 0; i < gguf_get_n_kv(dst.get()); ++i) {
        const std::string k = gguf_get_key(dst.get(), i);
        if (k.rfind("tokenizer.", 0) == 0 || k == "llama.vocab_size") drop.push_back(k);
    }
    for (const auto &k : drop) gguf_remove_key(dst.get(), k.c_str());
    gguf_set_val_str(dst.get(), "tokenizer.ggml.model", "none");
    gguf_set_val_u32(dst.get(), "llama.vocab_size", static_cast<uint32_t>(d.n_codes));
    gguf_set_val_str(dst.get(), "rtf.derived.source", canon.c_str());
    gguf_set_val_u32(dst.get(), "rtf.derived.version", kDerivedVersion);

    // Tensor list: the transformer's own tensors, then the two remapped ones.
    struct Item {
        std::string name;
        const void *data;  // source bytes (nullptr: output.weight, transposed on write)
    };
    std::vector<Item> items;
    const gguf_context *sm = src.header().ctx();
    for (int64_t i = 0; i < gguf_get_n_tensors(sm); ++i) {
        const std::string n = gguf_get_tensor_name(sm, i);
        if (n.rfind("blk.", 0) == 0 || n == "output_norm.weight") items.push_back({n, src.find(n)->data});
    }
    const gguf::MappedTensor emb_code = *src.find("emb_code.0.weight");
    const size_t n_ctx_bytes = (items.size() + 2) * ggml_tensor_overhead();
    std::unique_ptr<ggml_context, GgmlFree> gctx(ggml_init({n_ctx_bytes, nullptr, /*no_alloc=*/true}));
    for (const auto &it : items) {
        const gguf::MappedTensor t = *src.find(it.name);
        ggml_tensor *gt = ggml_new_tensor(gctx.get(), t.type, 4, t.ne.data());
        ggml_set_name(gt, it.name.c_str());
        gguf_add_tensor(dst.get(), gt);
    }
    {
        ggml_tensor *te = ggml_new_tensor_2d(gctx.get(), emb_code.type, d.n_embd, d.n_codes);
        ggml_set_name(te, "token_embd.weight");
        gguf_add_tensor(dst.get(), te);
        items.push_back({"token_embd.weight", emb_code.data});
        ggml_tensor *to = ggml_new_tensor_2d(gctx.get(), GGML_TYPE_F32, d.n_embd, d.n_codes);
        ggml_set_name(to, "output.weight");
        gguf_add_tensor(dst.get(), to);
        items.push_back({"output.weight", nullptr});
    }

    const fs::path tmp = out.string() + ".tmp-" + std::to_string(::getpid());
    {
        std::unique_ptr<FILE, FileClose> f(std::fopen(tmp.c_str(), "wb"));
        if (!f) throw_setup("cannot write the TTS cache file " + tmp.string() + ": " + std::strerror(errno) +
                            " (pass a writable cache folder)");
        std::vector<char> meta(gguf_get_meta_size(dst.get()));
        gguf_get_meta_data(dst.get(), meta.data());
        write_all(f.get(), meta.data(), meta.size(), tmp.string());
        const size_t align = gguf_get_alignment(dst.get());
        size_t written = 0;
        std::vector<float> col;
        for (size_t i = 0; i < items.size(); ++i) {
            const int64_t id = gguf_find_tensor(dst.get(), items[i].name.c_str());
            const size_t off = gguf_get_tensor_offset(dst.get(), id), nbytes = gguf_get_tensor_size(dst.get(), id);
            static const char zeros[64] = {};
            while (written < off) {
                const size_t n = std::min(sizeof zeros, off - written);
                write_all(f.get(), zeros, n, tmp.string());
                written += n;
            }
            if (items[i].data) {
                write_all(f.get(), items[i].data, nbytes, tmp.string());
            } else {
                // output.weight row r = head_code column r (head is [n_embd][n_codes]).
                col.resize(static_cast<size_t>(d.n_embd));
                for (int r = 0; r < d.n_codes; ++r) {
                    for (int j = 0; j < d.n_embd; ++j)
                        col[static_cast<size_t>(j)] = w.head()[static_cast<size_t>(j) * static_cast<size_t>(d.n_codes) + static_cast<size_t>(r)];
                    write_all(f.get(), col.data(), col.size() * sizeof(float), tmp.string());
                }
            }
            written += nbytes;
        }
        while (written % align) {
            write_all(f.get(), "", 1, tmp.string());
            ++written;
        }
        if (std::fflush(f.get()) != 0) throw_setup("cannot write " + tmp.string() + ": " + std::strerror(errno));
    }
    fs::rename(tmp, out, ec);
    if (ec) {
        fs::remove(tmp);
        throw_setup("cannot move the TTS cache file into place at " + out.string() + ": " + ec.message());
    }
    // Older derivations of the same source (it was rewritten or touched since: another
    // size/mtime hash) are stale: drop them so the cache holds one file per source.
    const std::string prefix = fs::path(src.path()).stem().string() + ".llama-";
    for (const auto &e : fs::directory_iterator(cache_dir, ec)) {
        const std::string name = e.path().filename().string();
        if (e.path() != out && name.rfind(prefix, 0) == 0 && e.path().extension() == ".gguf" &&
            name.size() == prefix.size() + 16 + 5)
            fs::remove(e.path(), ec);
    }
    return out.string();
}

}  // namespace rtf::lm
