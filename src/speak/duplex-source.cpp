#include "speak/duplex-source.h"

#include <algorithm>
#include <chrono>

namespace rtf::speak {

LiveFrames::LiveFrames(size_t frame_samples, size_t capacity) : frame_samples_(std::max<size_t>(1, frame_samples)), capacity_(capacity) {}

bool LiveFrames::append(std::span<const float> pcm) {
    {
        std::lock_guard<std::mutex> l(mu_);
        const size_t room = capacity_ * frame_samples_ - std::min(received_, capacity_ * frame_samples_);
        if (ended_ || room == 0) return pcm.empty();
        const size_t n = std::min(room, pcm.size());
        pending_.insert(pending_.end(), pcm.begin(), pcm.begin() + static_cast<std::ptrdiff_t>(n));
        received_ += n;
        if (n < pcm.size()) return false;
    }
    cv_.notify_all();
    return true;
}

void LiveFrames::end() {
    {
        std::lock_guard<std::mutex> l(mu_);
        ended_ = true;
    }
    cv_.notify_all();
}

size_t LiveFrames::frames_complete() const {
    std::lock_guard<std::mutex> l(mu_);
    return received_ / frame_samples_;
}

std::optional<std::vector<float>> LiveFrames::next(size_t i, const pipe::StageContext &ctx) {
    std::unique_lock<std::mutex> l(mu_);
    (void)i;  // frames are handed out in order; i == given_
    while (true) {
        if (given_ >= capacity_) return std::nullopt;
        if (pending_.size() >= frame_samples_ || (ended_ && !pending_.empty())) {
            std::vector<float> f(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(std::min(frame_samples_, pending_.size())));
            pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(f.size()));
            f.resize(frame_samples_, 0.0f);
            ++given_;
            return f;
        }
        if (ended_) return std::nullopt;
        if (ctx.stopping()) throw pipe::Stopped{};
        // Short waits: the run's stop flag is an atomic, not this condition variable.
        cv_.wait_for(l, std::chrono::milliseconds(20));
    }
}

}  // namespace rtf::speak
