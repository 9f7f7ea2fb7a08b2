#include "core/time-stretch.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <sonic.h>

#include "core/error.h"

namespace rtf {

TimeStretch::TimeStretch(double speed, int sample_rate) : speed_(speed) {
    if (!(speed >= 0.25 && speed <= 4.0)) throw_usage("speed: " + std::to_string(speed) + " is out of range (0.25..4)");
    if (sample_rate < 1) throw_usage("speed: sample rate must be positive");
    if (speed == 1.0) return;
    st_ = sonicCreateStream(sample_rate, 1);
    if (!st_) throw_runtime("speed: cannot create a Sonic stream (out of memory)");
    sonicSetSpeed(st_, static_cast<float>(speed));  // speed, not rate: the pitch stays
}

TimeStretch::~TimeStretch() {
    if (st_) sonicDestroyStream(st_);
}

std::vector<float> TimeStretch::take(int64_t max) {
    std::vector<float> out;
    if (max <= 0) return out;
    out.resize(static_cast<size_t>(std::min<int64_t>(max, sonicSamplesAvailable(st_))));
    const int got = out.empty() ? 0 : sonicReadFloatFromStream(st_, out.data(), static_cast<int>(out.size()));
    out.resize(static_cast<size_t>(std::max(got, 0)));
    out_ += static_cast<int64_t>(out.size());
    return out;
}

std::vector<float> TimeStretch::push(const float *pcm, size_t n) {
    if (finished_) throw_runtime("TimeStretch: push after finish");
    in_ += static_cast<int64_t>(n);
    if (!st_) {
        out_ += static_cast<int64_t>(n);
        return std::vector<float>(pcm, pcm + n);
    }
    if (n) {
        clip_.assign(pcm, pcm + n);
        for (float &x : clip_) x = std::clamp(x, -1.0f, 1.0f);
        if (!sonicWriteFloatToStream(st_, clip_.data(), static_cast<int>(n))) throw_runtime("speed: Sonic is out of memory");
    }
    // Never more than the exact total allows (finish() trims to it).
    return take(std::llround(static_cast<double>(in_) / speed_) - out_);
}

std::vector<float> TimeStretch::finish() {
    if (finished_) return {};
    finished_ = true;
    if (!st_) return {};
    const int64_t want = std::llround(static_cast<double>(in_) / speed_);
    sonicFlushStream(st_);  // what it holds back, stretched; may be a little more than `want`
    std::vector<float> out = take(want - out_);
    // Short of the exact total (its last pitch period): silence, so durations add up.
    if (out_ < want) {
        out.resize(out.size() + static_cast<size_t>(want - out_), 0.0f);
        out_ = want;
    }
    return out;
}

}  // namespace rtf
