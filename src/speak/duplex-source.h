#pragma once
// Where a duplex session's input frames come from (speak/duplex.h's input stage):
//
//   RecordingFrames rec(frames);            // `rtf duplex`: a recording's frames, pushed on
//                                           // absolute deadlines t0 + i x interval
//   LiveFrames live(16000 /*per frame*/, 3600 /*most frames*/);
//   live.append(pcm16k);  ...  live.end(); // `rtf serve`'s /v1/realtime: a client's stream;
//                                           // a frame leaves as soon as it is complete
//
// The input stage asks next(i) for frame i = 0, 1, ...; nullopt ends the session's input
// (the rest of the pipeline drains). `paced()` sources are pushed at their deadlines by the
// stage; unpaced ones block in next() until the frame exists. capacity() bounds the frames a
// session records (its per-frame records are allocated once, up front, so the stages can
// write them without a lock).
// Thread-safety: LiveFrames' append()/end() from any thread, next() from the input stage.
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "pipeline/stage.h"

namespace rtf::speak {

class FrameSource {
public:
    virtual ~FrameSource() = default;
    virtual size_t capacity() const = 0;  // the most frames next() may give
    virtual bool paced() const = 0;       // the input stage pushes frame i at t0 + i x interval
    // Frame `i` (16 kHz), or nullopt when the input ended. Throws pipe::Stopped if the run
    // stops while it waits.
    virtual std::optional<std::vector<float>> next(size_t i, const pipe::StageContext &ctx) = 0;
};

// A recording split into frames (speak::input_frames). Paced.
class RecordingFrames final : public FrameSource {
public:
    explicit RecordingFrames(const std::vector<std::vector<float>> &frames) : frames_(frames) {}
    size_t capacity() const override { return frames_.size(); }
    bool paced() const override { return true; }
    std::optional<std::vector<float>> next(size_t i, const pipe::StageContext &) override {
        if (i >= frames_.size()) return std::nullopt;
        return frames_[i];
    }

private:
    const std::vector<std::vector<float>> &frames_;
};

// A live stream of 16 kHz samples cut into frames of `frame_samples`. end() closes it: the
// last partial frame is zero-padded and given, then nullopt. Samples past `capacity` frames
// are dropped (append returns false); so are samples appended after end().
class LiveFrames final : public FrameSource {
public:
    LiveFrames(size_t frame_samples, size_t capacity);
    size_t capacity() const override { return capacity_; }
    bool paced() const override { return false; }
    std::optional<std::vector<float>> next(size_t i, const pipe::StageContext &ctx) override;

    bool append(std::span<const float> pcm16k);
    void end();
    size_t frames_complete() const;  // full frames received so far

private:
    const size_t frame_samples_, capacity_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::vector<float> pending_;              // samples not yet handed out (from frame `given_`)
    size_t given_ = 0;                        // frames handed to next()
    size_t received_ = 0;                     // samples appended, in all
    bool ended_ = false;
};

}  // namespace rtf::speak
