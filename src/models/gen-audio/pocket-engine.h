#pragma once
// Pocket TTS on the pinned llama.cpp: the backbone (libllama, arch `pockettts`) and the mmproj's
// audio generator (libmtmd's experimental audio-generation API, mtmd.h `mtmd_gen_audio_process`),
// split into the two engines a streaming pipeline needs (docs/families/qwen3-tts-pocket-tts.md §4.4):
//
//   PocketGenerator  text -> latent frames (32 floats, 12.5 per second): the backbone's hidden
//                    state goes through the flow net (GEN_CODE), whose output row is fed back
//                    to the backbone as the next input; text over 50 tokens is spoken in
//                    chunks, each re-prompted on top of the voice conditioning.
//   MimiDecoder      latent frames -> 24 kHz PCM (GEN_WAV, 1920 samples per frame), its
//                    streaming state carried between calls, so PCM leaves in chunks of any
//                    number of frames; reset where a new text chunk starts (as llama.cpp does).
//
// Each engine owns its own mtmd context (the same mmproj loaded twice): a clip context runs
// one graph at a time, and the two run on different pipeline threads. The generator's noise
// comes from its context's RNG, seeded with PocketConfig::seed at every utterance's start,
// so the same text, seed and voice give the same latents (and llama-tts's, which runs the
// same helper logic in one context: tests/pocket).
//
//   PocketConfig c; c.backbone_path = "kit/pocket-tts.gguf"; c.mmproj_path = "kit/mmproj-pocket-tts.gguf";
//   PocketGenerator gen(c);  MimiDecoder dec(gen);
//   gen.start("Hello world.");
//   PocketFrame f; std::vector<float> pcm;
//   while (gen.next(f)) { if (f.new_chunk) dec.reset(); pcm = dec.decode(f.latent.data(), 1); }
//
// Errors: rtf::Error(Setup) naming the file when libllama / libmtmd refuse a file or a
// vocabulary lacks <|audio_bos|>; rtf::Error(Usage) for an empty text or a bad speaker file;
// rtf::Error(Runtime) naming the step when a decode fails. Not thread-safe: one thread per engine.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/lm/llama-runtime.h"
#include "models/lm/placement.h"

struct mtmd_context;

namespace rtf::pocket {

struct PocketConfig {
    std::string backbone_path;   // pocket-tts.gguf
    std::string mmproj_path;     // mmproj-pocket-tts.gguf
    lm::ModelPlacement placement;  // the backbone's; its threads also run the mmproj graphs
    uint32_t seed = 42;          // the flow's noise (llama-tts: -s)
    // Noise temperature of the flow step; 0 = the model variant's tuned value (llama.cpp's
    // per-pack table: english 0.3), else clip's default 0.7.
    float temp = 0;
    std::string speaker_file;    // reference voice (WAV/MP3/FLAC, resampled to 24 kHz); "" = none
    // Frames per text chunk beyond llama.cpp's own budget ((tokens/3 + 2) x 12.5); 0 = no cap.
    int max_frames = 0;

    void validate() const;       // throws rtf::Error(Usage) naming the field
    nlohmann::json to_json() const;
};

struct PocketFrame {
    std::vector<float> latent;   // n_latent floats (normalized; the decoder denormalizes)
    bool new_chunk = false;      // first frame of a later text chunk: the decoder restarts here
    int64_t index = 0;           // frame index in the utterance
};

struct PocketTimings {
    double load_ms = 0, voice_ms = 0;
    double prefill_ms = 0;       // the last utterance's prompt decodes (every chunk)
    int64_t n_prompt_rows = 0;
    int64_t n_frames = 0;        // frames made in the last utterance
    double backbone_ms = 0;      // feedback decodes
    double flow_ms = 0;          // GEN_CODE calls
    double decode_ms = 0;        // MimiDecoder (GEN_WAV), its own thread
    int64_t n_decode_calls = 0;
    nlohmann::json to_json() const;
};

class PocketGenerator {
public:
    explicit PocketGenerator(const PocketConfig &cfg);
    ~PocketGenerator();
    PocketGenerator(const PocketGenerator &) = delete;
    PocketGenerator &operator=(const PocketGenerator &) = delete;

    // Normalizes `text` as llama.cpp does (newlines to spaces, ';' to ',', trimmed, first letter
    // capitalized, a final '.' after a letter or digit), tokenizes it, splits it into chunks of at
    // most 50 tokens at sentence (then clause) ends, and prefills the first chunk.
    // `voice`: "default" (PocketConfig::speaker_file, or none) or a name given to add_voice();
    // another is rtf::Error(Usage) naming the loaded ones.
    void start(const std::string &text, const std::string &voice = "default");
    // One more reference voice, encoded now (the speaker encoder on `file`), spoken when start()
    // names it. rtf::Error(Usage) for a bad name or a file that is not audio.
    void add_voice(const std::string &name, const std::string &file);
    std::vector<std::string> voice_names() const;  // "default" first
    // The next frame; false once the utterance is over (every chunk at its EOS tail or budget).
    bool next(PocketFrame &out);
    // Stops the utterance (the next next() returns false).
    void stop() { done_ = true; }

    int n_latent() const { return n_latent_; }
    int n_embd() const { return n_embd_; }
    int sample_rate() const { return sample_rate_; }
    std::string variant() const { return variant_; }
    float temp() const;                          // the temperature in use
    int64_t n_text_tokens() const { return n_tokens_; }
    int64_t n_chunks() const { return static_cast<int64_t>(chunks_.size()); }
    int64_t n_voice_rows() const { return static_cast<int64_t>(voice_.size()) / n_embd_; }
    const PocketTimings &timings() const { return timings_; }
    PocketTimings &timings() { return timings_; }
    const PocketConfig &config() const { return cfg_; }
    llama_model *model() const { return llama_.model.get(); }

    // llama.cpp's text normalization (exposed for tests).
    static std::string prepare_text(const std::string &in, bool pad_short);

private:
    void prompt_chunk(size_t idx, int pos0);
    void push_row(std::vector<float> &dst, int32_t token) const;
    std::vector<float> encode_voice(const std::string &file) const;  // bos_before_voice + the encoder's rows
    std::vector<int32_t> tokenize(const std::string &s) const;
    std::vector<std::vector<int32_t>> split_chunks(const std::vector<int32_t> &ids) const;
    void decode_rows(const float *rows, int n, int pos0, const char *what);

    PocketConfig cfg_;
    lm::LlamaInstance llama_;
    mtmd_context *mtmd_ = nullptr;
    int n_embd_ = 0, n_latent_ = 0, sample_rate_ = 24000;
    std::string variant_;
    float pack_temp_ = 0;
    int pack_tail_ = 0;
    bool pack_pad_short_ = false;
    int32_t tok_bos_voice_ = -1, tok_audio_bos_ = -1;
    std::vector<float> tok_embd_;   // the backbone's token rows, dequantized
    std::vector<float> voice_;      // this utterance's speaker rows (n_embd each), with bos_before_voice first
    std::vector<std::pair<std::string, std::vector<float>>> voices_;  // every loaded voice ("default" first)
    uint32_t last_seed_ = 0xFFFFFFFFu;

    // The utterance.
    std::vector<std::vector<int32_t>> chunks_;
    size_t chunk_ = 0;
    int64_t n_tokens_ = 0;
    int pos_ = 0, n_voice_pos_ = 0;
    int step_ = 0, eos_step_ = -1, budget_ = 0, tail_ = 3;
    bool done_ = true, chunk_started_ = false;
    int64_t frame_index_ = 0;
    std::vector<float> h_;          // the backbone's last hidden state
    PocketTimings timings_;
};

class MimiDecoder {
public:
    // Loads the generator's mmproj a second time (its own clip context), computing with
    // `n_threads` threads (0 = the generator's).
    explicit MimiDecoder(const PocketGenerator &gen, int n_threads = 0);
    ~MimiDecoder();
    MimiDecoder(const MimiDecoder &) = delete;
    MimiDecoder &operator=(const MimiDecoder &) = delete;

    void reset() { state_.clear(); }
    // PCM of `n_frames` latent frames (n_frames x 1920 samples), after every frame before them
    // since the last reset.
    std::vector<float> decode(const float *latents, size_t n_frames);
    double decode_ms() const { return decode_ms_; }
    void reset_timings() { decode_ms_ = 0, n_calls_ = 0; }
    int64_t n_calls() const { return n_calls_; }

private:
    mtmd_context *mtmd_ = nullptr;
    int n_latent_ = 0;
    uint32_t seed_ = 0;
    std::vector<char> state_;
    double decode_ms_ = 0;
    int64_t n_calls_ = 0;
};

}  // namespace rtf::pocket
