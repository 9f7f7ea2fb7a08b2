#pragma once
// Sample-rate conversion through libsamplerate (band-limited sinc), e.g. 24 kHz TTS output
// -> 16 kHz for pocketsphinx, or a 192 kHz file -> its baseline's rate.
// Thread-safety: pure function.
#include <vector>

namespace rtf::quality {

// Returns `pcm` unchanged when the rates match. Non-finite samples are converted as 0.
// Throws rtf::Error(Usage) for non-positive rates, rtf::Error(Runtime) with libsamplerate's
// message if the conversion fails.
std::vector<float> resample(const std::vector<float> &pcm, int from_rate, int to_rate);

}  // namespace rtf::quality
