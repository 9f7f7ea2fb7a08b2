#pragma once
// GgufFile — read-only view of a GGUF file's header (key/values and tensor infos), without
// loading tensor data. The one GGUF parser of rtfkit: used by the layout check, `rtf inspect`,
// `rtf twin --like`, and (through MappedGguf, mapped-gguf.h, which adds the tensor data) the
// engines' loaders.
//
// Usage:
//   rtf::gguf::GgufFile f("model.gguf");          // throws rtf::Error(Usage) naming the file
//   if (auto *t = f.find_tensor("output.weight")) ... t->ne[1] ...
//   uint32_t n = f.get_u32("qwen3.block_count");  // throws if missing / wrong type
//
// Errors (all rtf::Error(Usage), message names the file):
//   - unreadable path, directory
//   - not a GGUF file (magic is not "GGUF")
//   - header unreadable (truncated inside the header, corrupt key/value or tensor info)
// A file whose tensor data is shorter than the header says is NOT an error here (the header
// is readable): `truncated()` reports it, so the layout check can name the first tensor cut.
// Thread-safety: immutable after construction; const methods may be called concurrently.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ggml.h>
#include <gguf.h>

namespace rtf::gguf {

struct TensorInfo {
    std::string name;
    ggml_type type = GGML_TYPE_F32;
    std::array<int64_t, 4> ne{1, 1, 1, 1};  // ggml order: ne[0] is the contiguous dimension
    int n_dims = 1;                          // highest dimension with ne > 1 (at least 1)
    uint64_t offset = 0;                     // from the start of the data section, bytes
    uint64_t nbytes = 0;                     // ggml_nbytes of the tensor
};

// "[512, 6561]" (trailing 1s dropped, at least one value).
std::string format_shape(const std::array<int64_t, 4> &ne, int n_dims);
// Dimensions used by `ne` (highest index with ne > 1, plus one; at least 1).
int shape_dims(const std::array<int64_t, 4> &ne);

struct GgufCtxDeleter {
    void operator()(gguf_context *c) const noexcept { gguf_free(c); }
};
using GgufCtxPtr = std::unique_ptr<gguf_context, GgufCtxDeleter>;

class GgufFile {
public:
    explicit GgufFile(const std::string &path);

    const std::string &path() const noexcept { return path_; }
    uint64_t file_size() const noexcept { return file_size_; }
    uint64_t data_offset() const noexcept { return data_offset_; }
    // Bytes the header promises: data_offset + end of the last tensor's data.
    uint64_t expected_size() const noexcept { return expected_size_; }
    bool truncated() const noexcept { return file_size_ < expected_size_; }
    // First tensor (in file order) whose data extends past the end of the file, or nullptr.
    const TensorInfo *first_cut_tensor() const;

    const std::vector<TensorInfo> &tensors() const noexcept { return tensors_; }
    const TensorInfo *find_tensor(const std::string &name) const;

    // Key/values.
    bool has_key(const std::string &key) const;
    std::vector<std::string> keys() const;
    gguf_type key_type(const std::string &key) const;  // throws if missing
    // Integer keys of any integer type; throws rtf::Error(Usage) naming file and key when the
    // key is missing or not an integer.
    int64_t get_int(const std::string &key) const;
    std::optional<int64_t> find_int(const std::string &key) const;
    double get_float(const std::string &key) const;  // f32/f64 (or integer)
    std::optional<double> find_float(const std::string &key) const;
    std::string get_string(const std::string &key) const;
    std::optional<std::string> find_string(const std::string &key) const;
    // Number of elements of an array key (0 when missing or not an array).
    size_t array_size(const std::string &key) const;
    // Value of any key as short text for reports ("qwen3", "36", "[151748 strings]").
    std::string value_text(const std::string &key) const;

    // The underlying gguf context (header only; tensor data not loaded).
    const gguf_context *ctx() const noexcept { return ctx_.get(); }

private:
    int64_t key_id(const std::string &key) const;

    std::string path_;
    uint64_t file_size_ = 0;
    uint64_t data_offset_ = 0;
    uint64_t expected_size_ = 0;
    GgufCtxPtr ctx_;
    std::vector<TensorInfo> tensors_;
};

// True when the file starts with the GGUF magic. False for unreadable or short files.
bool has_gguf_magic(const std::string &path);

}  // namespace rtf::gguf
