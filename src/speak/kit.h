#pragma once
// A kit: the directory holding one speak path's model files, in the reference runtime's
// layout (docs/minicpmo45.md §2.1), real or twin:
//
//   DIR/MiniCPM-o-4_5-<TYPE>.gguf                  LLM (qwen3)
//   DIR/tts/MiniCPM-o-4_5-tts-<TYPE>.gguf          TTS (llama + extra tensors)
//   DIR/tts/MiniCPM-o-4_5-projector-F16.gguf       projector
//   DIR/token2wav-gguf/{encoder,flow_matching,flow_extra,hifigan2,prompt_cache}.gguf
//   DIR/audio/MiniCPM-o-4_5-audio-F16.gguf         audio encoder (duplex input; optional: a
//                                                  kit without it still speaks)
//   DIR/voices/NAME/prompt_cache.gguf              more voices (optional; a twin has twin-a,
//                                                  twin-b): prompt caches of the default's shapes
//   DIR/rtf-kit.json                               (twins only) what `rtf twin` wrote
//
// A Pocket TTS / Qwen3-TTS kit: DIR/{pocket-tts,qwen3-tts}.gguf + DIR/mmproj-<same>.gguf, and
// DIR/voices/NAME.wav (.mp3, .flac): reference recordings to clone (optional).
//
// resolve_kit() finds the files (rtf-kit.json first, else by the reference's names) and
// checks every one against its layout table (models/gguf), so a bad kit fails before any
// weight is loaded, with the file and tensor named.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace rtf::speak {

struct Kit {
    std::string dir;
    // The speech family: "minicpmo45" (the files above), "pocket-tts" or "qwen3-tts" (the two
    // files: `backbone` and `mmproj` below; the MiniCPM-o paths stay empty).
    // Found from rtf-kit.json's "family", else from the files present.
    std::string family = "minicpmo45";
    std::string backbone, mmproj;
    std::string llm;        // path of the LLM GGUF
    std::string tts;        // path of the TTS GGUF
    std::string projector;  // path of the projector GGUF
    std::string t2w_dir;    // the token2wav-gguf directory
    std::string apm;        // path of the audio encoder GGUF; "" when the kit has none (not checked
                            // here: the speak path does not need it; models/apm checks it on load)
    // The kit's voices besides "default" (token2wav-gguf/prompt_cache.gguf): name -> path of
    // voices/NAME/prompt_cache.gguf, sorted by name. A Pocket TTS / Qwen3-TTS kit: name -> a
    // reference recording voices/NAME.wav (.mp3, .flac) its speaker encoder clones.
    std::vector<std::pair<std::string, std::string>> voices;
    bool is_twin = false;   // rtf-kit.json present: random weights, noise audio
    nlohmann::json twin;    // rtf-kit.json's content when is_twin

    nlohmann::json to_json() const;
};

// Throws rtf::Error(Usage) unless `k` is a MiniCPM-o 4.5 kit, naming `what` (the command or
// feature that needs one: duplex, serve, bench, the LM tools) and the kit's family.
void require_minicpmo45(const Kit &k, const std::string &what);

// Throws rtf::Error(Usage) naming the directory and the missing file, or the file and
// tensor that do not match the layout (a voice's file included; a voices/ folder whose name
// is not a voice name, 1-32 of a-z 0-9 _ -, is refused naming it). `check_layouts` = false skips the header checks.
Kit resolve_kit(const std::string &dir, bool check_layouts = true);

// The audio encoder of a kit (rtf-kit.json's `apm` file, else audio/MiniCPM-o-4_5-audio-F16.gguf).
// Needs no other file of the kit. Throws rtf::Error(Usage) naming the directory and the file
// it looked for, and how a twin kit gains one (`rtf twin --only apm`).
std::string resolve_apm(const std::string &dir);

}  // namespace rtf::speak
