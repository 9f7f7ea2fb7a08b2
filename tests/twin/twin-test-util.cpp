#include "twin-test-util.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace twin_test {

namespace fs = std::filesystem;

bool same_bytes(const std::string &a, const std::string &b) {
    if (fs::file_size(a) != fs::file_size(b)) return false;
    std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
    std::vector<char> ba(1 << 20), bb(1 << 20);
    while (fa && fb) {
        fa.read(ba.data(), static_cast<std::streamsize>(ba.size()));
        fb.read(bb.data(), static_cast<std::streamsize>(bb.size()));
        if (fa.gcount() != fb.gcount()) return false;
        if (!std::equal(ba.begin(), ba.begin() + fa.gcount(), bb.begin())) return false;
    }
    return true;
}

std::vector<float> read_f32(const rtf::gguf::GgufFile &f, const std::string &tensor) {
    const auto *t = f.find_tensor(tensor);
    if (!t) throw std::runtime_error(f.path() + ": no tensor " + tensor);
    std::vector<uint8_t> raw(t->nbytes);
    std::FILE *fp = std::fopen(f.path().c_str(), "rb");
    if (!fp) throw std::runtime_error("cannot open " + f.path());
    std::fseek(fp, static_cast<long>(f.data_offset() + t->offset), SEEK_SET);
    const size_t n = std::fread(raw.data(), 1, raw.size(), fp);
    std::fclose(fp);
    if (n != raw.size()) throw std::runtime_error("short read of " + tensor);
    const int64_t count = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    std::vector<float> out(static_cast<size_t>(count));
    if (t->type == GGML_TYPE_F32) {
        std::memcpy(out.data(), raw.data(), raw.size());
    } else {
        const auto *tr = ggml_get_type_traits(t->type);
        if (!tr->to_float) throw std::runtime_error("no float conversion for " + tensor);
        tr->to_float(raw.data(), out.data(), count);
    }
    return out;
}

}  // namespace twin_test
