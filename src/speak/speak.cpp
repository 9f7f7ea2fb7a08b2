#include "speak/speak.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/elapsed.h"
#include "core/error.h"
#include "speak/minicpmo45-run.h"

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

// A kit of another family (FamilyEngines): its stages, and its result fields after the run.
FamilyRun family_engines_run(Engines &engines, const SpeakConfig &cfg) {
    if (cfg.speed != 1.0) throw_setting("speed", "time-stretching is MiniCPM-o 4.5's only so far (family " + engines.kit.family + ")");
    if (!cfg.prompt.empty())
        throw_usage("kit " + engines.kit.dir + " (family " + engines.kit.family +
                    ") is a TTS without an LLM: give the text to speak with --text or --text-file, not -p/--prompt");
    FamilyRun run = engines.family->stages(cfg);
    run.input = cfg.text;
    FamilyEngines *fam = engines.family.get();
    const Kit *kit = &engines.kit;
    // A kit voice by name (voices/NAME.wav), else the load-time reference (or "default": the model's own).
    const std::string voice =
        !cfg.voice.empty() ? cfg.voice : cfg.family.speaker_file.empty() ? "default" : cfg.family.speaker_file;
    const std::string text = cfg.text;
    run.finish = [fam, kit, voice, text](SpeakResult &r) {
        r.sample_rate = fam->sample_rate();
        r.reply_text = text;
        r.llm_stop = "text";
        r.voice = voice;
        r.speed = 1.0;
        r.first_audio.first_audio_ms = r.run.metrics.first_audio_ms;
        r.engines = fam->engines_json();
        r.engines["kit"] = kit->to_json();
        r.engines["load_ms"] = {{"family", fam->load_ms()}};
        r.family_units = fam->n_units();
        r.family_text_tokens = fam->n_text_tokens();
    };
    return run;
}

}  // namespace

SpeakResult speak(Engines &engines, const SpeakConfig &cfg, const pipe::Sink &sink, const TextSink &on_text) {
    // Every family through one shape (family.h): its stages, the input, hooks around the pipeline.
    FamilyRun run = engines.family ? family_engines_run(engines, cfg) : minicpmo45_run(engines, cfg, on_text);
    pipe::PipelineConfig pc = cfg.pipeline;
    const size_t n_queues = run.stages.size() - 1;
    if (pc.depths.size() > n_queues) pc.depths.resize(n_queues);
    int64_t n_chunks = 0, n_samples = 0, n_out = 0;
    const pipe::Sink out = [&](const pipe::Item &chunk) {  // what the caller receives
        n_out += static_cast<int64_t>(chunk.pcm.size());
        sink(chunk);
    };
    const pipe::Sink family_sink = run.wrap_sink ? run.wrap_sink(out) : out;
    auto counting_sink = [&](const pipe::Item &chunk) {  // what the pipeline makes
        ++n_chunks;
        n_samples += static_cast<int64_t>(chunk.pcm.size());
        family_sink(chunk);
    };
    pipe::Item request;
    request.text = run.input;
    SpeakResult r;
    r.family = engines.kit.family;
    r.run = pipe::run_pipeline(run.pointers(), std::move(request), counting_sink, pc);
    r.config = cfg.to_json();
    if (run.finish) run.finish(r);
    r.n_chunks = n_chunks;
    r.n_samples = n_samples;
    r.n_samples_out = n_out;
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
