#include "speak/duplex.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>
#include <stdexcept>
#include <thread>

#include "core/elapsed.h"
#include "core/error.h"
#include "core/topology.h"
#include "pipeline/pipeline.h"
#include "profile/clock.h"
#include "speak/duplex-stages.h"

namespace rtf::speak {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

std::vector<FrameRange> parse_frame_ranges(const std::string &text, const std::string &setting) {
    std::vector<FrameRange> out;
    auto bad = [&](const std::string &why) -> void {
        throw_setting(setting, "'" + text + "': " + why + " (use frame indexes N or ranges N-M, comma-separated, e.g. 4-12,20-28)");
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
    if (models_dir.empty()) throw_setting("models", "is empty: give a kit directory (rtf twin --out DIR makes one)");
    if (input.empty()) throw_setting("input", "is empty: give a recording (WAV, any rate and channels)");
    if (!(interval_ms >= 1 && interval_ms <= 60000))
        throw_setting("interval", std::to_string(interval_ms) + " ms is out of range (1 ms .. 60 s)");
    if (n_frames < 0 || n_frames > 100000) throw_setting("frames", std::to_string(n_frames) + ": use 0 (the input's) .. 100000");
    if (frame_ms < 100 || frame_ms > 30000) throw_setting("frame-ms", std::to_string(frame_ms) + " is out of range (100 .. 30000)");
    if (!(startup_buffer_ms >= 0) || !std::isfinite(startup_buffer_ms)) throw_setting("startup-buffer-ms", "must be a finite number >= 0");
    if (!(max_gap_ms >= 0) || !std::isfinite(max_gap_ms)) throw_setting("max-gap-ms", "must be a finite number >= 0");
    if (!(twin_text_rate >= 0 && twin_text_rate <= 1000))
        throw_setting("twin-text-rate", "must be in [0, 1000] text tokens per second of audio (0 = no cap)");
    for (auto [cap, setting] : {std::pair{encoder_queue_cap, "encoder-queue-cap"}, std::pair{prefill_queue_cap, "prefill-queue-cap"},
                             std::pair{tts_queue_cap, "d1"}, std::pair{t2w_queue_cap, "d2"}})
        if (cap < 1 || cap > pipe::PipelineConfig::kMaxDepth)
            throw_setting(setting, std::to_string(cap) + ": use 1 .. " + std::to_string(pipe::PipelineConfig::kMaxDepth));
    for (auto [n, setting] : {std::pair{threads, "threads"}, std::pair{llm_threads, "llm-threads"},
                           std::pair{tts_threads, "tts-threads"}, std::pair{t2w_threads_t2m, "t2w-threads-t2m"},
                           std::pair{t2w_threads_voc, "t2w-threads-voc"}, std::pair{apm_threads, "apm-threads"}})
        if (n < 0 || n > 256) throw_setting(setting, std::to_string(n) + ": use 0 (auto) .. 256");
    if (!speak_frames.empty()) {
        auto r = parse_frame_ranges(speak_frames, "speak-frames");
        if (r.front().first < llm.force_listen_count)
            throw_setting("speak-frames", "'" + speak_frames + "': frame " + std::to_string(r.front().first) +
                        " is one of the first " + std::to_string(llm.force_listen_count) +
                        " frames, which always listen (force_listen); start at " + std::to_string(llm.force_listen_count) +
                        " or later");
        if (n_frames > 0 && r.back().last >= n_frames)
            throw_setting("speak-frames", "'" + speak_frames + "': frame " + std::to_string(r.back().last) +
                        " is past the last frame (frames " + std::to_string(n_frames) + " pushes 0 .. " +
                        std::to_string(n_frames - 1) + ")");
    }
    auto hook = [](const std::string &s, const char *what) {
        if (s.empty()) return;
        for (const char *n : kDuplexStages)
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
            {"cpus", {{"apm", format_pu_list(apm_cpus)}, {"llm", format_pu_list(llm_cpus)}, {"tts", format_pu_list(tts_cpus)},
                      {"t2w", format_pu_list(t2w_cpus)}}},
            {"llm", llm.to_json()},
            {"tts", tts.to_json()},
            {"t2w", t2w.to_json()},
            {"apm", {{"n_threads", apm.n_threads}, {"streaming", apm.streaming}, {"weight_type", apm.weight_type}}}};
}

int duplex_twin_text_cap(const DuplexConfig &cfg, bool kit_is_twin) {
    if (!kit_is_twin || !(cfg.twin_text_rate > 0)) return 0;
    const double n = std::ceil(cfg.twin_text_rate * cfg.frame_ms / 1000.0);
    return static_cast<int>(std::clamp(n, 1.0, static_cast<double>(cfg.llm.max_speak_tokens)));
}

std::unique_ptr<DuplexEngines> load_duplex_engines(const DuplexConfig &given) {
    auto e = std::make_unique<DuplexEngines>();
    e->config = given;
    DuplexConfig &cfg = e->config;
    e->kit = resolve_kit(cfg.models_dir);
    require_minicpmo45(e->kit, "duplex");
    e->apm_path = resolve_apm(cfg.models_dir);
    cfg.llm.text_cap = duplex_twin_text_cap(cfg, e->kit.is_twin);
    cfg.llm.model_path = e->kit.llm;
    cfg.tts.model_path = e->kit.tts;
    if (cfg.tts.projector_path.empty()) cfg.tts.projector_path = e->kit.projector;
    cfg.llm.validate();
    cfg.tts.validate();
    cfg.apm.validate();

    auto t0 = Clock::now();
    e->apm_model = std::make_unique<apm::ApmModel>(e->apm_path, cfg.apm.weight_type);
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

DuplexResult run_duplex(DuplexEngines &e, const DuplexConfig &cfg, const std::vector<std::vector<float>> &frames) {
    if (frames.empty()) throw_usage("duplex: no frames to push (an empty input and --frames 0)");
    for (const auto &f : frames)
        if (f.empty()) throw_usage("duplex: frame of no samples");
    RecordingFrames source(frames);
    return run_duplex(e, cfg, source);
}

DuplexResult run_duplex(DuplexEngines &e, const DuplexConfig &cfg, FrameSource &source) {
    if (source.capacity() == 0) throw_usage("duplex: no frames to push (an empty input and --frames 0)");
    prof::Clock &clock = prof::default_clock();
    DuplexShared s(cfg, clock);
    s.frames.resize(source.capacity());
    s.reply_of_frame.assign(source.capacity(), -1);
    s.busy.assign(std::size(kDuplexStages), 0.0);
    const std::vector<FrameRange> schedule =
        cfg.speak_frames.empty() ? std::vector<FrameRange>{} : parse_frame_ranges(cfg.speak_frames, "speak-frames");

    DuplexStages stages = make_duplex_stages(s, e, source, schedule);

    pipe::PipelineConfig pc;
    pc.depths = {cfg.encoder_queue_cap, cfg.prefill_queue_cap, cfg.tts_queue_cap, cfg.t2w_queue_cap};
    pc.profile = false;
    pc.cancel = cfg.cancel;
    auto sink = [&](const pipe::Item &c) {
        DuplexChunkRecord r;
        r.t_complete_ms = s.now();
        r.n_samples = static_cast<int64_t>(c.pcm.size());
        r.sample_rate = c.sample_rate;
        r.is_final = has_mark(c, kTurnEnd);
        r.audio_turn_id = s.audio_turn;
        r.frame = frame_of(c);
        if (r.is_final) ++s.audio_turn;
        s.chunks.push_back(r);
        if (cfg.observer) cfg.observer->on_audio(r, s.reply_of(c), c.pcm);
    };

    DuplexResult res;
    try {
        pipe::RunResult rr = pipe::run_pipeline(stages.list(), pipe::Item{}, sink, pc);
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
    // A live source that ended early leaves frames never pushed: the timeline holds the pushed ones.
    if (!source.paced())
        while (!s.frames.empty() && !s.frames.back().pushed) s.frames.pop_back();
    res.frames = std::move(s.frames);
    res.chunks = std::move(s.chunks);
    res.tts_calls = s.tts_calls;
    for (size_t i = 0; i < std::size(kDuplexStages); ++i) res.busy_ms.emplace_back(kDuplexStages[i], s.busy[i]);

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
