#pragma once
// The quality layer's name for core's resampler (core/resample.h: libsamplerate, the one
// sample-rate conversion of rtfkit).
#include "core/resample.h"

namespace rtf::quality {

using rtf::resample;

}  // namespace rtf::quality
