#pragma once
// A voice of MiniCPM-o's Token2Wav: one prompt cache (prompt_cache.gguf, docs/minicpmo45.md §2.9):
// the speaker vector, the conformer caches after the voice's prompt, and the DiT's per-step
// attention and convolution caches. Nothing else in Token2Wav depends on the speaker.
//
//   auto model = T2wModel::load("kit/token2wav-gguf");          // its default voice loaded
//   auto v = model->load_voice("kit/voices/twin-a/prompt_cache.gguf", "twin-a");
//   T2wStream st(*model, cfg);
//   st.set_voice(v);                                            // back to v's prompt state
//
// A voice must have the shapes of the model it is used with (its prompt length L and flow
// steps N are those of the model's default voice: load_voice() checks, naming the file and
// tensor). Cloning a voice from a recording needs a speaker encoder and a speech tokenizer
// that MiniCPM-o's GGUF files do not hold: `rtf t2w-prompt` builds a cache from a prompt
// bundle (speaker vector, prompt codes, prompt mel) made elsewhere.
//
// Immutable after load: any number of streams (and threads) share one.
#include <memory>
#include <string>
#include <vector>

#include "models/t2w/t2w-model.h"

namespace rtf::t2w {

struct Voice {
    std::string name;  // "default" for the model's own prompt cache
    std::string path;  // the prompt_cache.gguf it came from
    PromptCacheInfo info;
    std::unique_ptr<GgufWeights> weights;  // the file's tensors, on the token2mel device
    // Host copies: the initial per-stream state.
    std::vector<float> spk;       // [192]
    std::vector<float> conf_cnn;  // [d, 6]
    std::vector<float> conf_att;  // [2hd, L, H, layers]
    std::vector<float> est_cnn;   // [2d, 2, depth·N, 2]

    // estimator_att_cache [2·head_dim, L, n_heads·depth·N, 2] on the token2mel device.
    ggml_tensor *est_att_cache() const { return weights->get("prompt_cache.estimator_att_cache"); }
    size_t bytes() const;
};

// Whether `name` may name a kit's voice (voices/NAME/): 1-32 of a-z, 0-9, '_', '-'; "default"
// is the kit's own prompt cache and names no folder.
inline bool valid_voice_name(const std::string &name) {
    if (name.empty() || name.size() > 32 || name == "default") return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
    return true;
}

}  // namespace rtf::t2w
