#pragma once
// Writes a tiny random-weight token2wav kit (the five GGUF files, spec §1.5-1.9 layout,
// small widths and block counts) for unit tests. Deterministic for a seed.
#include <string>

namespace rtf::t2w::test {

struct TinyKitDims {
    int d = 32, heads = 2, ffn = 64, tok_layers = 2, mel_layers = 1;
    int dit_h = 32, dit_heads = 2, dit_mlp = 64, depth = 2;
    int steps = 2;  // prompt cache n_timesteps
    int L = 60;     // prompt attention-cache length (even)
    int c0 = 16, f0w = 16;
};

// Writes encoder/flow_extra/flow_matching/hifigan2/prompt_cache.gguf into dir.
void write_tiny_kit(const std::string &dir, const TinyKitDims &dims = {}, unsigned seed = 1);

}  // namespace rtf::t2w::test
