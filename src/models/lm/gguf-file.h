#pragma once
// A GGUF file opened read-only: metadata through ggml's gguf API, tensor data through one
// read-only memory map (pages are shared with libllama's own mapping and the page cache).
// Errors name the file and the tensor. Thread-safety: const methods may be called from
// any thread.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <ggml.h>

struct gguf_context;

namespace rtf::lm {

struct GgufTensor {
    std::string name;
    ggml_type type = GGML_TYPE_F32;
    std::array<int64_t, 4> ne{1, 1, 1, 1};
    const void *data = nullptr;  // inside the mapping
    size_t nbytes = 0;
    std::string shape() const;   // "[768, 6562]"
};

class GgufFile {
public:
    explicit GgufFile(const std::string &path);  // throws rtf::Error(Setup)
    ~GgufFile();
    GgufFile(const GgufFile &) = delete;
    GgufFile &operator=(const GgufFile &) = delete;

    const std::string &path() const { return path_; }
    const gguf_context *meta() const { return meta_; }
    std::string architecture() const;  // general.architecture, "" if absent

    std::optional<GgufTensor> find(const std::string &name) const;
    // The tensor, checked: present, one of the `types`, and (when given) exactly `ne`
    // (trailing dims 1). Throws rtf::Error(Setup) naming file, tensor, found and expected.
    GgufTensor require(const std::string &name, std::initializer_list<ggml_type> types,
                       std::initializer_list<int64_t> ne = {}) const;

    std::optional<int64_t> get_int(const std::string &key) const;  // any integer type
    std::optional<double> get_float(const std::string &key) const;
    int64_t require_int(const std::string &key) const;

private:
    std::string path_;
    gguf_context *meta_ = nullptr;
    void *map_ = nullptr;
    size_t map_size_ = 0;
};

}  // namespace rtf::lm
