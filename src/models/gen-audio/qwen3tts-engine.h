#pragma once
// Qwen3-TTS on the pinned llama.cpp (docs/families/qwen3-tts-pocket-tts.md §4.3): the talker through
// libllama (IMROPE positions, embeddings in, logits and hidden state out) and the mmproj's code
// predictor and code2wav through libmtmd's audio generation, split into the two engines a streaming
// pipeline needs:
//
//   Qwen3Generator  text -> frames of 16 codes (12.5 per second): the prompt is llama.cpp's (chat
//                   wrapper, think / language / pad rows as sums of token rows, the whole text up
//                   to <tts_text_eod>); per frame the talker's logits give code 0 (a sampler, or
//                   the caller's `Picker`), GEN_CODE the other 15 and the feedback row (+ <tts_pad>)
//                   that the talker decodes next; <|codec_eos_token|> ends the utterance.
//   Code2Wav        frames -> 24 kHz PCM (1920 samples a frame). code2wav runs whole 72-frame
//                   windows (clip.cpp pads a short one and advances its state by 72), so a
//                   streamed call decodes the current window again from its start state, with the
//                   frames so far, and returns only the samples not returned before; at 72 frames
//                   the window's end state becomes the next window's start. The code2wav graph is
//                   causal, so a window's early samples do not depend on the frames after them:
//                   the stream equals llama.cpp's one call per 72 frames (tests/families). Cost: a
//                   window is decoded once per call, so short calls multiply code2wav's work.
//
// A speaker reference (`speaker_file`) is encoded once at load by the mmproj's ECAPA encoder into one
// x-vector row, which the prompt carries (+ <tts_pad>) after the think rows, as llama.cpp's does.
// Not yet: other languages than English in the twin's vocabulary.
// Errors: rtf::Error(Setup) naming the file; rtf::Error(Runtime) naming the failing step.
// Not thread-safe: one thread per engine.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/lm/llama-runtime.h"
#include "models/lm/placement.h"

struct mtmd_context;

namespace rtf::gen_audio {

struct Qwen3Config {
    std::string backbone_path;  // qwen3-tts.gguf
    std::string mmproj_path;    // mmproj-qwen3-tts.gguf
    lm::ModelPlacement placement;
    uint32_t seed = 42;         // the code predictor's draws and the talker's sampler
    std::string language = "english";  // <|codec_language_NAME|>
    std::string speaker_file;   // reference voice (WAV/MP3/FLAC, resampled to 24 kHz); "" = the model's own
    // The talker's sampler (llama-tts's defaults): repetition penalty over the utterance, top-k,
    // top-p, min-p, temperature; the code predictor's top-k / top-p: llama-tts hands it its own
    // sampling top-k / top-p (40 / 0.95), so we do (0 = libmtmd's model default, 50 / 1.0).
    // The penalty's window: llama-tts asks for 1.05 over "-1 = the whole history", which
    // libllama's penalties sampler clamps to 0 = off (llama_sampler_init_penalties), so by
    // default it is off here too; -1 here means the utterance, n > 0 the last n codes.
    float repeat_penalty = 1.05f, top_p = 0.95f, min_p = 0.05f, temp = 0.8f;
    int penalty_last_n = 0;
    int top_k = 40, predictor_top_k = 40;
    float predictor_top_p = 0.95f;
    int max_frames = 0;         // 0 = until EOS (at most the context)
    void validate() const;
};

struct Qwen3Frame {
    std::vector<int32_t> codes;  // 16: code 0 from the talker, 15 from the predictor
    int64_t index = 0;
};

class Qwen3Generator {
public:
    // Code 0 (a token id of the talker's vocabulary) from the logits of the talker's last row;
    // empty = the sampler of Qwen3Config.
    using Picker = std::function<int32_t(const float *logits, int32_t n_vocab)>;

    explicit Qwen3Generator(const Qwen3Config &cfg);
    ~Qwen3Generator();
    Qwen3Generator(const Qwen3Generator &) = delete;
    Qwen3Generator &operator=(const Qwen3Generator &) = delete;

    // `voice`: "default" (Qwen3Config::speaker_file, or none) or a name given to add_voice();
    // another is rtf::Error(Usage) naming the loaded ones.
    void start(const std::string &text, const std::string &voice = "default");
    // One more reference voice, its x-vector encoded now, spoken when start() names it.
    void add_voice(const std::string &name, const std::string &file);
    std::vector<std::string> voice_names() const;  // "default" first
    bool next(Qwen3Frame &out);  // false at EOS, the frame cap or the context's end
    void set_picker(Picker p) { picker_ = std::move(p); }
    void set_max_frames(int n) { cfg_.max_frames = n; }  // per utterance (0 = until EOS)
    int64_t n_frames() const { return frame_; }           // frames made in the last utterance

    int n_embd() const { return n_embd_; }
    int32_t n_text() const { return codec_0_; }  // the codec block starts here
    const Qwen3Config &config() const { return cfg_; }
    llama_model *model() const { return llama_.model.get(); }
    int64_t n_prompt_rows() const { return n_prompt_; }
    double voice_ms() const { return voice_ms_; }  // the speaker encoder's time (0 = no reference)

private:
    void decode_rows(const float *rows, int n, int pos0, const char *what);
    int32_t pick();

    Qwen3Config cfg_;
    lm::LlamaInstance llama_;
    mtmd_context *mtmd_ = nullptr;
    int n_embd_ = 0;
    std::vector<float> tok_embd_;
    std::vector<float> speaker_;  // this utterance's x-vector row (n_embd), empty without a reference
    std::vector<std::pair<std::string, std::vector<float>>> voices_;  // every loaded voice ("default" first)
    std::vector<float> encode_voice(const std::string &file) const;
    double voice_ms_ = 0;
    int32_t codec_0_ = -1, codec_bos_ = -1, codec_eos_ = -1, codec_pad_ = -1, think_ = -1, think_bos_ = -1,
            think_eos_ = -1, lang_ = -1, tts_pad_ = -1, tts_bos_ = -1, tts_eos_ = -1;
    std::vector<int32_t> suppress_;
    lm::LlamaSamplerPtr sampler_;
    Picker picker_;
    uint32_t last_seed_ = 0xFFFFFFFFu;
    // The utterance.
    int pos_ = 0;
    int64_t frame_ = 0, n_prompt_ = 0;
    bool done_ = true;
    std::vector<float> h_;
};

class Code2Wav {
public:
    static constexpr int kWindow = 72;  // clip.cpp's wav_tfm_swa
    static constexpr int kCodes = 16;
    explicit Code2Wav(const Qwen3Generator &gen, int n_threads = 0);
    ~Code2Wav();
    Code2Wav(const Code2Wav &) = delete;
    Code2Wav &operator=(const Code2Wav &) = delete;

    void reset();
    // PCM of `n_frames` more frames (kCodes codes each, frame-major).
    std::vector<float> decode(const int32_t *codes, size_t n_frames);

private:
    mtmd_context *mtmd_ = nullptr;
    uint32_t seed_ = 0;
    std::vector<char> window_state_;  // the state the current window starts from
    std::vector<int32_t> window_;     // its frames so far
    size_t returned_ = 0;             // its samples already returned
};

}  // namespace rtf::gen_audio
