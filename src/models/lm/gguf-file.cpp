#include "models/lm/gguf-file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <gguf.h>

#include "core/error.h"

namespace rtf::lm {

std::string GgufTensor::shape() const {
    int nd = 4;
    while (nd > 1 && ne[static_cast<size_t>(nd - 1)] == 1) --nd;
    std::string s = "[";
    for (int i = 0; i < nd; ++i) {
        if (i) s += ", ";
        s += std::to_string(ne[static_cast<size_t>(i)]);
    }
    return s + "]";
}

GgufFile::GgufFile(const std::string &path) : path_(path) {
    if (!std::filesystem::is_regular_file(path)) throw_setup("model file not found: " + path);
    gguf_init_params p{/*no_alloc=*/true, /*ctx=*/nullptr};
    meta_ = gguf_init_from_file(path.c_str(), p);
    if (!meta_) throw_setup(path + " is not a readable GGUF file");
    const int fd = ::open(path.c_str(), O_RDONLY);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
        if (fd >= 0) ::close(fd);
        gguf_free(meta_);
        throw_setup("cannot open " + path + ": " + std::strerror(errno));
    }
    map_size_ = static_cast<size_t>(st.st_size);
    map_ = ::mmap(nullptr, map_size_, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map_ == MAP_FAILED) {
        map_ = nullptr;
        gguf_free(meta_);
        throw_setup("cannot memory-map " + path + ": " + std::strerror(errno));
    }
}

GgufFile::~GgufFile() {
    if (map_) ::munmap(map_, map_size_);
    if (meta_) gguf_free(meta_);
}

std::string GgufFile::architecture() const {
    const int64_t k = gguf_find_key(meta_, "general.architecture");
    if (k < 0 || gguf_get_kv_type(meta_, k) != GGUF_TYPE_STRING) return "";
    return gguf_get_val_str(meta_, k);
}

std::optional<GgufTensor> GgufFile::find(const std::string &name) const {
    const int64_t id = gguf_find_tensor(meta_, name.c_str());
    if (id < 0) return std::nullopt;
    GgufTensor t;
    t.name = name;
    t.type = gguf_get_tensor_type(meta_, id);
    const int64_t *ne = gguf_get_tensor_ne(meta_, id);
    for (size_t i = 0; i < 4; ++i) t.ne[i] = ne[i];
    t.nbytes = gguf_get_tensor_size(meta_, id);
    const size_t off = gguf_get_data_offset(meta_) + gguf_get_tensor_offset(meta_, id);
    if (off + t.nbytes > map_size_)
        throw_setup(path_ + ": tensor '" + name + "' lies beyond the end of the file (truncated download?)");
    t.data = static_cast<const char *>(map_) + off;
    return t;
}

GgufTensor GgufFile::require(const std::string &name, std::initializer_list<ggml_type> types,
                             std::initializer_list<int64_t> ne) const {
    auto t = find(name);
    if (!t) throw_setup(path_ + ": missing tensor '" + name + "'");
    bool type_ok = types.size() == 0;
    std::string allowed;
    for (ggml_type ty : types) {
        type_ok |= ty == t->type;
        if (!allowed.empty()) allowed += '|';
        allowed += ggml_type_name(ty);
    }
    if (!type_ok)
        throw_setup(path_ + ": tensor '" + name + "' has type " + ggml_type_name(t->type) + ", expected " + allowed);
    if (ne.size()) {
        GgufTensor want;
        size_t i = 0;
        for (int64_t v : ne) want.ne[i++] = v;
        if (want.ne != t->ne)
            throw_setup(path_ + ": tensor '" + name + "' has shape " + t->shape() + ", expected " + want.shape());
    }
    return *t;
}

std::optional<int64_t> GgufFile::get_int(const std::string &key) const {
    const int64_t k = gguf_find_key(meta_, key.c_str());
    if (k < 0) return std::nullopt;
    switch (gguf_get_kv_type(meta_, k)) {
        case GGUF_TYPE_UINT8: return gguf_get_val_u8(meta_, k);
        case GGUF_TYPE_INT8: return gguf_get_val_i8(meta_, k);
        case GGUF_TYPE_UINT16: return gguf_get_val_u16(meta_, k);
        case GGUF_TYPE_INT16: return gguf_get_val_i16(meta_, k);
        case GGUF_TYPE_UINT32: return gguf_get_val_u32(meta_, k);
        case GGUF_TYPE_INT32: return gguf_get_val_i32(meta_, k);
        case GGUF_TYPE_UINT64: return static_cast<int64_t>(gguf_get_val_u64(meta_, k));
        case GGUF_TYPE_INT64: return gguf_get_val_i64(meta_, k);
        default: return std::nullopt;
    }
}

std::optional<double> GgufFile::get_float(const std::string &key) const {
    const int64_t k = gguf_find_key(meta_, key.c_str());
    if (k < 0) return std::nullopt;
    switch (gguf_get_kv_type(meta_, k)) {
        case GGUF_TYPE_FLOAT32: return gguf_get_val_f32(meta_, k);
        case GGUF_TYPE_FLOAT64: return gguf_get_val_f64(meta_, k);
        default: return std::nullopt;
    }
}

int64_t GgufFile::require_int(const std::string &key) const {
    auto v = get_int(key);
    if (!v) throw_setup(path_ + ": missing integer metadata key '" + key + "'");
    return *v;
}

}  // namespace rtf::lm
