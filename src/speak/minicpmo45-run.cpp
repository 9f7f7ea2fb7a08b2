#include "speak/minicpmo45-run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/elapsed.h"
#include "core/time-stretch.h"
#include "speak/speak-stages.h"

namespace rtf::speak {

namespace {

// What the stages and the hooks of one utterance share.
struct Utterance {
    SpeakShared shared;
    std::vector<TextTiming> timing;  // handed to on_text so far
    std::optional<TimeStretch> stretch;
    pipe::Sink out;                  // the caller's sink (wrap_sink's argument)
    int64_t n_out = 0;               // samples sent to it
    std::string voice;
    double voice_ms = 0;
    bool rebuilt = false;
    int64_t graphs_before = 0, text_cap = 0;
};

}  // namespace

FamilyRun minicpmo45_run(Engines &engines, const SpeakConfig &cfg, const TextSink &on_text) {
    auto u = std::make_shared<Utterance>();
    SpeakShared &shared = u->shared;
    const int64_t max_codes = cfg.max_audio_s > 0 ? static_cast<int64_t>(std::ceil(cfg.max_audio_s * kCodesPerSecond)) : 0;
    u->text_cap = twin_text_cap(cfg, engines.kit.is_twin);
    if (!engines.t2w_stream || engines.t2w_stream->config().to_json() != cfg.t2w.to_json()) {
        engines.t2w_stream = std::make_unique<t2w::T2wStream>(*engines.t2w, cfg.t2w);
        engines.t2w_stream->warm();
        u->rebuilt = true;
    }
    // The voice: loaded once per engine set family (VoiceSet), uploaded when it changes.
    u->voice = cfg.voice.empty() ? "default" : cfg.voice;
    if (!engines.t2w_stream->voice() || engines.t2w_stream->voice()->name != u->voice) {
        const auto tv = std::chrono::steady_clock::now();
        engines.t2w_stream->set_voice(engines.voices->get(u->voice));
        u->voice_ms = ms_since(tv);
    }
    u->graphs_before = engines.t2w_stream->graphs_built();
    shared.clock = cfg.pipeline.clock ? cfg.pipeline.clock : &prof::default_clock();
    // Codes Token2Wav's first window waits for (its tokens minus the lead silence); the TTS
    // hands them on as its first chunk when that is fewer than a chunk.
    shared.window_codes = std::max(1, cfg.t2w.first_window - cfg.t2w.leading_silence);
    shared.first_audio_priority = cfg.first_audio_priority;
    shared.wait_max_ms = cfg.first_audio_wait_max_ms;
    shared.cancel = cfg.pipeline.cancel;
    // A batched engine left interrupted by a cancelled utterance (Stage::interrupt) decodes again.
    engines.llm->resume_decode();
    engines.tts->resume_decode();
    // The TTS's hand-offs follow Token2Wav's first windows: the first window's codes, then each
    // ramp window's stride (its tokens - 3 look-ahead); a full chunk at most.
    const int tts_chunk = engines.tts->config().chunk_codes;
    std::vector<int> lead_chunks{std::min(shared.window_codes, tts_chunk)};
    for (int w : cfg.t2w.ramp) lead_chunks.push_back(std::min(w - (t2w::kWindowTokens - t2w::kStrideTokens), tts_chunk));

    FamilyRun run;
    run.state = u;
    run.input = cfg.text.empty() ? cfg.prompt : cfg.text;
    run.stages.push_back(std::make_unique<LlmStage>(
        stage_spec("llm", cfg.llm.placement.threads(), cfg.place_llm, cfg.llm.placement.device), *engines.llm,
        !cfg.text.empty(), shared, u->text_cap));
    run.stages.push_back(std::make_unique<TtsStage>(
        stage_spec("tts", cfg.tts.placement.threads(), cfg.place_tts, cfg.tts.placement.device), *engines.tts, max_codes,
        shared, std::move(lead_chunks)));
    run.stages.push_back(std::make_unique<T2wStage>(
        stage_spec("t2w", cfg.t2w.threads_voc, cfg.place_t2w, cfg.t2w.device_voc), *engines.t2w_stream, shared));

    // Text timing: the TTS stage's marks, handed on as the audio that starts them goes out.
    const double samples_per_code = static_cast<double>(t2w::T2wModel::sample_rate()) / kCodesPerSecond;
    const int lead = cfg.t2w.leading_silence;
    const double speed = cfg.speed;
    Utterance *up = u.get();  // the hooks run while run.state holds it
    auto text_upto = [up, samples_per_code, lead, speed, &on_text](int64_t samples_end, bool all) {
        std::vector<TextTiming> ready;
        {
            std::lock_guard<std::mutex> l(up->shared.marks_mu);
            for (size_t i = up->timing.size(); i < up->shared.text_marks.size(); ++i) {
                const TextMark &m = up->shared.text_marks[i];
                TextTiming t{m.text, m.n_tokens, m.first_code,
                             std::llround(static_cast<double>(m.first_code + lead) * samples_per_code / speed)};
                if (t.start_sample >= samples_end && !all) break;
                t.in_audio = t.start_sample < samples_end;
                ready.push_back(t);
                up->timing.push_back(t);
            }
        }
        if (on_text)
            for (const auto &t : ready) on_text(t);
    };
    // speed != 1: each chunk time-stretched on its way out (the pipeline's metrics stay the
    // model's audio); the stretch's tail follows the last chunk (finish).
    if (speed != 1.0) u->stretch.emplace(speed, t2w::T2wModel::sample_rate());
    run.wrap_sink = [up, text_upto](const pipe::Sink &out) -> pipe::Sink {
        up->out = out;
        return [up, text_upto](const pipe::Item &chunk) {
            if (!up->stretch) {
                up->n_out += static_cast<int64_t>(chunk.pcm.size());
                text_upto(up->n_out, false);
                up->out(chunk);
                return;
            }
            pipe::Item o = chunk;
            o.last = false;  // the stretch's tail, after the pipeline, is the last chunk
            o.pcm = up->stretch->push(chunk.pcm.data(), chunk.pcm.size());
            if (o.pcm.empty()) return;  // Sonic still holds these samples (a pitch period or two)
            o.audio_ms = 1000.0 * static_cast<double>(o.pcm.size()) / t2w::T2wModel::sample_rate();
            up->n_out += static_cast<int64_t>(o.pcm.size());
            text_upto(up->n_out, false);
            up->out(o);
        };
    };
    Engines *e = &engines;
    run.finish = [up, e, text_upto, speed](SpeakResult &r) {
        SpeakShared &sh = up->shared;
        if (up->stretch && !r.run.cancelled && up->out) {
            pipe::Item tail;
            tail.pcm = up->stretch->finish();
            tail.sample_rate = t2w::T2wModel::sample_rate();
            tail.audio_ms = 1000.0 * static_cast<double>(tail.pcm.size()) / tail.sample_rate;
            tail.last = true;
            up->n_out += static_cast<int64_t>(tail.pcm.size());
            text_upto(up->n_out, false);
            up->out(tail);  // even empty: it carries the one final marker
        }
        text_upto(up->n_out, true);  // text whose codes never came (cut by the cap), or a cancelled run's rest
        r.text_tokens = std::move(sh.text_tokens);
        r.audio_codes = std::move(sh.audio_codes);
        r.reply_text = std::move(sh.reply_text);
        r.llm_stop = sh.llm_stop;
        r.twin_text_cap = up->text_cap;
        r.voice = up->voice;
        r.voice_switch_ms = up->voice_ms;
        r.speed = speed;
        r.text_timing = std::move(up->timing);
        r.first_audio = first_audio_breakdown(sh.marks, r.run.record.clock_origin_ms, r.run.metrics.first_audio_ms,
                                              sh.window_codes);
        r.first_audio.priority_timeouts = sh.priority_timeouts.load();
        r.t2w_graphs_built = e->t2w_stream->graphs_built() - up->graphs_before;
        r.t2w_rebuilt = up->rebuilt;
        r.engines = {{"kit", e->kit.to_json()},
                     {"load_ms", {{"llm", e->load_ms_llm}, {"tts", e->load_ms_tts}, {"t2w", e->load_ms_t2w}}},
                     {"warm_ms_t2w", e->warm_ms_t2w},
                     {"t2w_graphs_built_in_run", r.t2w_graphs_built},
                     {"t2w_rebuilt", up->rebuilt},
                     {"llm", e->llm->timings().to_json()},
                     {"tts", e->tts->timings().to_json()},
                     {"t2w_windows", sh.t2w_windows}};
    };
    return run;
}

}  // namespace rtf::speak
