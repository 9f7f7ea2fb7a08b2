#pragma once
// MiniCPM-o 4.5 as one implementation of the family seam (family.h): an utterance's FamilyRun
// over the engines load_engines() built (Engines::llm, tts, t2w_stream, voices).
//
//   LlmStage (source)  request -> text steps (prompt: sampled reply; text: forced reply)
//   TtsStage           text steps -> audio codes (25 per second), its first chunk sized to
//                      Token2Wav's first window
//   T2wStage           codes -> 24 kHz PCM windows (the stream rebuilt when cfg.t2w differs
//                      from the one it was built for; the voice uploaded when it changes)
//
// Hooks: wrap_sink hands each chunk's text timing to `on_text` just before the chunk goes out,
// and time-stretches it when cfg.speed != 1; finish sends the stretch's tail, the text never
// reached, and fills MiniCPM-o's result fields (codes, reply, first-audio breakdown, engines).
// The run refers to `engines`, `cfg` and `on_text`: they outlive it (speak() holds them).
#include "speak/family.h"
#include "speak/speak.h"

namespace rtf::speak {

FamilyRun minicpmo45_run(Engines &engines, const SpeakConfig &cfg, const TextSink &on_text);

}  // namespace rtf::speak
