#pragma once
// MappedGguf — a GGUF file opened for an engine: the header through GgufFile (the one GGUF
// parser of rtfkit) plus ONE read-only memory map of the whole file, so tensor data is read
// in place (pages are shared with libllama's own mapping and the page cache; nothing is
// copied). Engines that keep weights on the host (the TTS's tables and heads) use it.
//
// Usage:
//   rtf::gguf::MappedGguf f("tts/MiniCPM-o-4_5-tts-F16.gguf");
//   auto emb = f.require("emb_code.0.weight", {GGML_TYPE_F32, GGML_TYPE_F16});  // any shape
//   auto head = f.require("head_code.0.weight", {GGML_TYPE_F32}, {6562, 768});  // exact shape
//   int64_t n_layer = f.require_int("llama.block_count");
//   f.header().find_string("general.architecture") ...   // all other metadata
//
// Errors: every error is rtf::Error(Setup) (the file is a model an engine needs) and its
// message names the file:
//   - missing file, directory, not GGUF, unreadable header (GgufFile's message)
//   - truncated data: the constructor fails before any tensor data is touched and names the
//     first tensor (in file order) that the file cuts off, with promised vs actual bytes
//   - require(): the tensor, and what was found vs expected (type or shape)
// Thread-safety: immutable after construction; const methods may be called concurrently.
// MappedTensor::data points into the mapping: valid while the MappedGguf lives.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include <ggml.h>

#include "models/gguf/gguf-file.h"

namespace rtf::gguf {

struct MappedTensor {
    std::string name;
    ggml_type type = GGML_TYPE_F32;
    std::array<int64_t, 4> ne{1, 1, 1, 1};  // ggml order: ne[0] is the contiguous dimension
    const void *data = nullptr;             // inside the mapping
    size_t nbytes = 0;
    std::string shape() const;  // "[768, 6562]" (trailing 1s dropped)
};

class MappedGguf {
public:
    explicit MappedGguf(const std::string &path);  // throws rtf::Error(Setup), see above
    ~MappedGguf();
    MappedGguf(const MappedGguf &) = delete;
    MappedGguf &operator=(const MappedGguf &) = delete;

    const std::string &path() const noexcept { return header_.path(); }
    // The parsed header: key/values, tensor infos, the gguf context (ctx()).
    const GgufFile &header() const noexcept { return header_; }

    std::optional<MappedTensor> find(const std::string &name) const;
    // The tensor, checked: present, one of `types` (empty: any type), and when `ne` is given
    // exactly that shape (missing trailing dims are 1). Throws rtf::Error(Setup)
    // "<file>: tensor '<name>' has type f16, expected f32" / "... has shape [..], expected [..]".
    MappedTensor require(const std::string &name, std::initializer_list<ggml_type> types,
                         std::initializer_list<int64_t> ne = {}) const;
    // An integer key of any integer type; throws rtf::Error(Setup) naming file and key when it
    // is missing or not an integer.
    int64_t require_int(const std::string &key) const;

private:
    GgufFile header_;
    const char *map_ = nullptr;
    size_t map_size_ = 0;
};

}  // namespace rtf::gguf
