#pragma once
// Sample-rate conversion through libsamplerate (band-limited sinc): 24 kHz TTS output
// -> 16 kHz for pocketsphinx, a 192 kHz file -> its baseline's rate, any input WAV -> the
// audio encoder's 16 kHz. In core because both quality and the engines (models/apm) need it.
// Thread-safety: pure function.
#include <vector>

namespace rtf {

// Returns `pcm` unchanged when the rates match. Non-finite samples are converted as 0.
// Throws rtf::Error(Usage) for non-positive rates, rtf::Error(Runtime) with libsamplerate's
// message if the conversion fails.
std::vector<float> resample(const std::vector<float> &pcm, int from_rate, int to_rate);

}  // namespace rtf
