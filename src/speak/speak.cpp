#include "speak/speak.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/elapsed.h"
#include "core/error.h"
#include "core/time-stretch.h"
#include "speak/speak-stages.h"

namespace rtf::speak {


nlohmann::json DecodeBatching::stats_json() const {
    nlohmann::json j = nlohmann::json::object();
    if (llm) j["llm"] = llm->stats().to_json();
    if (tts) j["tts"] = tts->stats().to_json();
    return j;
}

std::unique_ptr<Engines> load_engines(const SpeakConfig &cfg_in, const Engines *share, DecodeBatching *batching) {
    auto e = std::make_unique<Engines>();
    e->config = cfg_in;
    SpeakConfig &cfg = e->config;
    e->kit = resolve_kit(cfg.models_dir);
    if (e->kit.family != "minicpmo45") {
        if (share || batching)
            throw_usage("kit " + e->kit.dir + " (family " + e->kit.family + "): shared engine sets and decode batching are MiniCPM-o 4.5's only");
        e->family = load_family(e->kit, cfg);
        e->load_ms_tts = e->family->load_ms();
        return e;
    }
    cfg.llm.model_path = e->kit.llm;
    cfg.tts.model_path = e->kit.tts;
    if (cfg.tts.projector_path.empty()) cfg.tts.projector_path = e->kit.projector;
    // With the twin text cap a twin TTS gets a handful of text tokens, and its arbitrary EOS
    // would end the utterance after a few codes (3 codes for 12 tokens on the cpu kit): the
    // cap then also fixes the work size at --max-audio-s, so the ratio is the documented one.
    if (twin_text_cap(cfg, e->kit.is_twin) > 0 && cfg.min_audio_s == 0) {
        cfg.min_audio_s = cfg.max_audio_s;
        cfg.tts.min_codes_per_turn = static_cast<int64_t>(std::ceil(cfg.max_audio_s * kCodesPerSecond));
    }
    cfg.llm.validate();
    cfg.tts.validate();

    // Each engine is warmed at load (a throw-away pass): the first utterance pays no
    // first-touch costs, so its first audio is what every later one gets.
    auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<lm::DecodeBatcher> llm_batcher;
    lm::TtsBatcherSource tts_batcher;
    if (batching) {
        auto with_threads = [](lm::ModelPlacement p, int threads) {
            if (threads > 0) p.n_threads = p.n_threads_batch = threads;
            return p;
        };
        if (!batching->llm)
            batching->llm = lm::make_llama_batcher({"llm", batching->n_streams, 512, batching->gather_ms}, cfg.llm.model_path,
                                                   with_threads(cfg.llm.placement, batching->llm_threads),
                                                   /*embeddings=*/true, /*embd_input=*/false);
        llm_batcher = batching->llm;
        tts_batcher = [batching, &cfg, with_threads](const std::string &derived) {
            if (!batching->tts)
                batching->tts = lm::make_llama_batcher({"tts", batching->n_streams, 512, batching->gather_ms}, derived,
                                                       with_threads(cfg.tts.placement, batching->tts_threads),
                                                       /*embeddings=*/true, /*embd_input=*/true);
            return batching->tts;
        };
    }
    e->llm = std::make_unique<lm::LlmEngine>(cfg.llm, llm_batcher);
    e->llm->warm();
    e->load_ms_llm = ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    e->tts = std::make_unique<lm::TtsEngine>(cfg.tts, tts_batcher);
    e->tts->warm();
    e->load_ms_tts = ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    e->t2w = share ? share->t2w : t2w::T2wModel::load(e->kit.t2w_dir, cfg.t2w);
    e->voices = share ? share->voices : std::make_shared<VoiceSet>(e->kit, e->t2w);
    const auto tw = std::chrono::steady_clock::now();
    e->t2w_stream = std::make_unique<t2w::T2wStream>(*e->t2w, cfg.t2w);
    if (!cfg.voice.empty()) e->t2w_stream->set_voice(e->voices->get(cfg.voice));
    e->t2w_stream->warm();
    e->warm_ms_t2w = ms_since(tw);
    e->load_ms_t2w = ms_since(t0);
    return e;
}

int64_t twin_text_cap(const SpeakConfig &cfg, bool kit_is_twin) {
    if (!kit_is_twin || !cfg.text.empty() || cfg.max_audio_s <= 0 || cfg.twin_text_rate <= 0) return 0;
    return std::max<int64_t>(cfg.llm.llm_step, static_cast<int64_t>(std::ceil(cfg.twin_text_rate * cfg.max_audio_s)));
}

namespace {

// One utterance of a family other than MiniCPM-o 4.5 (family.h): its stages, the same sink,
// metrics and result.
SpeakResult speak_family(Engines &engines, const SpeakConfig &cfg, const pipe::Sink &sink) {
    if (cfg.speed != 1.0) throw_setting("speed", "time-stretching is MiniCPM-o 4.5's only so far (family " + engines.kit.family + ")");
    if (!cfg.prompt.empty())
        throw_usage("kit " + engines.kit.dir + " (family " + engines.kit.family +
                    ") is a TTS without an LLM: give the text to speak with --text or --text-file, not -p/--prompt");
    FamilyRun run = engines.family->stages(cfg);
    pipe::PipelineConfig pc = cfg.pipeline;
    const size_t n_queues = run.stages.size() - 1;
    if (pc.depths.size() > n_queues) pc.depths.resize(n_queues);
    SpeakResult r;
    r.sample_rate = engines.family->sample_rate();
    pipe::Item request;
    request.text = cfg.text;
    int64_t n_chunks = 0, n_samples = 0;
    auto counting_sink = [&](const pipe::Item &chunk) {
        ++n_chunks;
        n_samples += static_cast<int64_t>(chunk.pcm.size());
        sink(chunk);
    };
    r.run = pipe::run_pipeline(run.pointers(), std::move(request), counting_sink, pc);
    r.config = cfg.to_json();
    r.reply_text = cfg.text;
    r.llm_stop = "text";
    r.n_chunks = n_chunks;
    r.n_samples = n_samples;
    r.n_samples_out = n_samples;
    r.voice = cfg.family.speaker_file.empty() ? "default" : cfg.family.speaker_file;
    r.speed = 1.0;
    r.first_audio.first_audio_ms = r.run.metrics.first_audio_ms;
    r.family = engines.kit.family;
    r.engines = engines.family->engines_json();
    r.engines["kit"] = engines.kit.to_json();
    r.engines["load_ms"] = {{"family", engines.family->load_ms()}};
    r.family_units = engines.family->n_units();
    r.family_text_tokens = engines.family->n_text_tokens();
    return r;
}

}  // namespace

SpeakResult speak(Engines &engines, const SpeakConfig &cfg, const pipe::Sink &sink, const TextSink &on_text) {
    if (engines.family) return speak_family(engines, cfg, sink);
    SpeakShared shared;
    int64_t max_codes = cfg.max_audio_s > 0 ? static_cast<int64_t>(std::ceil(cfg.max_audio_s * kCodesPerSecond)) : 0;
    const int64_t text_cap = twin_text_cap(cfg, engines.kit.is_twin);
    bool rebuilt = false;
    if (!engines.t2w_stream || engines.t2w_stream->config().to_json() != cfg.t2w.to_json()) {
        engines.t2w_stream = std::make_unique<t2w::T2wStream>(*engines.t2w, cfg.t2w);
        engines.t2w_stream->warm();
        rebuilt = true;
    }
    // The voice: loaded once per engine set family (VoiceSet), uploaded when it changes.
    const std::string voice = cfg.voice.empty() ? "default" : cfg.voice;
    double voice_ms = 0;
    if (!engines.t2w_stream->voice() || engines.t2w_stream->voice()->name != voice) {
        const auto tv = std::chrono::steady_clock::now();
        engines.t2w_stream->set_voice(engines.voices->get(voice));
        voice_ms = ms_since(tv);
    }
    const int64_t graphs_before = engines.t2w_stream->graphs_built();
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
    const int first_chunk = shared.window_codes < engines.tts->config().chunk_codes ? shared.window_codes : 0;
    LlmStage llm(stage_spec("llm", cfg.llm.placement.threads(), cfg.place_llm, cfg.llm.placement.device), *engines.llm,
                 !cfg.text.empty(), shared, text_cap);
    TtsStage tts(stage_spec("tts", cfg.tts.placement.threads(), cfg.place_tts, cfg.tts.placement.device), *engines.tts,
                 max_codes, shared, first_chunk);
    T2wStage t2w(stage_spec("t2w", cfg.t2w.threads_voc, cfg.place_t2w, cfg.t2w.device_voc), *engines.t2w_stream, shared);

    SpeakResult r;
    pipe::Item request;
    request.text = cfg.text.empty() ? cfg.prompt : cfg.text;
    int64_t n_chunks = 0, n_samples = 0, n_out = 0;
    // Text timing: the TTS stage's marks, handed on as the audio that starts them goes out.
    std::vector<TextTiming> timing;
    const double samples_per_code = static_cast<double>(t2w::T2wModel::sample_rate()) / kCodesPerSecond;
    auto text_upto = [&](int64_t samples_end, bool all) {
        std::vector<TextTiming> ready;
        {
            std::lock_guard<std::mutex> l(shared.marks_mu);
            for (size_t i = timing.size(); i < shared.text_marks.size(); ++i) {
                const TextMark &m = shared.text_marks[i];
                TextTiming t{m.text, m.n_tokens, m.first_code,
                             std::llround(static_cast<double>(m.first_code + cfg.t2w.leading_silence) * samples_per_code / cfg.speed)};
                if (t.start_sample >= samples_end && !all) break;
                t.in_audio = t.start_sample < samples_end;
                ready.push_back(t);
                timing.push_back(t);
            }
        }
        if (on_text)
            for (const auto &t : ready) on_text(t);
    };
    // speed != 1: each chunk time-stretched on its way out (the pipeline's metrics stay the
    // model's audio); the stretch's tail follows the last chunk.
    std::optional<TimeStretch> stretch;
    if (cfg.speed != 1.0) stretch.emplace(cfg.speed, t2w::T2wModel::sample_rate());
    auto counting_sink = [&](const pipe::Item &chunk) {
        ++n_chunks;
        n_samples += static_cast<int64_t>(chunk.pcm.size());
        if (!stretch) {
            n_out += static_cast<int64_t>(chunk.pcm.size());
            text_upto(n_out, false);
            sink(chunk);
            return;
        }
        pipe::Item out = chunk;
        out.last = false;  // the stretch's tail, after the pipeline, is the last chunk
        out.pcm = stretch->push(chunk.pcm.data(), chunk.pcm.size());
        if (out.pcm.empty()) return;  // Sonic still holds these samples (a pitch period or two)
        out.audio_ms = 1000.0 * static_cast<double>(out.pcm.size()) / t2w::T2wModel::sample_rate();
        n_out += static_cast<int64_t>(out.pcm.size());
        text_upto(n_out, false);
        sink(out);
    };
    r.run = pipe::run_pipeline({&llm, &tts, &t2w}, std::move(request), counting_sink, cfg.pipeline);
    if (stretch && !r.run.cancelled) {
        pipe::Item tail;
        tail.pcm = stretch->finish();
        tail.sample_rate = t2w::T2wModel::sample_rate();
        tail.audio_ms = 1000.0 * static_cast<double>(tail.pcm.size()) / tail.sample_rate;
        tail.last = true;
        n_out += static_cast<int64_t>(tail.pcm.size());
        text_upto(n_out, false);
        sink(tail);  // even empty: it carries the one final marker
    }
    text_upto(n_out, true);  // text whose codes never came (cut by the cap), or a cancelled run's rest
    r.config = cfg.to_json();
    r.text_tokens = std::move(shared.text_tokens);
    r.audio_codes = std::move(shared.audio_codes);
    r.reply_text = std::move(shared.reply_text);
    r.llm_stop = shared.llm_stop;
    r.twin_text_cap = text_cap;
    r.n_chunks = n_chunks;
    r.n_samples = n_samples;
    r.n_samples_out = n_out;
    r.voice = voice;
    r.voice_switch_ms = voice_ms;
    r.speed = cfg.speed;
    r.text_timing = std::move(timing);
    r.first_audio = first_audio_breakdown(shared.marks, r.run.record.clock_origin_ms, r.run.metrics.first_audio_ms,
                                          shared.window_codes);
    r.first_audio.priority_timeouts = shared.priority_timeouts.load();
    r.t2w_graphs_built = engines.t2w_stream->graphs_built() - graphs_before;
    r.t2w_rebuilt = rebuilt;
    r.engines = {{"kit", engines.kit.to_json()},
                 {"load_ms", {{"llm", engines.load_ms_llm}, {"tts", engines.load_ms_tts}, {"t2w", engines.load_ms_t2w}}},
                 {"warm_ms_t2w", engines.warm_ms_t2w},
                 {"t2w_graphs_built_in_run", r.t2w_graphs_built},
                 {"t2w_rebuilt", rebuilt},
                 {"llm", engines.llm->timings().to_json()},
                 {"tts", engines.tts->timings().to_json()},
                 {"t2w_windows", shared.t2w_windows}};
    return r;
}

nlohmann::json to_json(const TextTiming &t, int sample_rate) {
    return {{"text", t.text},
            {"n_tokens", t.n_tokens},
            {"first_code", t.first_code},
            {"start_sample", t.start_sample},
            {"start_s", static_cast<double>(t.start_sample) / sample_rate},
            {"in_audio", t.in_audio}};
}

namespace {
nlohmann::json text_timing_json(const SpeakResult &r) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto &t : r.text_timing) a.push_back(to_json(t, r.sample_rate));
    return a;
}
}  // namespace

nlohmann::json to_json(const SpeakResult &r) {
    nlohmann::json j = pipe::to_json(r.run);
    j["config"] = r.config;
    j["engines"] = r.engines;
    j["first_audio"] = to_json(r.first_audio);
    j["family"] = r.family;
    j["output"] = {{"n_chunks", r.n_chunks},
                   {"n_samples", r.n_samples},
                   {"voice", r.voice},
                   {"voice_switch_ms", r.voice_switch_ms},
                   {"speed", r.speed},
                   {"n_samples_out", r.n_samples_out},
                   {"audio_s_out", static_cast<double>(r.n_samples_out) / r.sample_rate},
                   {"text_timing", text_timing_json(r)},
                   {"sample_rate", r.sample_rate},
                   {"audio_s", static_cast<double>(r.n_samples) / r.sample_rate},
                   {"reply_text", r.reply_text},
                   {"llm_stop", r.llm_stop},
                   {"twin_text_cap", r.twin_text_cap},
                   {"n_text_tokens", r.text_tokens.size()},
                   {"n_audio_codes", r.audio_codes.size()}};
    if (r.family != "minicpmo45") {
        j["output"]["n_text_tokens"] = r.family_text_tokens;
        j["output"]["n_frames"] = r.family_units;
    }
    return j;
}

std::string bottleneck_stage(const SpeakResult &r) {
    std::string best;
    double v = -1;
    for (const auto &s : r.run.metrics.stages) {
        if (s.rtf_stage > v) {
            v = s.rtf_stage;
            best = s.name;
        }
    }
    return best;
}

}  // namespace rtf::speak
