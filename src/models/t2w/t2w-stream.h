#pragma once
// T2wStream: per-utterance Token2Wav state on top of a shared, read-only T2wModel.
//
//   auto model = rtf::t2w::T2wModel::load("kit/token2wav-gguf");
//   rtf::t2w::T2wStream st(*model, cfg);
//   auto pcm = st.push(codes, /*is_final=*/false);   // 0, 1 or more windows' worth of PCM
//   pcm = st.push({}, /*is_final=*/true);            // flush the tail
//
// Windowing (docs/minicpmo45.md §4.1, simplex): a token buffer primed with `leading_silence` codes
// 4218; while it holds >= 28 tokens (or a final flush is pending and it is non-empty)
// run a window on its first min(|buf|, 28) tokens and slide by 25. With
// cfg.first_window = F < 28 an utterance's first window runs as soon as the buffer holds F
// tokens, on a graph of F tokens (the last 3 still look-ahead), and slides by F - 3: less
// waiting for the first audio, different math for the whole utterance (the caches and
// the noise generator see another history); F = 28 is the reference. cfg.ramp: the windows
// after the first, before 28, e.g. F = 8 then 12, 20 (slides 5, 9, 17, then 25). The window step
// (§3.2) carries an 8-frame mel cache, a 3840-sample source cache and a 3840-sample
// speech tail Hamming-cross-faded into the next window, and trims the last 3840
// samples of non-final windows. So the output depends only on the token sequence, not
// on how it is split across push() calls. Model caches are not reset by a final window
// (reference behaviour: only the token buffer is); reset() restores the prompt state.
//
// Not thread-safe; one stream per utterance/thread. Output: float PCM, 24 kHz mono.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "models/t2w/t2w-config.h"
#include "models/t2w/t2w-model.h"
#include "models/t2w/t2w-timing.h"
#include "models/t2w/token2mel.h"
#include "models/t2w/vocoder.h"

namespace rtf::t2w {

struct WindowRecord {
    int64_t call = 0;      // window index within the stream
    int n_tokens = 0;
    bool final = false;
    int64_t samples = 0;   // PCM samples emitted by this window
    WindowTimes times;
};

// Optional observer of each window's intermediate data (tests, golden comparisons).
struct WindowTap {
    std::function<void(int64_t call, const std::vector<float> &mel, int T)> t2m_out;    // [80][T]
    std::function<void(int64_t call, const std::vector<float> &mel_in, int T)> voc_in;  // [80][T]
    // Diagnostics only: replaces token2mel's output (e.g. with a reference dump) before the vocoder.
    std::function<void(int64_t call, std::vector<float> &mel)> override_mel;
};

class T2wStream {
public:
    T2wStream(const T2wModel &model, const T2wConfig &cfg);

    // Appends codes and runs every window that is ready. Throws rtf::Error(Usage) for a
    // code outside 0..vocab-1 (nothing is buffered then). `records` (optional) receives
    // one entry per window run.
    std::vector<float> push(const std::vector<int32_t> &tokens, bool is_final,
                            std::vector<WindowRecord> *records = nullptr);

    // One window step (docs/minicpmo45.md §4.2) on 1..graph_tokens codes, bypassing the token
    // buffer.
    std::vector<float> push_window(const std::vector<int32_t> &window, bool final, WindowRecord *record = nullptr,
                                   int graph_tokens = kWindowTokens);

    // Back to the prompt-cache state (caches, noise generator, token buffer).
    void reset();

    // Speaks with voice `v` (voice.h; loaded from this stream's model) from now on: its
    // prompt state is uploaded (the DiT attention caches refilled: ~tens of ms at full shape,
    // no graph rebuilt) and the stream reset to it. The same voice again is a no-op apart from
    // the reset. Throws rtf::Error(Usage) for a voice of other shapes.
    void set_voice(std::shared_ptr<const Voice> v);
    const std::shared_ptr<const Voice> &voice() const { return t2m_.voice(); }

    // Builds every graph a stream can need (token2mel's first, steady and last windows,
    // the vocoder's first, steady and every final length), so no window builds one; with
    // `compute_first` also runs the first window's graphs once on silence (first-touch
    // costs), leaving the stream state untouched. Seconds on a CPU; call at load. The
    // default is warm_run_enabled().
    void warm(bool compute_first = warm_run_enabled());
    // false when RTF_T2W_WARM_RUN=0: every front end then builds the graphs at load without
    // the warm-up run (what the first window pays cold; on a software Vulkan device, where a
    // window takes a minute, a minute saved at load).
    static bool warm_run_enabled();
    // Graphs built so far (token2mel + vocoder): constant after warm() in a healthy run.
    int64_t graphs_built() const;

    void set_tap(WindowTap tap) { tap_ = std::move(tap); }
    const T2wConfig &config() const { return cfg_; }
    const T2wModel &model() const { return m_; }
    int flow_steps() const { return t2m_.steps(); }
    // How token2mel runs its CFG branches and attention (diagnostics: `rtf t2w` prints them).
    const Token2Mel &token2mel() const { return t2m_; }
    size_t buffered_tokens() const { return buf_.size(); }

private:
    const T2wModel &m_;
    T2wConfig cfg_;
    Token2Mel t2m_;
    Vocoder voc_;
    Token2MelState t2m_state_;
    std::vector<int32_t> buf_;
    std::vector<float> mel_cache_;  // [80][<=8] time fastest
    int mel_cache_T_ = 0;
    std::vector<float> source_cache_, speech_tail_;
    std::vector<float> window_;
    int64_t calls_ = 0;
    size_t window_index_ = 0;  // the next window's index in the utterance (cfg.window_tokens)
    WindowTap tap_;
};

}  // namespace rtf::t2w
