#include "models/gguf/mapped-gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace rtf::gguf {

namespace {

// GgufFile reports a bad file as a usage error (the file was named by the user); for an
// engine the same file is a model it cannot start without, so the kind becomes Setup.
GgufFile open_header(const std::string &path) {
    try {
        return GgufFile(path);
    } catch (const Error &e) {
        throw_setup(e.what());
    }
}

std::string truncated_message(const GgufFile &h, uint64_t file_size) {
    std::string m = h.path() + ": truncated: the header promises " + std::to_string(h.expected_size()) +
                    " bytes, the file has " + std::to_string(file_size);
    if (const TensorInfo *cut = h.first_cut_tensor()) m += "; tensor '" + cut->name + "' is cut off";
    return m + " (an incomplete download or copy? fetch the file again)";
}

}  // namespace

std::string MappedTensor::shape() const { return format_shape(ne, shape_dims(ne)); }

MappedGguf::MappedGguf(const std::string &path) : header_(open_header(path)) {
    // Checked before mapping so that no tensor data is ever read from a short file.
    if (header_.truncated()) throw_setup(truncated_message(header_, header_.file_size()));
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
        const int err = errno;
        if (fd >= 0) ::close(fd);
        throw_setup(path + ": cannot open for reading: " + std::strerror(err));
    }
    // The file may have shrunk since the header was read.
    if (static_cast<uint64_t>(st.st_size) < header_.expected_size()) {
        ::close(fd);
        throw_setup(truncated_message(header_, static_cast<uint64_t>(st.st_size)));
    }
    map_size_ = static_cast<size_t>(st.st_size);
    void *m = ::mmap(nullptr, map_size_, PROT_READ, MAP_SHARED, fd, 0);
    const int err = errno;
    ::close(fd);
    if (m == MAP_FAILED) throw_setup(path + ": cannot memory-map: " + std::strerror(err));
    map_ = static_cast<const char *>(m);
}

MappedGguf::~MappedGguf() {
    if (map_) ::munmap(const_cast<char *>(map_), map_size_);
}

std::optional<MappedTensor> MappedGguf::find(const std::string &name) const {
    const TensorInfo *info = header_.find_tensor(name);
    if (!info) return std::nullopt;
    MappedTensor t;
    t.name = info->name;
    t.type = info->type;
    t.ne = info->ne;
    t.nbytes = static_cast<size_t>(info->nbytes);
    // In bounds: the constructor checked every tensor's end against the mapped size.
    t.data = map_ + header_.data_offset() + info->offset;
    return t;
}

MappedTensor MappedGguf::require(const std::string &name, std::initializer_list<ggml_type> types,
                                 std::initializer_list<int64_t> ne) const {
    auto t = find(name);
    if (!t) throw_setup(path() + ": missing tensor '" + name + "'");
    bool type_ok = types.size() == 0;
    std::string allowed;
    for (ggml_type ty : types) {
        type_ok |= ty == t->type;
        if (!allowed.empty()) allowed += '|';
        allowed += ggml_type_name(ty);
    }
    if (!type_ok)
        throw_setup(path() + ": tensor '" + name + "' has type " + ggml_type_name(t->type) + ", expected " + allowed);
    if (ne.size() > 4)
        throw_setup(path() + ": tensor '" + name + "' checked against " + std::to_string(ne.size()) +
                    " dimensions (ggml tensors have at most 4)");
    if (ne.size()) {
        std::array<int64_t, 4> want{1, 1, 1, 1};
        size_t i = 0;
        for (int64_t v : ne) want[i++] = v;
        if (want != t->ne)
            throw_setup(path() + ": tensor '" + name + "' has shape " + t->shape() + ", expected " +
                        format_shape(want, shape_dims(want)));
    }
    return *t;
}

int64_t MappedGguf::require_int(const std::string &key) const {
    if (auto v = header_.find_int(key)) return *v;
    if (header_.has_key(key))
        throw_setup(path() + ": metadata key '" + key + "' is " + gguf_type_name(header_.key_type(key)) +
                    ", expected an integer");
    throw_setup(path() + ": missing integer metadata key '" + key + "'");
}

}  // namespace rtf::gguf
