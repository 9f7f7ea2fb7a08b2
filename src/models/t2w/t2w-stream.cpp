#include "models/t2w/t2w-stream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "models/t2w/t2w-dsp.h"
#include "models/t2w/voice.h"

namespace rtf::t2w {

T2wStream::T2wStream(const T2wModel &model, const T2wConfig &cfg)
    : m_(model), cfg_(cfg), t2m_((cfg.validate(), model), cfg), voc_(model, cfg) {
    window_ = dsp::hamming(2 * kCrossfadeSamples);
    reset();
}

void T2wStream::set_voice(std::shared_ptr<const Voice> v) {
    t2m_.set_voice(std::move(v));
    reset();
}

void T2wStream::reset() {
    t2m_state_.reset(*t2m_.voice());
    buf_.assign(static_cast<size_t>(cfg_.leading_silence), kSilenceToken);
    mel_cache_.clear();
    mel_cache_T_ = 0;
    source_cache_.clear();
    speech_tail_.clear();
    calls_ = 0;
    window_index_ = 0;
}

bool T2wStream::warm_run_enabled() {
    const char *e = std::getenv("RTF_T2W_WARM_RUN");
    return !e || std::string(e) != "0";
}

void T2wStream::warm(bool compute_first) {
    const auto t0 = std::chrono::steady_clock::now();
    const int F = cfg_.first_window;
    t2m_.prepare(kWindowTokens, false);
    t2m_.prepare(kWindowTokens, true);
    t2m_.prepare(F, false);
    for (int w : cfg_.ramp) t2m_.prepare(w, false);  // a window of the ramp (its vocoder lengths: below)
    const double t2m_build = ms_since(t0);
    // Vocoder input lengths: the first window's 2(F-3) frames, then [8-frame mel cache ;
    // 50] = 58, and a final window's 2n frames (n = 1..28), alone or after the cache (a ramp's
    // window of W tokens: 8 + 2(W-3), among those).
    std::vector<int> lengths{2 * (F - (kWindowTokens - kStrideTokens)), kMelCacheFrames + 2 * kStrideTokens};
    for (int n = 1; n <= kWindowTokens; ++n) {
        lengths.push_back(2 * n);
        lengths.push_back(kMelCacheFrames + 2 * n);
    }
    voc_.prepare(lengths);
    const double voc_build = ms_since(t0) - t2m_build;
    if (compute_first) {
        t2m_.prepare(F, false, true);
        std::vector<float> mel(static_cast<size_t>(kMelBins) * lengths[0], 0.0f), wave, source;
        PartTimes tm;
        voc_.run(mel, lengths[0], {}, wave, source, tm);
    }
    if (std::getenv("RTF_T2W_DEBUG_MEM")) {
        std::fprintf(stderr, "t2w: warm: token2mel graphs %.0f ms, vocoder graphs %.0f ms, first-window run %.0f ms\n", t2m_build,
                     voc_build, ms_since(t0) - t2m_build - voc_build);
    }
}

int64_t T2wStream::graphs_built() const { return t2m_.graphs_built() + 2 * voc_.graphs_built(); }

std::vector<float> T2wStream::push(const std::vector<int32_t> &tokens, bool is_final, std::vector<WindowRecord> *records) {
    const int vocab = m_.enc_dims().vocab;
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (tokens[i] < 0 || tokens[i] >= vocab) {
            throw_usage("t2w: token #" + std::to_string(i) + " = " + std::to_string(tokens[i]) +
                        " out of range (audio codes are 0.." + std::to_string(vocab - 1) + ")");
        }
    }
    buf_.insert(buf_.end(), tokens.begin(), tokens.end());
    std::vector<float> out;
    for (;;) {
        // The utterance's first windows may be shorter (cfg.first_window, then cfg.ramp); each
        // slides by its own stride (window - 3 look-ahead tokens). A final flush always uses 28.
        const size_t W = static_cast<size_t>(cfg_.window_tokens(window_index_));
        const bool last = is_final && buf_.size() <= static_cast<size_t>(kWindowTokens);
        if (!(buf_.size() >= W || (is_final && !buf_.empty()))) break;
        const size_t n = last ? buf_.size() : W;
        std::vector<int32_t> win(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(n));
        WindowRecord rec;
        std::vector<float> pcm = push_window(win, last, &rec, last ? kWindowTokens : static_cast<int>(W));
        if (records) records->push_back(rec);
        out.insert(out.end(), pcm.begin(), pcm.end());
        window_index_ = last ? 0 : window_index_ + 1;  // the next utterance starts with a first window again
        const size_t stride = W - static_cast<size_t>(kWindowTokens - kStrideTokens);
        if (buf_.size() > stride) {
            buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(stride));
        } else {
            buf_.clear();
        }
        if (last) {
            buf_.assign(static_cast<size_t>(cfg_.leading_silence), kSilenceToken);
            break;
        }
    }
    return out;
}

std::vector<float> T2wStream::push_window(const std::vector<int32_t> &window, bool final, WindowRecord *record,
                                          int graph_tokens) {
    const auto t0 = std::chrono::steady_clock::now();
    WindowRecord rec;
    rec.call = calls_;
    rec.n_tokens = static_cast<int>(window.size());
    rec.final = final;
    std::vector<float> mel = t2m_.run(window, final, t2m_state_, rec.times.t2m, graph_tokens);
    if (tap_.override_mel) tap_.override_mel(calls_, mel);
    const int T = static_cast<int>(mel.size() / kMelBins);
    if (tap_.t2m_out) tap_.t2m_out(calls_, mel, T);
    std::vector<float> wave;
    if (T > 0) {
        // mel_in = [mel_cache ; mel] along time
        const int Tin = mel_cache_T_ + T;
        std::vector<float> mel_in(static_cast<size_t>(kMelBins) * Tin);
        for (int c = 0; c < kMelBins; ++c) {
            std::copy_n(mel_cache_.begin() + static_cast<std::ptrdiff_t>(c) * mel_cache_T_, mel_cache_T_,
                        mel_in.begin() + static_cast<std::ptrdiff_t>(c) * Tin);
            std::copy_n(mel.begin() + static_cast<std::ptrdiff_t>(c) * T, T,
                        mel_in.begin() + static_cast<std::ptrdiff_t>(c) * Tin + mel_cache_T_);
        }
        if (tap_.voc_in) tap_.voc_in(calls_, mel_in, Tin);
        std::vector<float> source;
        voc_.run(mel_in, Tin, source_cache_, wave, source, rec.times.voc);
        const size_t n = static_cast<size_t>(kCrossfadeSamples);
        if (speech_tail_.size() >= n && wave.size() >= n) {
            for (size_t k = 0; k < n; ++k) wave[k] = wave[k] * window_[k] + speech_tail_[k] * window_[k + n];
        }
        // caches: last 8 mel frames, last 3840 source / speech samples (before trimming)
        const int keep = std::min(Tin, kMelCacheFrames);
        mel_cache_.assign(static_cast<size_t>(kMelBins) * keep, 0.0f);
        for (int c = 0; c < kMelBins; ++c) {
            std::copy_n(mel_in.begin() + static_cast<std::ptrdiff_t>(c) * Tin + (Tin - keep), keep,
                        mel_cache_.begin() + static_cast<std::ptrdiff_t>(c) * keep);
        }
        mel_cache_T_ = keep;
        const size_t ks = std::min(source.size(), n);
        source_cache_.assign(source.end() - static_cast<std::ptrdiff_t>(ks), source.end());
        const size_t kw = std::min(wave.size(), n);
        speech_tail_.assign(wave.end() - static_cast<std::ptrdiff_t>(kw), wave.end());
        if (!final && wave.size() > n) wave.resize(wave.size() - n);
    }
    rec.samples = static_cast<int64_t>(wave.size());
    rec.times.total_ms = ms_since(t0);
    ++calls_;
    if (record) *record = rec;
    return wave;
}

}  // namespace rtf::t2w
