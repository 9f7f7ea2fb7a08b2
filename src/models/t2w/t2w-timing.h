#pragma once
// Per-call sub-stage timings of the Token2Wav engine, returned with every output so a
// profiler can record them (spec §4.3 stage names: t2m.upload, t2m.compute, ...).
#include <chrono>

#include "core/elapsed.h"

namespace rtf::t2w {

struct PartTimes {
    double upload_ms = 0;    // host -> backend copies (inputs, caches)
    double compute_ms = 0;   // graph compute (+ host kernels between graphs for the vocoder)
    double download_ms = 0;  // backend -> host copies (outputs, caches)
    double total_ms = 0;     // wall time of the part, graph building included
};

struct WindowTimes {
    PartTimes t2m;  // token2mel
    PartTimes voc;  // vocoder
    double total_ms = 0;
};

using rtf::ms_since;  // core/elapsed.h

}  // namespace rtf::t2w
