#pragma once
// Knobs of the Token2Wav engine (token2mel + HiFT vocoder). One struct, validated once;
// every field is a CLI flag of `rtf t2w` and a JSON key.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rtf::t2w {

struct T2wConfig {
    // CPU threads for the token2mel graphs (encoder + DiT flow matching); ignored by
    // non-CPU devices. Default 2 (this project's CI machine).
    int threads_t2m = 2;
    // CPU threads for the HiFT vocoder graphs. Default 2.
    int threads_voc = 2;
    // ggml backend device for each part: "CPU" or any name `rtf devices` lists (e.g. "CUDA0").
    std::string device_t2m = "CPU";
    std::string device_voc = "CPU";
    // Euler steps of the flow-matching solver. 0 = the prompt cache's n_timesteps (the
    // reference runtime's default, 5 in the official file). A non-zero value must equal it:
    // the per-step DiT caches in prompt_cache.gguf exist for exactly that many steps.
    int flow_steps = 0;
    // Classifier-free guidance (rate 0.7, batch of 2 per estimator call). Off = conditional
    // branch only: half the DiT work, different audio.
    bool cfg = true;
    // Silence tokens (code 4218) the stream's token buffer starts with and returns to after
    // each final window: 3 in the reference's T2W thread; 0 reproduces token2wav-example's
    // windowing (used by the golden data).
    int leading_silence = 3;
    // Compute type of the matrix weights of each part, converted once at load from the
    // files' F32: "f32" (the reference's math, default), "f16", "bf16", "q8_0" for
    // token2mel (every linear layer of the encoder and the DiT); "f32", "f16" (im2col +
    // ggml's mul_mat) or "bf16" (oneDNN's convolution on the CPU, onednn-conv.h; refused at
    // load without oneDNN) for the vocoder's convolutions (the transposed-conv upsamplers stay
    // f32). Anything but f32 changes the output: report its SNR against f32 (rtf t2w does).
    std::string type_t2m = "f32";
    std::string type_voc = "f32";
    // Tokens in an utterance's first window (its last 3 are look-ahead): 28 = the
    // reference (3 silence + 25 codes); fewer start the first audio after fewer codes
    // (8 + lead silence 3: after 5 codes, 0.2 s of speech) at the price of other math for
    // the utterance (T2wStream). 8..28.
    int first_window = 28;
    // Tokens of the windows after the first, before the reference's 28 (each 8..28, its last 3
    // look-ahead; at most 8): a ramp from a short first window up to full ones, so that each
    // window's audio lasts while the next is made (a short first window followed at once by
    // 28-token windows leaves a gap: 0.2 s of audio must cover 25 codes and a full window).
    // Empty = none (the reference; with first_window 28 a ramp still changes the windows).
    std::vector<int> ramp;

    // Tokens of an utterance's window #index (0 = the first): first_window, then ramp, then 28.
    int window_tokens(size_t index) const;
    // The reference's windowing (first_window 28, no ramp).
    bool reference_windows() const;

    // The defaults with these compute types (tests and A/Bs that vary only the types).
    static T2wConfig typed(const std::string &t2m, const std::string &voc = "f32") {
        T2wConfig c;
        c.type_t2m = t2m;
        c.type_voc = voc;
        return c;
    }
    // Throws rtf::Error(Usage) naming the field and the allowed values.
    void validate() const;
    nlohmann::json to_json() const;
};

// The accepted compute types: type_t2m, type_voc (the knob table lists these, nothing else).
const std::vector<std::string> &t2m_types();
const std::vector<std::string> &voc_types();

}  // namespace rtf::t2w
