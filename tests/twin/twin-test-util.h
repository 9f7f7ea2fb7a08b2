#pragma once
// Test helpers: whole-file comparison, tensors read back as float (scratch folders:
// common/scratch-dir.h).
#include <string>
#include <vector>

#include "models/gguf/gguf-file.h"

namespace twin_test {

bool same_bytes(const std::string &a, const std::string &b);
std::vector<float> read_f32(const rtf::gguf::GgufFile &f, const std::string &tensor);

}  // namespace twin_test
