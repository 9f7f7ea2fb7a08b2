#include "models/gguf/gguf-file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/error.h"

namespace rtf::gguf {

namespace fs = std::filesystem;

int shape_dims(const std::array<int64_t, 4> &ne) {
    int n = 1;
    for (int i = 0; i < 4; ++i)
        if (ne[static_cast<size_t>(i)] != 1) n = i + 1;
    return n;
}

std::string format_shape(const std::array<int64_t, 4> &ne, int n_dims) {
    n_dims = std::max(1, std::min(n_dims, 4));
    std::string s = "[";
    for (int i = 0; i < n_dims; ++i) {
        if (i) s += ", ";
        s += std::to_string(ne[static_cast<size_t>(i)]);
    }
    return s + "]";
}

bool has_gguf_magic(const std::string &path) {
    std::FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) return false;
    char magic[4] = {};
    const size_t n = std::fread(magic, 1, 4, f);
    std::fclose(f);
    return n == 4 && std::memcmp(magic, GGUF_MAGIC, 4) == 0;
}

GgufFile::GgufFile(const std::string &path) : path_(path) {
    std::error_code ec;
    const auto st = fs::status(path, ec);
    if (ec || !fs::exists(st)) throw_usage(path + ": no such file");
    if (fs::is_directory(st)) throw_usage(path + ": is a directory, not a GGUF file");
    file_size_ = static_cast<uint64_t>(fs::file_size(path, ec));
    if (ec) throw_usage(path + ": cannot read file size (" + ec.message() + ")");
    {
        std::FILE *f = std::fopen(path.c_str(), "rb");
        if (!f) throw_usage(path + ": cannot open for reading");
        std::fclose(f);
    }
    if (!has_gguf_magic(path))
        throw_usage(path + ": not a GGUF file (it does not start with the magic bytes \"GGUF\")");

    gguf_init_params params{};
    params.no_alloc = true;
    params.ctx = nullptr;
    ctx_.reset(gguf_init_from_file(path.c_str(), params));
    if (!ctx_)
        throw_usage(path + ": GGUF header unreadable (truncated inside the header, or a corrupt key/value "
                           "or tensor info)");

    data_offset_ = gguf_get_data_offset(ctx_.get());
    expected_size_ = data_offset_;
    const int64_t n = gguf_get_n_tensors(ctx_.get());
    tensors_.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        TensorInfo t;
        t.name = gguf_get_tensor_name(ctx_.get(), i);
        t.type = gguf_get_tensor_type(ctx_.get(), i);
        const int64_t *ne = gguf_get_tensor_ne(ctx_.get(), i);
        for (size_t d = 0; d < 4; ++d) t.ne[d] = ne[d];
        t.n_dims = shape_dims(t.ne);
        t.offset = gguf_get_tensor_offset(ctx_.get(), i);
        t.nbytes = gguf_get_tensor_size(ctx_.get(), i);
        expected_size_ = std::max<uint64_t>(expected_size_, data_offset_ + t.offset + t.nbytes);
        tensors_.push_back(std::move(t));
    }
}

const TensorInfo *GgufFile::first_cut_tensor() const {
    for (const auto &t : tensors_)
        if (data_offset_ + t.offset + t.nbytes > file_size_) return &t;
    return nullptr;
}

const TensorInfo *GgufFile::find_tensor(const std::string &name) const {
    for (const auto &t : tensors_)
        if (t.name == name) return &t;
    return nullptr;
}

int64_t GgufFile::key_id(const std::string &key) const { return gguf_find_key(ctx_.get(), key.c_str()); }

bool GgufFile::has_key(const std::string &key) const { return key_id(key) >= 0; }

std::vector<std::string> GgufFile::keys() const {
    std::vector<std::string> out;
    const int64_t n = gguf_get_n_kv(ctx_.get());
    for (int64_t i = 0; i < n; ++i) out.emplace_back(gguf_get_key(ctx_.get(), i));
    return out;
}

gguf_type GgufFile::key_type(const std::string &key) const {
    const int64_t id = key_id(key);
    if (id < 0) throw_usage(path_ + ": metadata key '" + key + "' is missing");
    return gguf_get_kv_type(ctx_.get(), id);
}

std::optional<int64_t> GgufFile::find_int(const std::string &key) const {
    const int64_t id = key_id(key);
    if (id < 0) return std::nullopt;
    const gguf_context *c = ctx_.get();
    switch (gguf_get_kv_type(c, id)) {
        case GGUF_TYPE_UINT8: return gguf_get_val_u8(c, id);
        case GGUF_TYPE_INT8: return gguf_get_val_i8(c, id);
        case GGUF_TYPE_UINT16: return gguf_get_val_u16(c, id);
        case GGUF_TYPE_INT16: return gguf_get_val_i16(c, id);
        case GGUF_TYPE_UINT32: return gguf_get_val_u32(c, id);
        case GGUF_TYPE_INT32: return gguf_get_val_i32(c, id);
        case GGUF_TYPE_UINT64: return static_cast<int64_t>(gguf_get_val_u64(c, id));
        case GGUF_TYPE_INT64: return gguf_get_val_i64(c, id);
        default: return std::nullopt;
    }
}

int64_t GgufFile::get_int(const std::string &key) const {
    if (!has_key(key)) throw_usage(path_ + ": metadata key '" + key + "' is missing");
    auto v = find_int(key);
    if (!v)
        throw_usage(path_ + ": metadata key '" + key + "' is " + gguf_type_name(key_type(key)) +
                    ", expected an integer");
    return *v;
}

std::optional<double> GgufFile::find_float(const std::string &key) const {
    const int64_t id = key_id(key);
    if (id < 0) return std::nullopt;
    switch (gguf_get_kv_type(ctx_.get(), id)) {
        case GGUF_TYPE_FLOAT32: return gguf_get_val_f32(ctx_.get(), id);
        case GGUF_TYPE_FLOAT64: return gguf_get_val_f64(ctx_.get(), id);
        default: {
            auto i = find_int(key);
            if (i) return static_cast<double>(*i);
            return std::nullopt;
        }
    }
}

double GgufFile::get_float(const std::string &key) const {
    if (!has_key(key)) throw_usage(path_ + ": metadata key '" + key + "' is missing");
    auto v = find_float(key);
    if (!v) throw_usage(path_ + ": metadata key '" + key + "' is not a number");
    return *v;
}

std::optional<std::string> GgufFile::find_string(const std::string &key) const {
    const int64_t id = key_id(key);
    if (id < 0 || gguf_get_kv_type(ctx_.get(), id) != GGUF_TYPE_STRING) return std::nullopt;
    return std::string(gguf_get_val_str(ctx_.get(), id));
}

std::string GgufFile::get_string(const std::string &key) const {
    if (!has_key(key)) throw_usage(path_ + ": metadata key '" + key + "' is missing");
    auto v = find_string(key);
    if (!v) throw_usage(path_ + ": metadata key '" + key + "' is not a string");
    return *v;
}

size_t GgufFile::array_size(const std::string &key) const {
    const int64_t id = key_id(key);
    if (id < 0 || gguf_get_kv_type(ctx_.get(), id) != GGUF_TYPE_ARRAY) return 0;
    return gguf_get_arr_n(ctx_.get(), id);
}

std::string GgufFile::value_text(const std::string &key) const {
    const int64_t id = key_id(key);
    if (id < 0) return "(missing)";
    const auto t = gguf_get_kv_type(ctx_.get(), id);
    if (t == GGUF_TYPE_STRING) {
        std::string s = gguf_get_val_str(ctx_.get(), id);
        if (s.size() > 60) s = s.substr(0, 57) + "...";
        return s;
    }
    if (t == GGUF_TYPE_ARRAY) {
        return "[" + std::to_string(gguf_get_arr_n(ctx_.get(), id)) + " " +
               gguf_type_name(gguf_get_arr_type(ctx_.get(), id)) + "]";
    }
    if (t == GGUF_TYPE_BOOL) return gguf_get_val_bool(ctx_.get(), id) ? "true" : "false";
    if (t == GGUF_TYPE_FLOAT32 || t == GGUF_TYPE_FLOAT64) {
        std::ostringstream os;
        os << *find_float(key);
        return os.str();
    }
    if (auto i = find_int(key)) return std::to_string(*i);
    return "?";
}

}  // namespace rtf::gguf
