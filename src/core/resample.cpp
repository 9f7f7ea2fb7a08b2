#include "core/resample.h"

#include <cmath>
#include <string>

#include <samplerate.h>

#include "core/error.h"

namespace rtf {

std::vector<float> resample(const std::vector<float> &pcm, int from_rate, int to_rate) {
    if (from_rate <= 0 || to_rate <= 0) {
        throw_usage("resample: rates must be > 0 (got " + std::to_string(from_rate) + " -> " +
                    std::to_string(to_rate) + " Hz)");
    }
    if (from_rate == to_rate || pcm.empty()) return pcm;
    std::vector<float> in(pcm.size());
    for (size_t i = 0; i < pcm.size(); ++i) in[i] = std::isfinite(pcm[i]) ? pcm[i] : 0.0f;
    const double ratio = static_cast<double>(to_rate) / from_rate;
    std::vector<float> out(static_cast<size_t>(std::ceil(static_cast<double>(pcm.size()) * ratio)) + 16);
    SRC_DATA d{};
    d.data_in = in.data();
    d.input_frames = static_cast<long>(in.size());
    d.data_out = out.data();
    d.output_frames = static_cast<long>(out.size());
    d.src_ratio = ratio;
    // Medium quality: > 97 dB stop-band, far beyond what ASR or spectral distances resolve.
    const int err = src_simple(&d, SRC_SINC_MEDIUM_QUALITY, 1);
    if (err != 0) {
        throw_runtime("resample " + std::to_string(from_rate) + " -> " + std::to_string(to_rate) +
                      " Hz failed: " + src_strerror(err));
    }
    out.resize(static_cast<size_t>(d.output_frames_gen));
    return out;
}

}  // namespace rtf
