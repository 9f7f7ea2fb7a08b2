#pragma once
// The two speech endpoints' request bodies, parsed and checked before a slot is taken.
//
//   POST /v1/audio/speech   (OpenAI-compatible)
//     {"model": "...", "input": "text to speak", "voice": "alloy",
//      "response_format": "wav"|"pcm"|"flac"|"opus"|"mp3", "stream_format": "audio"|"sse",
//      "speed": 1.0, "instructions": "..."}
//     input is spoken as given (text mode: the LLM only conditions the TTS). model is
//     echoed; voice is a kit's voice (GET /v1/audio/voices: "default" and the kit's voices/)
//     or one of kOpenAiVoices, which speak with the default (OpenAI clients send one); speed
//     is 0.25..4 (time-stretched, pitch kept: SpeakConfig::speed); instructions are accepted
//     and ignored (the kit cannot follow them).
//     Defaults: response_format wav, stream_format audio. The encoded formats (flac, opus:
//     Ogg/Opus, mp3) stream as the audio arrives (core/audio-stream.h). With sse the deltas
//     are raw PCM, so response_format must be pcm (OpenAI's own rule).
//   POST /v1/speak          (rtfkit's own)
//     {"prompt": "..." | "text": "...", "knobs": {"max-audio-s": 3, "d1": 4, ...},
//      "response_format": "pcm"|"wav"|"flac"|"opus"|"mp3", "stream_format": "sse"|"audio"}
//     knobs are speak knobs (speak/knobs.h) that apply per utterance (voice and speed among
//     them); a knob the engines fix at load (threads, types, sampling, the kit) is refused,
//     naming it: set it on `rtf serve`'s command line. Defaults: stream_format sse, response_format pcm.
//
// Errors: RequestError (-> HTTP 400) with the JSON path of the field and what is allowed.
#include <stdexcept>
#include <string>
#include <vector>

#include "core/audio-stream.h"
#include "speak/speak-config.h"

namespace rtf::serve {

enum class StreamFormat { Audio, Sse };
const char *to_string(StreamFormat f);

inline const std::vector<std::string> kOpenAiVoices = {"default", "alloy", "ash",  "ballad", "coral",  "echo",
                                                       "fable",   "nova",  "onyx", "sage",   "shimmer", "verse"};

struct SpeechRequest {
    speak::SpeakConfig cfg;  // the server's config with this request's input and knobs, finalized
    AudioFormat format = AudioFormat::Wav;
    StreamFormat stream = StreamFormat::Audio;
    std::string endpoint;    // "speech" | "speak"
    std::string model, voice;
    std::vector<std::pair<std::string, std::string>> knobs;  // as given (speak endpoint)
};

class RequestError : public std::runtime_error {
public:
    RequestError(std::string field, const std::string &message)
        : std::runtime_error(field + ": " + message), field_(std::move(field)) {}
    const std::string &field() const { return field_; }

private:
    std::string field_;
};

// `base`: the config the server's engines were loaded with (model paths filled in).
// `voices`: the kit's voice names (speak::VoiceSet::names()); another is a 400 listing them.
SpeechRequest parse_openai_speech(const std::string &body, const speak::SpeakConfig &base, int max_input_chars,
                                  const std::vector<std::string> &voices = {"default"});
SpeechRequest parse_speak_request(const std::string &body, const speak::SpeakConfig &base, int max_input_chars,
                                  const std::vector<std::string> &voices = {"default"});

}  // namespace rtf::serve
