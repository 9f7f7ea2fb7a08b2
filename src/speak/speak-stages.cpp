#include "speak/speak-stages.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "profile/profiler.h"
#include "speak/speak-config.h"

namespace rtf::speak {

namespace {

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Thrown from the TTS observer to end generation once the cap is reached; caught in
// TtsStage::process. (The generator's turn is restarted by the next utterance.)
struct CapReached {};
}  // namespace

void SpeakShared::wait_first_pcm(std::chrono::steady_clock::time_point deadline, bool or_hungry) {
    // Short slices, so a cancel (which has no condition variable of its own) is seen soon.
    std::unique_lock<std::mutex> lk(first_mu);
    while (!first_pcm.load(std::memory_order_acquire) && !(or_hungry && tts_hungry.load(std::memory_order_acquire)) &&
           std::chrono::steady_clock::now() < deadline && !(cancel && cancel->cancelled())) {
        first_cv.wait_for(lk, std::chrono::milliseconds(20));
    }
    if (!first_pcm.load(std::memory_order_acquire) && !(or_hungry && tts_hungry.load(std::memory_order_acquire)) &&
        !(cancel && cancel->cancelled()))
        priority_timeouts.fetch_add(1, std::memory_order_relaxed);
    if (or_hungry) tts_hungry.store(false, std::memory_order_release);
}

namespace {
std::chrono::steady_clock::time_point first_audio_deadline(double wait_max_ms) {
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double, std::milli>(wait_max_ms));
}
}  // namespace

// ---- LLM -------------------------------------------------------------------------------

LlmStage::LlmStage(pipe::StageSpec spec, lm::LlmEngine &llm, bool text_mode, SpeakShared &shared,
                   int64_t max_text_tokens)
    : Stage(std::move(spec)), llm_(llm), text_mode_(text_mode), shared_(shared), max_text_tokens_(max_text_tokens) {}

void LlmStage::process(pipe::Item &&request, pipe::Emitter &out) {
    int64_t io_mark = llm_.device_io_bytes();  // -1: not on a device
    auto record_io = [&] {  // llm.copy_kib: what the decodes since the last mark moved
        if (io_mark < 0) return;
        const int64_t io = llm_.device_io_bytes();
        prof::record("llm.copy_kib", static_cast<double>(io - io_mark) / 1024.0);
        io_mark = io;
    };
    if (text_mode_) {
        llm_.start_text(request.text);
    } else {
        llm_.start(request.text);
    }
    shared_.mark(shared_.marks.prefill_done);
    prof::record("llm.prefill_ms", llm_.timings().prefill_ms);
    record_io();
    for (;;) {
        auto before = llm_.timings();
        lm::LlmStep step = llm_.next_step();
        auto after = llm_.timings();
        int n = after.n_decoded - before.n_decoded;
        if (n > 0) {
            prof::record("llm.ms_per_token", (after.decode_ms + after.sample_ms - before.decode_ms - before.sample_ms) / n);
        }
        record_io();
        bool stop = shared_.enough.load(std::memory_order_acquire);
        bool capped = false;
        const auto have = static_cast<int64_t>(shared_.text_tokens.size());
        if (max_text_tokens_ > 0 && !step.is_last && have + static_cast<int64_t>(step.token_ids.size()) >= max_text_tokens_) {
            const auto keep = static_cast<size_t>(std::max<int64_t>(0, max_text_tokens_ - have));
            if (keep < step.token_ids.size()) {
                step.token_ids.resize(keep);
                step.hidden.resize(keep * static_cast<size_t>(step.n_embd));
                step.text.clear();
                for (int32_t id : step.token_ids) step.text += llm_.piece(id);
            }
            capped = true;
        }
        shared_.text_tokens.insert(shared_.text_tokens.end(), step.token_ids.begin(), step.token_ids.end());
        shared_.reply_text += step.text;
        pipe::Item item;
        item.text = std::move(step.text);
        item.text_tokens = std::move(step.token_ids);
        item.hidden = std::move(step.hidden);
        item.n_embd = step.n_embd;
        const bool last = step.is_last || stop || capped;
        item.last = last;
        if (step.is_last) shared_.llm_stop = step.stop;
        else if (stop) shared_.llm_stop = "audio_cap";
        else if (capped) shared_.llm_stop = "twin_text_cap";
        if (!item.text_tokens.empty()) shared_.mark(shared_.marks.first_text);
        out.emit(std::move(item));
        if (last) break;
        // First-audio priority: no text ahead of the TTS's need until the first PCM is out.
        if (shared_.first_audio_priority && !shared_.first_pcm.load(std::memory_order_acquire)) {
            if (wait_until_ == std::chrono::steady_clock::time_point{}) wait_until_ = first_audio_deadline(shared_.wait_max_ms);
            shared_.wait_first_pcm(wait_until_, /*or_hungry=*/true);
        }
    }
}

// ---- TTS -------------------------------------------------------------------------------

TtsStage::TtsStage(pipe::StageSpec spec, lm::TtsEngine &tts, int64_t max_codes, SpeakShared &shared,
                   std::vector<int> lead_chunk_codes)
    : Stage(std::move(spec)), tts_(tts), max_codes_(max_codes), shared_(shared) {
    // Chunks leave the moment the generator completes them (mid TTS call), not when feed()
    // returns: that is what makes the TTS -> T2W hand-off streaming.
    lm::TtsObserver obs;
    obs.on_chunk = [this](const lm::AudioChunk &c) { on_chunk(c); };
    obs.on_step = [this](const lm::TtsStepEvent &) {
        shared_.mark(shared_.marks.first_code);
        shared_.codes_made.fetch_add(1, std::memory_order_relaxed);
    };
    tts_.set_observer(std::move(obs));
    tts_.set_lead_chunk_codes(std::move(lead_chunk_codes));
    tts_.begin_utterance();
    io_mark_ = tts_.device_io_bytes();
}

TtsStage::~TtsStage() {
    tts_.set_observer({});
    tts_.set_lead_chunk_codes({});
}

void TtsStage::on_chunk(const lm::AudioChunk &c) {
    if (done_) throw CapReached{};
    pipe::Item item;
    item.audio_tokens = c.codes;
    item.last = c.is_final;
    bool capped = false;
    if (max_codes_ > 0 && n_codes_ + static_cast<int64_t>(item.audio_tokens.size()) >= max_codes_) {
        item.audio_tokens.resize(static_cast<size_t>(max_codes_ - n_codes_));
        item.last = capped = true;
    }
    n_codes_ += static_cast<int64_t>(item.audio_tokens.size());
    shared_.audio_codes.insert(shared_.audio_codes.end(), item.audio_tokens.begin(), item.audio_tokens.end());
    if (!item.audio_tokens.empty()) {
        double t = now_ms();
        prof::record("tts.ms_per_token", (t - t_last_chunk_) / static_cast<double>(item.audio_tokens.size()));
        t_last_chunk_ = t;
        if (const int64_t io = tts_.device_io_bytes(); io >= 0 && io_mark_ >= 0) {
            prof::record("tts.copy_kib", static_cast<double>(io - io_mark_) / 1024.0);
            io_mark_ = io;
        }
    }
    item.audio_ms = 1000.0 * static_cast<double>(item.audio_tokens.size()) / kCodesPerSecond;
    if (item.last) done_ = true;
    const bool window_ready = n_codes_ >= shared_.window_codes || item.last;
    if (window_ready) shared_.mark(shared_.marks.window_codes);
    out_->emit(std::move(item));
    if (window_ready && shared_.first_audio_priority && !waited_first_) {
        waited_first_ = true;
        // Bounded whatever happens downstream (a failing T2W stage never raises the flag).
        shared_.wait_first_pcm(first_audio_deadline(shared_.wait_max_ms), /*or_hungry=*/false);
    }
    if (capped) {
        shared_.enough.store(true, std::memory_order_release);
        throw CapReached{};  // stop sampling: the work size is reached
    }
}

void TtsStage::process(pipe::Item &&in, pipe::Emitter &out) {
    if (done_) return;  // cap reached: the rest of the reply is not spoken
    out_ = &out;
    t_last_chunk_ = now_ms();
    if (!in.text.empty()) {  // the codes sampled from now on are the first this text conditions
        std::lock_guard<std::mutex> l(shared_.marks_mu);
        shared_.text_marks.push_back({in.text, static_cast<int64_t>(in.text_tokens.size()),
                                      shared_.codes_made.load(std::memory_order_relaxed)});
    }
    lm::TtsInput input;
    input.ids = in.text_tokens;
    input.hidden = in.hidden;
    input.is_last = in.last;
    try {
        tts_.feed(input);  // chunks leave through on_chunk(); the returned copies are not needed
    } catch (const CapReached &) {
    }
    // Its text is used up: an LLM held back by first-audio priority may compute the next step.
    if (shared_.first_audio_priority && !shared_.first_pcm.load(std::memory_order_acquire)) shared_.raise(shared_.tts_hungry);
}

void TtsStage::finish(pipe::Emitter &out) {
    if (done_) return;
    out_ = &out;
    try {
        tts_.finish();
    } catch (const CapReached &) {
    }
    if (!done_) {  // the generator closed the turn without a final marker: send one
        pipe::Item item;
        item.last = true;
        done_ = true;
        out.emit(std::move(item));
    }
}

// ---- Token2Wav -------------------------------------------------------------------------

namespace {
bool on_device(ggml_backend_dev_t d) { return d && ggml_backend_dev_type(d) != GGML_BACKEND_DEVICE_TYPE_CPU; }
}  // namespace

T2wStage::T2wStage(pipe::StageSpec spec, t2w::T2wStream &stream, SpeakShared &shared)
    : Stage(std::move(spec)),
      stream_(stream),
      shared_(shared),
      t2m_on_device_(on_device(stream.model().device_t2m())),
      voc_on_device_(on_device(stream.model().device_voc())) {
    stream_.reset();
}

void T2wStage::run(const std::vector<int32_t> &codes, bool final, pipe::Emitter &out) {
    std::vector<t2w::WindowRecord> records;
    std::vector<float> pcm = stream_.push(codes, final, &records);
    // One output item per window, so every chunk has its own arrival time.
    size_t off = 0;
    for (const auto &r : records) {
        prof::record("t2w.token2mel_ms", r.times.t2m.total_ms);
        prof::record("t2w.vocoder_ms", r.times.voc.total_ms);
        if (t2m_on_device_ || voc_on_device_) {  // the host <-> device copies of the parts on a device
            double ms = 0, bytes = 0;
            auto add = [&](const t2w::PartTimes &p) {
                ms += p.upload_ms + p.download_ms;
                bytes += static_cast<double>(p.upload_bytes + p.download_bytes);
            };
            if (t2m_on_device_) add(r.times.t2m);
            if (voc_on_device_) add(r.times.voc);
            prof::record("t2w.copy_ms", ms);
            prof::record("t2w.copy_kib", bytes / 1024.0);
        }
        if (r.samples <= 0) continue;
        pipe::Item item;
        size_t n = std::min(static_cast<size_t>(r.samples), pcm.size() - off);
        item.pcm.assign(pcm.begin() + static_cast<std::ptrdiff_t>(off), pcm.begin() + static_cast<std::ptrdiff_t>(off + n));
        off += n;
        item.sample_rate = t2w::T2wModel::sample_rate();
        item.last = r.final;
        ++shared_.t2w_windows;
        out.emit(std::move(item));
        if (!shared_.first_pcm.load(std::memory_order_relaxed)) shared_.raise_first_pcm();
    }
}

void T2wStage::process(pipe::Item &&in, pipe::Emitter &out) {
    if (final_seen_) return;
    final_seen_ = in.last;
    codes_in_ += static_cast<int64_t>(in.audio_tokens.size());
    if (codes_in_ >= shared_.window_codes || in.last) shared_.mark(shared_.marks.window_start);
    run(in.audio_tokens, in.last, out);
}

void T2wStage::finish(pipe::Emitter &out) {
    if (!final_seen_) {
        shared_.mark(shared_.marks.window_start);
        run({}, true, out);
    }  // the upstream ended without a final flag
    final_seen_ = true;
}

}  // namespace rtf::speak
