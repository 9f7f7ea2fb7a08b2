#pragma once
// Fast seeded random numbers for twin weights. Not cryptographic; reproducible on every platform
// (no std:: distributions, whose algorithms differ between standard libraries).
//
// Streams: every tensor chunk gets its own generator seeded from (kit seed, tensor name, chunk
// index), so values do not depend on the order or number of tensors written, and chunks could be
// generated in parallel without changing a byte.
#include <cstdint>
#include <string_view>

namespace rtf::twin {

inline uint64_t splitmix64(uint64_t &state) noexcept {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

inline uint64_t fnv1a64(std::string_view s) noexcept {
    uint64_t h = 0xCBF29CE484222325ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 0x100000001B3ull;
    }
    return h;
}

// xoshiro256** (Blackman & Vigna, 2018), seeded through splitmix64.
class Rng {
public:
    explicit Rng(uint64_t seed) noexcept {
        uint64_t s = seed;
        for (auto &x : s_) x = splitmix64(s);
    }
    uint64_t next() noexcept {
        const uint64_t r = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return r;
    }
    // Approximately standard normal: Irwin-Hall sum of four 16-bit uniforms from one draw,
    // centred and scaled to unit variance. Bell-shaped, bounded at ±3.46 (no outliers that could
    // overflow F16 or blow up an activation), one generator step per value.
    float bell() noexcept {
        const uint64_t r = next();
        const uint32_t a = static_cast<uint32_t>(r & 0xFFFF) + static_cast<uint32_t>((r >> 16) & 0xFFFF) +
                           static_cast<uint32_t>((r >> 32) & 0xFFFF) + static_cast<uint32_t>(r >> 48);
        // sum of 4 U[0,1): mean 2, variance 4/12; (a + 2) / 65536 maps the 16-bit values to (0,1)
        constexpr float kScale = 1.0f / 65536.0f;
        constexpr float kInvStd = 1.7320508075688772f;  // 1 / sqrt(1/3)
        return ((static_cast<float>(a) + 2.0f) * kScale - 2.0f) * kInvStd;
    }

private:
    static uint64_t rotl(uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

inline uint64_t chunk_seed(uint64_t seed, std::string_view name, uint64_t chunk) noexcept {
    uint64_t s = seed ^ fnv1a64(name);
    s ^= splitmix64(chunk);
    return s;
}

}  // namespace rtf::twin
