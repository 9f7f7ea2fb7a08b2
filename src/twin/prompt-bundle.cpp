#include "twin/prompt-bundle.h"

#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "twin/rng.h"

namespace rtf::twin {

namespace {

template <typename T>
uint64_t write_file(const std::string &path, const std::vector<T> &v) {
    std::FILE *f = std::fopen(path.c_str(), "wb");
    if (!f) throw_setup("cannot write " + path);
    const bool ok = std::fwrite(v.data(), sizeof(T), v.size(), f) == v.size();
    if (std::fclose(f) != 0 || !ok) throw_setup("write failed for " + path);
    return v.size() * sizeof(T);
}

}  // namespace

uint64_t write_prompt_bundle(const std::string &dir, int64_t L, uint64_t seed) {
    if (L < 2 || L % 2 != 0) throw_usage("twin: prompt length L=" + std::to_string(L) + " must be even and >= 2 for a prompt bundle");
    const int64_t Tp = L / 2 + 3;
    const std::filesystem::path d(dir);
    std::vector<float> spk(192);
    Rng rs(chunk_seed(seed, "spk_f32.bin", 0));
    for (auto &v : spk) v = rs.bell();
    std::vector<int32_t> tok(static_cast<size_t>(Tp));
    Rng rt(chunk_seed(seed, "prompt_tokens_i32.bin", 0));
    for (auto &v : tok) v = static_cast<int32_t>(rt.next() % 6561);
    std::vector<float> mel(static_cast<size_t>(L) * 80);
    Rng rm(chunk_seed(seed, "prompt_mel_btc_f32.bin", 0));
    for (auto &v : mel) v = rm.bell();
    return write_file((d / "spk_f32.bin").string(), spk) + write_file((d / "prompt_tokens_i32.bin").string(), tok) +
           write_file((d / "prompt_mel_btc_f32.bin").string(), mel);
}

}  // namespace rtf::twin
