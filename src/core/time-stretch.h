#pragma once
// Streaming time-stretch of mono float PCM with its pitch kept: what OpenAI's `speed` asks of a
// speech endpoint. Sonic (Debian's libsonic, the speech speed-up library espeak-ng uses:
// pitch-synchronous overlap-add) does the work. Chunks go in as they come, stretched chunks come
// out (Sonic holds back a pitch period or two), and finish() flushes the tail so that the total is
// exactly round(samples in / speed).
//
//   TimeStretch ts(2.0, 24000);
//   for (auto &chunk : chunks) sink(ts.push(chunk.data(), chunk.size()));
//   sink(ts.finish());
//
// speed 1 passes every sample through untouched (Sonic is not used: bit-identical). Otherwise
// Sonic works on 16-bit samples internally, so the output is quantized to 16 bits (as every
// served format is anyway) and the input is clipped to [-1, 1] first.
//
// Why not SoundTouch: Debian's libSoundTouch.so is built with -ffast-math, and loading it sets
// flush-to-zero and denormals-are-zero in the MXCSR of the whole process (crtfastmath's
// constructor): every float computation of the engines would change (a golden test caught it).
// test-core checks that nothing rtf_core links does that.
// Not thread-safe: one per stream.
#include <cstddef>
#include <cstdint>
#include <vector>

struct sonicStreamStruct;

namespace rtf {

class TimeStretch {
public:
    // speed in [0.25, 4]; throws rtf::Error(Usage) naming "speed" otherwise.
    TimeStretch(double speed, int sample_rate);
    ~TimeStretch();
    TimeStretch(const TimeStretch &) = delete;
    TimeStretch &operator=(const TimeStretch &) = delete;

    std::vector<float> push(const float *pcm, size_t n);
    // The rest, so that out() == round(in() / speed). Further push() calls are errors.
    std::vector<float> finish();

    double speed() const { return speed_; }
    int64_t in() const { return in_; }
    int64_t out() const { return out_; }

private:
    std::vector<float> take(int64_t max);
    double speed_;
    sonicStreamStruct *st_ = nullptr;  // null at speed 1
    int64_t in_ = 0, out_ = 0;
    bool finished_ = false;
    std::vector<float> clip_;  // the input clipped to [-1, 1] (Sonic's float contract)
};

}  // namespace rtf
