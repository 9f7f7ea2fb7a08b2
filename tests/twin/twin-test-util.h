#pragma once
// Test helpers: temporary directories, whole-file comparison, tensors read back as float.
#include <filesystem>
#include <string>
#include <vector>

#include "models/gguf/gguf-file.h"

namespace twin_test {

struct TmpDir {
    std::filesystem::path dir;
    explicit TmpDir(const std::string &tag);
    ~TmpDir();
    std::string operator/(const std::string &name) const { return (dir / name).string(); }
};

bool same_bytes(const std::string &a, const std::string &b);
std::vector<float> read_f32(const rtf::gguf::GgufFile &f, const std::string &tensor);

}  // namespace twin_test
