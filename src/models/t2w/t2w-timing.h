#pragma once
// Per-call sub-stage timings of the Token2Wav engine, returned with every output so a
// profiler can record them (the reference's part names, docs/minicpmo45.md §4.10: t2m.upload,
// t2m.compute, ...).
#include <chrono>
#include <cstddef>

#include <ggml-backend.h>

#include "core/elapsed.h"

namespace rtf::t2w {

struct PartTimes {
    double upload_ms = 0;    // host -> backend copies (inputs, caches; the DiT's per-step ones too)
    double compute_ms = 0;   // graph compute (+ host kernels between graphs for the vocoder)
    double download_ms = 0;  // backend -> host copies (outputs, caches)
    double total_ms = 0;     // wall time of the part, graph building included
    size_t upload_bytes = 0;    // what those copies moved: on a device (Vulkan, CUDA) they
    size_t download_bytes = 0;  // cross the host link (`rtf limits` measures its rate)
};

// A host <-> backend copy that counts its bytes and time into a part's figures. On the CPU
// backend it is a memcpy; on a device, a transfer over the host link.
inline void upload(ggml_tensor *t, const void *data, size_t offset, size_t n, PartTimes &tm) {
    const auto t0 = std::chrono::steady_clock::now();
    ggml_backend_tensor_set(t, data, offset, n);
    tm.upload_ms += ms_since(t0);
    tm.upload_bytes += n;
}
inline void download(const ggml_tensor *t, void *data, size_t offset, size_t n, PartTimes &tm) {
    const auto t0 = std::chrono::steady_clock::now();
    ggml_backend_tensor_get(t, data, offset, n);
    tm.download_ms += ms_since(t0);
    tm.download_bytes += n;
}

struct WindowTimes {
    PartTimes t2m;  // token2mel
    PartTimes voc;  // vocoder
    double total_ms = 0;
};

using rtf::ms_since;  // core/elapsed.h

}  // namespace rtf::t2w
