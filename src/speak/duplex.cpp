#include "speak/duplex.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>
#include <stdexcept>
#include <thread>

#include "core/elapsed.h"
#include "core/error.h"
#include "pipeline/pipeline.h"
#include "pipeline/stage.h"
#include "profile/clock.h"

namespace rtf::speak {

namespace {
using Clock = std::chrono::steady_clock;
constexpr const char *kStages[] = {"input", "apm", "llm", "tts", "t2w"};
}  // namespace

std::vector<FrameRange> parse_frame_ranges(const std::string &text, const std::string &flag) {
    std::vector<FrameRange> out;
    auto bad = [&](const std::string &why) -> void {
        throw_usage(flag + " '" + text + "': " + why + " (use frame indexes N or ranges N-M, comma-separated, e.g. 4-12,20-28)");
    };
    if (text.empty()) bad("empty");
    size_t i = 0;
    auto number = [&]() -> int {
        size_t j = i;
        while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
        if (j == i || j - i > 6) bad("expected a frame index at offset " + std::to_string(i));
        const int v = std::stoi(text.substr(i, j - i));
        i = j;
        return v;
    };
    while (true) {
        FrameRange r;
        r.first = r.last = number();
        if (i < text.size() && text[i] == '-') {
            ++i;
            r.last = number();
        }
        if (r.last < r.first) bad("range " + std::to_string(r.first) + "-" + std::to_string(r.last) + " runs backwards");
        if (!out.empty() && r.first <= out.back().last) bad("ranges must ascend without overlapping");
        out.push_back(r);
        if (i == text.size()) break;
        if (text[i] != ',') bad(std::string("unexpected '") + text[i] + "' at offset " + std::to_string(i));
        ++i;
    }
    return out;
}

bool in_ranges(const std::vector<FrameRange> &r, int frame) {
    return std::any_of(r.begin(), r.end(), [&](const FrameRange &x) { return frame >= x.first && frame <= x.last; });
}

void DuplexConfig::validate() const {
    if (models_dir.empty()) throw_usage("--models is empty: give a kit directory (rtf twin --out DIR makes one)");
    if (input.empty()) throw_usage("--input is empty: give a recording (WAV, any rate and channels)");
    if (!(interval_ms >= 1 && interval_ms <= 60000))
        throw_usage("--interval " + std::to_string(interval_ms) + " ms is out of range (1 ms .. 60 s)");
    if (n_frames < 0 || n_frames > 100000) throw_usage("--frames " + std::to_string(n_frames) + ": use 0 (the input's) .. 100000");
    if (frame_ms < 100 || frame_ms > 30000) throw_usage("--frame-ms " + std::to_string(frame_ms) + " is out of range (100 .. 30000)");
    if (!(startup_buffer_ms >= 0) || !std::isfinite(startup_buffer_ms)) throw_usage("--startup-buffer-ms must be a finite number >= 0");
    if (!(max_gap_ms >= 0) || !std::isfinite(max_gap_ms)) throw_usage("--max-gap-ms must be a finite number >= 0");
    if (!(twin_text_rate >= 0 && twin_text_rate <= 1000))
        throw_usage("--twin-text-rate: must be in [0, 1000] text tokens per second of audio (0 = no cap)");
    for (auto [cap, flag] : {std::pair{encoder_queue_cap, "--encoder-queue-cap"}, std::pair{prefill_queue_cap, "--prefill-queue-cap"},
                             std::pair{tts_queue_cap, "--d1"}, std::pair{t2w_queue_cap, "--d2"}})
        if (cap < 1 || cap > pipe::PipelineConfig::kMaxDepth)
            throw_usage(std::string(flag) + " " + std::to_string(cap) + ": use 1 .. " + std::to_string(pipe::PipelineConfig::kMaxDepth));
    for (auto [n, flag] : {std::pair{threads, "--threads"}, std::pair{llm_threads, "--llm-threads"},
                           std::pair{tts_threads, "--tts-threads"}, std::pair{t2w_threads_t2m, "--t2w-threads-t2m"},
                           std::pair{t2w_threads_voc, "--t2w-threads-voc"}, std::pair{apm_threads, "--apm-threads"}})
        if (n < 0 || n > 256) throw_usage(std::string(flag) + " " + std::to_string(n) + ": use 0 (auto) .. 256");
    if (!speak_frames.empty()) {
        auto r = parse_frame_ranges(speak_frames, "--speak-frames");
        if (r.front().first < llm.force_listen_count)
            throw_usage("--speak-frames '" + speak_frames + "': frame " + std::to_string(r.front().first) +
                        " is one of the first " + std::to_string(llm.force_listen_count) +
                        " frames, which always listen (force_listen); start at " + std::to_string(llm.force_listen_count) +
                        " or later");
        if (n_frames > 0 && r.back().last >= n_frames)
            throw_usage("--speak-frames '" + speak_frames + "': frame " + std::to_string(r.back().last) +
                        " is past the last frame (--frames " + std::to_string(n_frames) + " pushes 0 .. " +
                        std::to_string(n_frames - 1) + ")");
    }
    auto hook = [](const std::string &s, const char *what) {
        if (s.empty()) return;
        for (const char *n : kStages)
            if (s == n) return;
        throw_usage(std::string(what) + ": '" + s + "' is not a stage (input, apm, llm, tts, t2w)");
    };
    hook(fail_stage, "fail hook stage");
    hook(delay_stage, "delay hook stage");
    if (!(delay_ms >= 0)) throw_usage("delay hook: ms must be >= 0");
}

void DuplexConfig::finalize() {
    if (threads == 0) {
        const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        threads = std::clamp(hw / 2, 1, 4);
    }
    auto or_default = [](int own, int dflt) { return own > 0 ? own : dflt; };
    apm.n_threads = or_default(apm_threads, threads);
    llm.placement.n_threads = llm.placement.n_threads_batch = or_default(llm_threads, threads);
    // A frame's prefill is ~15 rows: a batch larger than a small --llm-ctx buys nothing.
    llm.placement.n_batch = std::min(llm.placement.n_batch, llm.placement.n_ctx);
    tts.placement.n_threads = tts.placement.n_threads_batch = or_default(tts_threads, threads);
    t2w.threads_t2m = or_default(t2w_threads_t2m, std::max(1, threads / 2));
    t2w.threads_voc = or_default(t2w_threads_voc, std::max(1, threads / 2));
    tts.mode = lm::TtsMode::Duplex;
}

nlohmann::json DuplexConfig::to_json() const {
    return {{"models", models_dir},
            {"input", input},
            {"interval_ms", interval_ms},
            {"n_frames", n_frames},
            {"speak_frames", speak_frames},
            {"frame_ms", frame_ms},
            {"startup_buffer_ms", startup_buffer_ms},
            {"max_gap_ms", max_gap_ms},
            {"twin_text_rate", twin_text_rate},
            {"queues", {{"encoder", encoder_queue_cap}, {"prefill", prefill_queue_cap}, {"tts", tts_queue_cap}, {"t2w", t2w_queue_cap}}},
            {"threads", threads},
            {"llm", llm.to_json()},
            {"tts", tts.to_json()},
            {"t2w", t2w.to_json()},
            {"apm", {{"n_threads", apm.n_threads}, {"streaming", apm.streaming}}}};
}

int duplex_twin_text_cap(const DuplexConfig &cfg, bool kit_is_twin) {
    if (!kit_is_twin || !(cfg.twin_text_rate > 0)) return 0;
    const double n = std::ceil(cfg.twin_text_rate * cfg.frame_ms / 1000.0);
    return static_cast<int>(std::clamp(n, 1.0, static_cast<double>(cfg.llm.max_speak_tokens)));
}

std::unique_ptr<DuplexEngines> load_duplex_engines(DuplexConfig &cfg) {
    auto e = std::make_unique<DuplexEngines>();
    e->kit = resolve_kit(cfg.models_dir);
    e->apm_path = resolve_apm(cfg.models_dir);
    cfg.llm.text_cap = duplex_twin_text_cap(cfg, e->kit.is_twin);
    cfg.llm.model_path = e->kit.llm;
    cfg.tts.model_path = e->kit.tts;
    if (cfg.tts.projector_path.empty()) cfg.tts.projector_path = e->kit.projector;
    cfg.llm.validate();
    cfg.tts.validate();
    cfg.apm.validate();

    auto t0 = Clock::now();
    e->apm_model = std::make_unique<apm::ApmModel>(e->apm_path);
    e->apm = std::make_unique<apm::ApmEncoder>(*e->apm_model, cfg.apm);
    e->apm->encode_pcm(std::vector<float>(static_cast<size_t>(apm::kSampleRate), 0.0f));  // first touch
    e->apm->reset();
    e->load_ms_apm = ms_since(t0);
    t0 = Clock::now();
    e->llm = std::make_unique<lm::DuplexLlm>(cfg.llm);
    e->llm->warm();
    e->load_ms_llm = ms_since(t0);
    t0 = Clock::now();
    e->tts = std::make_unique<lm::TtsEngine>(cfg.tts);
    e->tts->warm();
    e->load_ms_tts = ms_since(t0);
    t0 = Clock::now();
    e->t2w = t2w::T2wModel::load(e->kit.t2w_dir, cfg.t2w);
    e->t2w_stream = std::make_unique<t2w::T2wStream>(*e->t2w, cfg.t2w);
    e->t2w_stream->warm();
    e->load_ms_t2w = ms_since(t0);
    return e;
}

std::vector<std::vector<float>> input_frames(const DuplexConfig &cfg, const apm::AudioInput &audio, int *n_silence) {
    const size_t fs = static_cast<size_t>(cfg.frame_ms) * apm::kSampleRate / 1000;
    std::vector<std::vector<float>> frames =
        audio.samples.empty() ? std::vector<std::vector<float>>{} : apm::split_frames(audio.samples, fs);
    if (!frames.empty()) frames.back().resize(fs, 0.0f);  // every frame a full one
    const size_t n = cfg.n_frames > 0 ? static_cast<size_t>(cfg.n_frames) : frames.size();
    int silent = 0;
    while (frames.size() < n) {
        frames.emplace_back(fs, 0.0f);
        ++silent;
    }
    frames.resize(n);
    if (n_silence) *n_silence = silent;
    return frames;
}

namespace {

pipe::StageSpec stage_spec(const char *name, int threads = 1) {
    pipe::StageSpec s;
    s.name = name;
    s.n_threads = threads;
    s.device = "CPU";
    return s;
}

// What every stage writes (each its own fields; read after the pipeline joined them).
struct Shared {
    Shared(const DuplexConfig &c, prof::Clock &k) : cfg(c), clock(k) {}
    const DuplexConfig &cfg;
    prof::Clock &clock;
    double t0 = 0;         // set by the input stage before its first item leaves
    bool started = false;  // t0 is set
    std::vector<DuplexFrameRecord> frames;
    std::vector<DuplexChunkRecord> chunks;
    std::vector<double> busy;  // per kStages entry
    int tts_calls = 0;
    int audio_turn = 0;
    int last_text_frame = -1;  // written by tts: the frame of the latest text message
    double now() const { return clock.now_ms() - t0; }

    // The test hooks, on the stage's thread.
    void hooks(const char *stage, int frame, const pipe::StageContext *ctx) const {
        if (cfg.delay_ms > 0 && cfg.delay_stage == stage) {
            if (ctx) ctx->sleep_ms(cfg.delay_ms);
            else std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(cfg.delay_ms));
        }
        if (cfg.fail_stage == stage && cfg.fail_frame == frame)
            throw std::runtime_error("test hook: stage '" + std::string(stage) + "' fails at frame " + std::to_string(frame));
    }
};

class InputStage : public pipe::Stage {
public:
    InputStage(Shared &s, const std::vector<std::vector<float>> &frames)
        : Stage(stage_spec("input")), s_(s), frames_(frames) {}
    void begin(pipe::StageContext &ctx) override { ctx_ = &ctx; }
    void process(pipe::Item && /*request*/, pipe::Emitter &out) override {
        s_.t0 = s_.clock.now_ms();
        s_.started = true;
        for (size_t i = 0; i < frames_.size(); ++i) {
            const double deadline = static_cast<double>(i) * s_.cfg.interval_ms;  // absolute, from t0
            const double wait = deadline - s_.now();
            if (wait > 0) ctx_->sleep_ms(wait);
            const auto t = Clock::now();
            s_.hooks("input", static_cast<int>(i), nullptr);
            pipe::Item item;
            item.frame = static_cast<int>(i);
            item.pcm = frames_[i];
            item.sample_rate = apm::kSampleRate;
            s_.busy[0] += ms_since(t);
            auto &f = s_.frames[i];
            f.silence = std::all_of(frames_[i].begin(), frames_[i].end(), [](float v) { return v == 0.0f; });
            f.t_push_ms = s_.now();
            f.pushed = true;
            out.emit(std::move(item));
        }
    }

private:
    Shared &s_;
    const std::vector<std::vector<float>> &frames_;
    pipe::StageContext *ctx_ = nullptr;
};

class ApmStage : public pipe::Stage {
public:
    ApmStage(Shared &s, apm::ApmEncoder &enc, int threads) : Stage(stage_spec("apm", threads)), s_(s), enc_(enc) {}
    void begin(pipe::StageContext &ctx) override {
        ctx_ = &ctx;
        enc_.reset();  // a new stream
    }
    void process(pipe::Item &&in, pipe::Emitter &out) override {
        s_.hooks("apm", in.frame, ctx_);
        const auto t = Clock::now();
        apm::ApmOutput o = enc_.encode_pcm(in.pcm);
        const double ms = ms_since(t);
        s_.busy[1] += ms;
        auto &f = s_.frames[static_cast<size_t>(in.frame)];
        f.apm_ms = ms;
        f.n_rows = static_cast<int>(o.n_rows);
        f.t_encoded_ms = s_.now();
        f.encoded = true;
        pipe::Item item;
        item.frame = in.frame;
        item.hidden = std::move(o.data);
        item.n_embd = static_cast<int>(o.n_embd);
        out.emit(std::move(item));
    }

private:
    Shared &s_;
    apm::ApmEncoder &enc_;
    pipe::StageContext *ctx_ = nullptr;
};

class DuplexLlmStage : public pipe::Stage {
public:
    DuplexLlmStage(Shared &s, lm::DuplexLlm &llm, int threads, std::vector<FrameRange> schedule)
        : Stage(stage_spec("llm", threads)), s_(s), llm_(llm), schedule_(std::move(schedule)) {}
    void begin(pipe::StageContext &ctx) override {
        ctx_ = &ctx;
        llm_.begin_session();
    }
    void process(pipe::Item &&in, pipe::Emitter &out) override {
        s_.hooks("llm", in.frame, ctx_);
        if (in.n_embd != llm_.n_embd())
            throw_usage("llm: the audio encoder's rows are " + std::to_string(in.n_embd) + " wide, the LLM's n_embd is " +
                        std::to_string(llm_.n_embd()) + " (the kit's apm and LLM files do not belong together)");
        std::optional<bool> forced;
        if (!s_.cfg.speak_frames.empty()) forced = in_ranges(schedule_, in.frame);
        const auto t = Clock::now();
        double emit_ms = 0;  // time blocked handing messages on (a full TTS queue) is not busy
        const int n_rows = static_cast<int>(in.hidden.size() / static_cast<size_t>(in.n_embd));
        lm::DuplexFrameResult r = llm_.frame(in.hidden.data(), n_rows, forced, [&](lm::DuplexMessage &&m) {
            const auto te = Clock::now();
            emit_message(std::move(m), out);
            emit_ms += ms_since(te);
        });
        s_.busy[2] += ms_since(t) - emit_ms;
        r.hidden.clear();
        r.hidden.shrink_to_fit();
        auto &f = s_.frames[static_cast<size_t>(in.frame)];
        f.llm = std::move(r);
        f.t_done_ms = s_.now();
        f.done = true;
    }
    void finish(pipe::Emitter &out) override {
        if (auto m = llm_.end_session()) emit_message(std::move(*m), out);
    }

private:
    void emit_message(lm::DuplexMessage &&m, pipe::Emitter &out) {
        pipe::Item item;
        item.frame = m.frame;
        item.text_tokens = std::move(m.ids);
        item.hidden = std::move(m.hidden);
        item.n_embd = llm_.n_embd();
        item.chunk_end = m.llm_finish;
        item.turn_end = m.end_of_turn;
        out.emit(std::move(item));
    }
    Shared &s_;
    lm::DuplexLlm &llm_;
    std::vector<FrameRange> schedule_;
    pipe::StageContext *ctx_ = nullptr;
};

class DuplexTtsStage : public pipe::Stage {
public:
    DuplexTtsStage(Shared &s, lm::TtsEngine &tts, int threads) : Stage(stage_spec("tts", threads)), s_(s), tts_(tts) {}
    void begin(pipe::StageContext &ctx) override {
        ctx_ = &ctx;
        tts_.begin_utterance();
    }
    void process(pipe::Item &&in, pipe::Emitter &out) override {
        s_.hooks("tts", in.frame, ctx_);
        lm::TtsInput input;
        input.ids = in.text_tokens;
        input.hidden = in.hidden;
        input.is_last = in.turn_end;
        input.llm_finish = in.chunk_end;
        const auto t = Clock::now();
        std::vector<lm::AudioChunk> chunks = tts_.feed_queued(std::span<const lm::TtsInput>(&input, 1));
        s_.busy[3] += ms_since(t);
        if (!in.text_tokens.empty()) ++s_.tts_calls;
        for (auto &c : chunks) {
            if (c.codes.empty() && !c.is_final) continue;  // a bare chunk end: Token2Wav has nothing to do
            // A flush call that samples no code pushes its empty is_final chunk and then the
            // empty final marker (tts-generator): one turn end is enough for Token2Wav, a second
            // would flush its look-ahead as an audio turn of its own.
            if (c.codes.empty() && final_sent_) continue;
            final_sent_ = c.is_final;
            pipe::Item item;
            item.frame = in.frame;
            item.audio_tokens = std::move(c.codes);
            item.chunk_end = c.is_chunk_end;
            item.turn_end = c.is_final;
            out.emit(std::move(item));
        }
    }

private:
    Shared &s_;
    lm::TtsEngine &tts_;
    pipe::StageContext *ctx_ = nullptr;
    bool final_sent_ = false;  // the last chunk handed on ended a turn
};

class DuplexT2wStage : public pipe::Stage {
public:
    DuplexT2wStage(Shared &s, t2w::T2wStream &st, int threads) : Stage(stage_spec("t2w", threads)), s_(s), st_(st) {
        st_.reset();
    }
    void begin(pipe::StageContext &ctx) override { ctx_ = &ctx; }
    void process(pipe::Item &&in, pipe::Emitter &out) override {
        s_.hooks("t2w", in.frame, ctx_);
        std::vector<t2w::WindowRecord> records;
        const auto t = Clock::now();
        std::vector<float> pcm = st_.push(in.audio_tokens, in.turn_end, &records);
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
            item.frame = in.frame;
            items.push_back(std::move(item));
        }
        if (in.turn_end && items.empty()) {  // every audio turn ends with one is_final chunk
            pipe::Item item;
            item.sample_rate = t2w::T2wModel::sample_rate();
            item.frame = in.frame;
            items.push_back(std::move(item));
        }
        if (in.turn_end) items.back().turn_end = true;
        for (auto &item : items) out.emit(std::move(item));
    }

private:
    Shared &s_;
    t2w::T2wStream &st_;
    pipe::StageContext *ctx_ = nullptr;
};

}  // namespace

DuplexResult run_duplex(DuplexEngines &e, const DuplexConfig &cfg, const std::vector<std::vector<float>> &frames) {
    if (frames.empty()) throw_usage("duplex: no frames to push (an empty input and --frames 0)");
    prof::Clock &clock = prof::default_clock();
    Shared s(cfg, clock);
    s.frames.resize(frames.size());
    s.busy.assign(std::size(kStages), 0.0);
    const std::vector<FrameRange> schedule =
        cfg.speak_frames.empty() ? std::vector<FrameRange>{} : parse_frame_ranges(cfg.speak_frames, "--speak-frames");

    InputStage input(s, frames);
    ApmStage apm_stage(s, *e.apm, cfg.apm.n_threads);
    DuplexLlmStage llm_stage(s, *e.llm, cfg.llm.placement.threads(), schedule);
    DuplexTtsStage tts_stage(s, *e.tts, cfg.tts.placement.threads());
    DuplexT2wStage t2w_stage(s, *e.t2w_stream, cfg.t2w.threads_voc);

    pipe::PipelineConfig pc;
    pc.depths = {cfg.encoder_queue_cap, cfg.prefill_queue_cap, cfg.tts_queue_cap, cfg.t2w_queue_cap};
    pc.profile = false;
    pc.cancel = cfg.cancel;
    auto sink = [&](const pipe::Item &c) {
        DuplexChunkRecord r;
        r.t_complete_ms = s.now();
        r.n_samples = static_cast<int64_t>(c.pcm.size());
        r.sample_rate = c.sample_rate;
        r.is_final = c.turn_end;
        r.audio_turn_id = s.audio_turn;
        r.frame = c.frame;
        if (c.turn_end) ++s.audio_turn;
        s.chunks.push_back(r);
    };

    DuplexResult res;
    for (const auto &f : frames)
        if (f.empty()) throw_usage("duplex: frame of no samples");
    try {
        pipe::RunResult rr = pipe::run_pipeline({&input, &apm_stage, &llm_stage, &tts_stage, &t2w_stage}, pipe::Item{}, sink, pc);
        res.cancelled = rr.cancelled;
        res.completed = !rr.cancelled;
        if (rr.cancelled) res.error = "cancelled (Ctrl-C) before every frame was handled";
    } catch (const Error &x) {
        res.error = x.what();
        const std::string w = x.what();
        const auto a = w.find("stage '");
        if (a != std::string::npos) {
            const auto b = w.find('\'', a + 7);
            if (b != std::string::npos) res.failed_stage = w.substr(a + 7, b - a - 7);
        }
    }
    res.session_ms = s.started ? s.now() : 0;
    // Frames pushed but never done end at the stop: failed, with the time they waited.
    for (auto &f : s.frames)
        if (f.pushed && !f.done) f.t_done_ms = std::max(f.t_push_ms, res.session_ms);
    res.frames = std::move(s.frames);
    res.chunks = std::move(s.chunks);
    res.tts_calls = s.tts_calls;
    for (size_t i = 0; i < std::size(kStages); ++i) res.busy_ms.emplace_back(kStages[i], s.busy[i]);

    const auto &tk = e.llm->tokens();
    res.meta = {{"stream_interval_ms", cfg.interval_ms},
                {"n_threads", cfg.threads},
                {"sample_rate_hint", res.chunks.empty() ? 24000 : res.chunks.front().sample_rate},
                {"llm_path", e.kit.llm},
                {"vision_backend", "none"},
                {"use_tts", true},
                {"media_type", "audio"},
                {"decision", cfg.speak_frames.empty() ? "sampled" : "forced"},
                {"speak_frames", cfg.speak_frames},
                {"force_listen_count", cfg.llm.force_listen_count},
                {"forced_speak_tokens", e.llm->config().forced_speak_tokens},
                {"twin_text_rate", cfg.twin_text_rate},
                {"twin_text_cap", e.llm->config().text_cap},  // valid tokens per sampled speak frame; 0 = none
                {"context_slides", e.llm->n_slides()},
                {"llm_n_ctx", e.llm->n_ctx()},
                {"frame_ms", cfg.frame_ms},
                {"queues", {{"encoder", cfg.encoder_queue_cap}, {"prefill", cfg.prefill_queue_cap}, {"tts", cfg.tts_queue_cap},
                            {"t2w", cfg.t2w_queue_cap}}},
                {"kit", e.kit.to_json()},
                {"kit_is_twin", e.kit.is_twin},
                {"apm_path", e.apm_path},
                {"tokens", tk.to_json()},
                {"load_ms", {{"apm", e.load_ms_apm}, {"llm", e.load_ms_llm}, {"tts", e.load_ms_tts}, {"t2w", e.load_ms_t2w}}},
                {"config", cfg.to_json()}};
    return res;
}

std::string binding_stage(const DuplexResult &r) {
    std::string best;
    double v = 0;
    for (const auto &[name, ms] : r.busy_ms)
        if (ms > v) {
            v = ms;
            best = name;
        }
    return best;
}

namespace {
// At most `n` bytes of `s`, not cutting a UTF-8 sequence.
std::string utf8_prefix(const std::string &s, size_t n) {
    if (s.size() <= n) return s;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return s.substr(0, n);
}
}  // namespace

nlohmann::json to_json(const DuplexResult &r) {
    nlohmann::json frames = nlohmann::json::array();
    int turn = -1;
    bool prev_speak = false;
    for (size_t i = 0; i < r.frames.size(); ++i) {
        const auto &f = r.frames[i];
        if (!f.pushed) continue;
        const auto &l = f.llm;
        const bool speak = f.done && l.is_speak;
        if (speak && !prev_speak) ++turn;
        prev_speak = speak;
        frames.push_back({{"user_seq", i},
                          {"frame_id", i},
                          {"t_push_ms", f.t_push_ms},
                          {"t_encoded_ms", f.encoded ? nlohmann::json(f.t_encoded_ms) : nlohmann::json(nullptr)},
                          {"t_done_ms", f.t_done_ms},
                          {"ok", f.done},
                          {"is_speak", speak},
                          {"speak_turn_id", speak ? turn : -1},
                          {"ms_decode", l.decode_ms},
                          {"ms_total", f.t_done_ms - f.t_push_ms},
                          {"n_past_after", l.n_past_after},
                          {"n_discarded", l.n_discarded},
                          {"text_len", l.text.size()},
                          {"text", utf8_prefix(l.text, 80)},
                          {"apm_ms", f.apm_ms},
                          {"apm_rows", f.n_rows},
                          {"llm_prefill_ms", l.prefill_ms},
                          {"llm_prefill_rows", l.n_prefill_rows},
                          {"llm_unit_end_ms", l.unit_end_ms},
                          {"n_text_tokens", l.ids.size()},
                          {"n_sampled", l.n_sampled},
                          {"decision", l.decision},
                          {"forced", l.forced},
                          {"force_listen", l.force_listen},
                          {"end", l.end},
                          {"end_of_turn", l.end_of_turn},
                          {"silence", f.silence}});
    }
    nlohmann::json chunks = nlohmann::json::array();
    for (const auto &c : r.chunks)
        chunks.push_back({{"t_complete_ms", c.t_complete_ms},
                          {"n_samples", c.n_samples},
                          {"sample_rate", c.sample_rate},
                          {"duration_s", c.sample_rate > 0 ? static_cast<double>(c.n_samples) / c.sample_rate : 0.0},
                          {"is_final", c.is_final},
                          {"audio_turn_id", c.audio_turn_id},
                          {"frame", c.frame}});
    nlohmann::json stages = nlohmann::json::array();
    for (const auto &[name, ms] : r.busy_ms)
        stages.push_back({{"name", name}, {"busy_ms", ms}, {"utilization", r.session_ms > 0 ? ms / r.session_ms : 0.0}});
    return {{"schema", "rtfkit.duplex/1"},
            {"meta", r.meta},
            {"frames", frames},
            {"audio_chunks", chunks},
            {"stages", stages},
            {"binding_stage", binding_stage(r)},
            {"tts_calls", r.tts_calls},
            {"session_ms", r.session_ms},
            {"completed", r.completed},
            {"cancelled", r.cancelled},
            {"error", r.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.error)},
            {"failed_stage", r.failed_stage.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.failed_stage)}};
}

}  // namespace rtf::speak
