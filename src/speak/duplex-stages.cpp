#include "speak/duplex-stages.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/elapsed.h"
#include "core/error.h"

namespace rtf::speak {

namespace {
using Clock = std::chrono::steady_clock;

pipe::StageSpec stage_spec(const char *name, int threads = 1, std::vector<int> cpus = {}) {
    pipe::StageSpec s;
    s.name = name;
    s.n_threads = threads;
    s.cpus = std::move(cpus);
    s.device = "CPU";
    return s;
}

class InputStage : public pipe::Stage {
public:
    InputStage(DuplexShared &s, FrameSource &source) : Stage(stage_spec("input")), s_(s), source_(source) {}
    void begin(pipe::StageContext &ctx) override { ctx_ = &ctx; }
    void process(pipe::Item && /*request*/, pipe::Emitter &out) override {
        s_.t0 = s_.clock.now_ms();
        s_.started = true;
        for (size_t i = 0; i < s_.frames.size(); ++i) {
            if (source_.paced()) {
                const double deadline = static_cast<double>(i) * s_.cfg.interval_ms;  // absolute, from t0
                const double wait = deadline - s_.now();
                if (wait > 0) ctx_->sleep_ms(wait);
            }
            std::optional<std::vector<float>> pcm = source_.next(i, *ctx_);  // a live source waits here
            if (!pcm) break;
            const auto t = Clock::now();
            s_.hooks("input", static_cast<int>(i), nullptr);
            pipe::Item item;
            item.origin = static_cast<int64_t>(i);
            item.pcm = std::move(*pcm);
            item.sample_rate = apm::kSampleRate;
            s_.busy[0] += ms_since(t);
            auto &f = s_.frames[i];
            f.silence = std::all_of(item.pcm.begin(), item.pcm.end(), [](float v) { return v == 0.0f; });
            f.t_push_ms = s_.now();
            f.pushed = true;
            out.emit(std::move(item));
        }
    }

private:
    DuplexShared &s_;
    FrameSource &source_;
    pipe::StageContext *ctx_ = nullptr;
};

class ApmStage : public pipe::Stage {
public:
    ApmStage(DuplexShared &s, apm::ApmEncoder &enc, int threads) : Stage(stage_spec("apm", threads, s.cfg.apm_cpus)), s_(s), enc_(enc) {}
    void begin(pipe::StageContext &ctx) override {
        ctx_ = &ctx;
        enc_.reset();  // a new stream
    }
    void process(pipe::Item &&in, pipe::Emitter &out) override {
        s_.hooks("apm", frame_of(in), ctx_);
        const auto t = Clock::now();
        apm::ApmOutput o = enc_.encode_pcm(in.pcm);
        const double ms = ms_since(t);
        s_.busy[1] += ms;
        auto &f = s_.frames[static_cast<size_t>(frame_of(in))];
        f.apm_ms = ms;
        f.n_rows = static_cast<int>(o.n_rows);
        f.t_encoded_ms = s_.now();
        f.encoded = true;
        pipe::Item item;
        item.origin = in.origin;
        item.hidden = std::move(o.data);
        item.n_embd = static_cast<int>(o.n_embd);
        out.emit(std::move(item));
    }

private:
    DuplexShared &s_;
    apm::ApmEncoder &enc_;
    pipe::StageContext *ctx_ = nullptr;
};

class DuplexLlmStage : public pipe::Stage {
public:
    DuplexLlmStage(DuplexShared &s, lm::DuplexLlm &llm, int threads, std::vector<FrameRange> schedule)
        : Stage(stage_spec("llm", threads, s.cfg.llm_cpus)), s_(s), llm_(llm), schedule_(std::move(schedule)) {}
    void begin(pipe::StageContext &ctx) override {
        ctx_ = &ctx;
        llm_.begin_session();
    }
    void process(pipe::Item &&in, pipe::Emitter &out) override {
        const int frame = frame_of(in);
        s_.hooks("llm", frame, ctx_);
        if (in.n_embd != llm_.n_embd())
            throw_usage("llm: the audio encoder's rows are " + std::to_string(in.n_embd) + " wide, the LLM's n_embd is " +
                        std::to_string(llm_.n_embd()) + " (the kit's apm and LLM files do not belong together)");
        std::optional<bool> forced;
        if (!s_.cfg.speak_frames.empty()) forced = in_ranges(schedule_, frame);
        // Barge-in (DuplexReplyControl): a cancelled reply is not continued. A forced schedule
        // listens to the end of the range it was in; a sampled decision is overridden once.
        if (s_.cfg.replies) {
            if (speaking_ && s_.cfg.replies->cancelled(reply_)) hold_listen_ = true;
            if (hold_listen_) {
                if (forced && !*forced) hold_listen_ = false;  // the range ended: follow the schedule again
                else {
                    forced = false;
                    if (s_.cfg.speak_frames.empty()) hold_listen_ = false;
                }
            }
        }
        // The frame's reply, known before its messages leave: a speak frame after a listening
        // one begins the next reply; the listen that ends a reply carries its end message.
        const bool will_speak_known = forced.has_value();
        if (will_speak_known && *forced && !speaking_) begin_reply();
        s_.reply_of_frame[static_cast<size_t>(frame)] = (will_speak_known && !*forced && !speaking_) ? -1 : reply_;
        const auto t = Clock::now();
        double emit_ms = 0;  // time blocked handing messages on (a full TTS queue) is not busy
        const int n_rows = static_cast<int>(in.hidden.size() / static_cast<size_t>(in.n_embd));
        lm::DuplexFrameResult r = llm_.frame(in.hidden.data(), n_rows, forced, [&](lm::DuplexMessage &&m) {
            const auto te = Clock::now();
            if (!will_speak_known && !speaking_) {  // a sampled speak: its first message begins the reply
                begin_reply();
                s_.reply_of_frame[static_cast<size_t>(frame)] = reply_;
            }
            emit_message(std::move(m), out);
            emit_ms += ms_since(te);
        });
        s_.busy[2] += ms_since(t) - emit_ms;
        r.hidden.clear();
        r.hidden.shrink_to_fit();
        // Fixed up only where the frame handed nothing on (the later stages read the entry of
        // every frame they were handed a message of).
        if (r.is_speak && !speaking_) {  // a sampled speak that emitted nothing yet
            begin_reply();
            s_.reply_of_frame[static_cast<size_t>(frame)] = reply_;
        }
        int &entry = s_.reply_of_frame[static_cast<size_t>(frame)];
        if (!r.is_speak && entry != (speaking_ ? reply_ : -1)) entry = speaking_ ? reply_ : -1;
        speaking_ = r.is_speak && !r.end_of_turn;  // a turn end inside a speak frame closes the reply
        auto &f = s_.frames[static_cast<size_t>(frame)];
        f.llm = std::move(r);
        f.t_done_ms = s_.now();
        f.done = true;
        if (s_.cfg.observer) s_.cfg.observer->on_frame(frame, f, f.llm.is_speak ? reply_ : -1);
    }
    void finish(pipe::Emitter &out) override {
        if (auto m = llm_.end_session()) emit_message(std::move(*m), out);
    }

private:
    void begin_reply() {
        ++reply_;
        speaking_ = true;
        if (s_.cfg.replies) s_.cfg.replies->begin(reply_);
    }
    void emit_message(lm::DuplexMessage &&m, pipe::Emitter &out) {
        pipe::Item item;
        item.origin = m.frame;
        item.text_tokens = std::move(m.ids);
        item.hidden = std::move(m.hidden);
        item.n_embd = llm_.n_embd();
        set_mark(item, kChunkEnd, m.llm_finish);
        set_mark(item, kTurnEnd, m.end_of_turn);
        out.emit(std::move(item));
    }
    DuplexShared &s_;
    lm::DuplexLlm &llm_;
    std::vector<FrameRange> schedule_;
    pipe::StageContext *ctx_ = nullptr;
    int reply_ = -1;            // the latest reply begun
    bool speaking_ = false;     // the last frame spoke (a reply is open)
    bool hold_listen_ = false;  // a cancelled reply: listen (see process)
};

class DuplexTtsStage : public pipe::Stage {
public:
    DuplexTtsStage(DuplexShared &s, lm::TtsEngine &tts, int threads) : Stage(stage_spec("tts", threads, s.cfg.tts_cpus)), s_(s), tts_(tts) {}
    void begin(pipe::StageContext &ctx) override {
        ctx_ = &ctx;
        tts_.begin_utterance();
    }
    void process(pipe::Item &&in, pipe::Emitter &out) override {
        s_.hooks("tts", frame_of(in), ctx_);
        lm::TtsInput input;
        if (!s_.reply_cancelled(in)) {  // a cancelled reply's text is not spoken (its turn end still closes it)
            input.ids = in.text_tokens;
            input.hidden = in.hidden;
        }
        input.is_last = has_mark(in, kTurnEnd);
        input.llm_finish = has_mark(in, kChunkEnd);
        const auto t = Clock::now();
        std::vector<lm::AudioChunk> chunks = tts_.feed_queued(std::span<const lm::TtsInput>(&input, 1));
        s_.busy[3] += ms_since(t);
        if (!input.ids.empty()) ++s_.tts_calls;
        for (auto &c : chunks) {
            if (c.codes.empty() && !c.is_final) continue;  // a bare chunk end: Token2Wav has nothing to do
            // A flush call that samples no code pushes its empty is_final chunk and then the
            // empty final marker (tts-generator): one turn end is enough for Token2Wav, a second
            // would flush its look-ahead as an audio turn of its own.
            if (c.codes.empty() && final_sent_) continue;
            final_sent_ = c.is_final;
            pipe::Item item;
            item.origin = in.origin;
            item.audio_tokens = std::move(c.codes);
            set_mark(item, kChunkEnd, c.is_chunk_end);
            set_mark(item, kTurnEnd, c.is_final);
            out.emit(std::move(item));
        }
    }

private:
    DuplexShared &s_;
    lm::TtsEngine &tts_;
    pipe::StageContext *ctx_ = nullptr;
    bool final_sent_ = false;  // the last chunk handed on ended a turn
};

class DuplexT2wStage : public pipe::Stage {
public:
    DuplexT2wStage(DuplexShared &s, t2w::T2wStream &st, int threads) : Stage(stage_spec("t2w", threads, s.cfg.t2w_cpus)), s_(s), st_(st) {
        st_.reset();
    }
    void begin(pipe::StageContext &ctx) override { ctx_ = &ctx; }
    void process(pipe::Item &&in, pipe::Emitter &out) override {
        s_.hooks("t2w", frame_of(in), ctx_);
        if (s_.reply_cancelled(in)) {  // barge-in: none of this reply's codes are rendered
            if (!has_mark(in, kTurnEnd)) return;
            st_.reset();  // drops its look-ahead: the next reply starts a new stream
            pipe::Item item;
            item.sample_rate = t2w::T2wModel::sample_rate();
            item.origin = in.origin;
            set_mark(item, kTurnEnd, true);
            out.emit(std::move(item));
            return;
        }
        std::vector<t2w::WindowRecord> records;
        const auto t = Clock::now();
        std::vector<float> pcm = st_.push(in.audio_tokens, has_mark(in, kTurnEnd), &records);
        s_.busy[4] += ms_since(t);
        // One item per window that rendered samples; the turn's end marks only the last item
        // of the final push (a final flush may run several windows).
        std::vector<pipe::Item> items;
        size_t off = 0;
        for (const auto &r : records) {
            if (r.samples <= 0) continue;
            pipe::Item item;
            const size_t n = std::min(static_cast<size_t>(r.samples), pcm.size() - off);
            item.pcm.assign(pcm.begin() + static_cast<std::ptrdiff_t>(off), pcm.begin() + static_cast<std::ptrdiff_t>(off + n));
            off += n;
            item.sample_rate = t2w::T2wModel::sample_rate();
            item.origin = in.origin;
            items.push_back(std::move(item));
        }
        if (has_mark(in, kTurnEnd) && items.empty()) {  // every audio turn ends with one is_final chunk
            pipe::Item item;
            item.sample_rate = t2w::T2wModel::sample_rate();
            item.origin = in.origin;
            items.push_back(std::move(item));
        }
        if (has_mark(in, kTurnEnd)) set_mark(items.back(), kTurnEnd, true);
        for (auto &item : items) out.emit(std::move(item));
    }

private:
    DuplexShared &s_;
    t2w::T2wStream &st_;
    pipe::StageContext *ctx_ = nullptr;
};

}  // namespace

std::vector<pipe::Stage *> DuplexStages::list() const {
    std::vector<pipe::Stage *> v;
    for (const auto &st : owned) v.push_back(st.get());
    return v;
}

DuplexStages make_duplex_stages(DuplexShared &s, DuplexEngines &e, FrameSource &source, std::vector<FrameRange> schedule) {
    const DuplexConfig &cfg = s.cfg;
    DuplexStages st;
    st.owned.push_back(std::make_unique<InputStage>(s, source));
    st.owned.push_back(std::make_unique<ApmStage>(s, *e.apm, cfg.apm.n_threads));
    st.owned.push_back(std::make_unique<DuplexLlmStage>(s, *e.llm, cfg.llm.placement.threads(), std::move(schedule)));
    st.owned.push_back(std::make_unique<DuplexTtsStage>(s, *e.tts, cfg.tts.placement.threads()));
    st.owned.push_back(std::make_unique<DuplexT2wStage>(s, *e.t2w_stream, cfg.t2w.threads_voc));
    return st;
}

}  // namespace rtf::speak
