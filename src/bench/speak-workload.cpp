// The `speak` workload of `rtf bench`: the real speak path (src/speak) under the bench
// protocol. Its knobs are the speak knob table's (speak/knobs.h; `rtf speak`'s flags
// without "--": models=DIR, d1=16, t2w-threads-voc=2, schedule=sequential, no-cfg=1, ...)
// plus config=FILE (a --config JSON file, applied first; the other knobs win). Engines load
// once per configuration (construction); every run_once() speaks the same input again and
// runs the quality gates on its audio and audio codes.
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench/speak-workload.h"
#include "core/error.h"
#include "profile/clock.h"
#include "profile/metrics.h"
#include "profile/trace.h"
#include "quality/audio-checks.h"
#include "quality/token-checks.h"
#include "speak/knobs.h"
#include "speak/speak.h"

namespace rtf::bench {

namespace {

std::vector<std::string> speak_knob_names() {
    std::vector<std::string> names = speak::knob_names();
    names.push_back("config");
    return names;
}

}  // namespace

speak::SpeakConfig speak_config(const Knobs &knobs) {
    check_knobs("speak", knobs, speak_knob_names());
    speak::SpeakConfig cfg = speak::default_config();
    if (const std::string *file = knob_value(knobs, "config")) speak::apply_knob_file(cfg, *file);
    try {
        for (const auto &[k, v] : knobs)
            if (k != "config") speak::apply_knob(cfg, k, v);
    } catch (const Error &e) {
        throw_usage(std::string("speak workload: ") + e.what());
    }
    speak::finalize(cfg);
    return cfg;
}

namespace {

class SpeakWorkload : public Workload {
public:
    explicit SpeakWorkload(const Knobs &knobs) : knobs_(knobs) {
        cfg_ = speak_config(knobs);
        engines_ = speak::load_engines(cfg_);
        cfg_ = engines_->config;
        // A family without an LLM (Pocket TTS) speaks its input: a bench prompt becomes the text.
        if (engines_->family && cfg_.text.empty()) std::swap(cfg_.text, cfg_.prompt);
        qcfg_.expect_speech = !engines_->kit.is_twin;
        // A Qwen3-TTS twin's talker samples EOS about once in 2049 draws (random weights): an
        // uncapped run can take minutes with nothing printed. Said once, before the first run.
        if (engines_->kit.is_twin && engines_->kit.family == "qwen3-tts" && !(cfg_.max_audio_s > 0))
            std::cerr << "bench: a Qwen3-TTS twin rarely samples its end code (random weights): a run without "
                         "max-audio-s can take minutes; set max-audio-s=N to bound each run\n";
        if (engines_->kit.is_twin) {
            // Twin audio is noise from random weights: its level, peak, DC and spectrum say
            // nothing about correctness (the cpu kit's vocoder peaks near 1.07 by chance).
            // Finiteness, the clipped-sample share, silence and the token checks still apply;
            // equivalence against a baseline run is the real gate for twins (rtf quality --baseline).
            // The peak bound stays finite so a numerically runaway graph still fails.
            qcfg_.max_peak = 100.0;
            qcfg_.max_dc_offset = 1.0;
            qcfg_.min_rms_dbfs = -200;
            qcfg_.max_rms_dbfs = 0;
        }
    }

    std::string name() const override { return "speak"; }
    nlohmann::json config() const override {
        nlohmann::json j = cfg_.to_json();
        j["knobs"] = knobs_json(knobs_);
        j["effective_knobs"] = speak::knobs_json(cfg_);  // every knob, defaults included
        j["kit"] = engines_->kit.to_json();
        return j;
    }

    RunOutput run_once() override {
        std::vector<float> pcm;
        std::vector<int64_t> boundaries;
        RunOutput out;
        out.t_start_ms = prof::default_clock().now_ms();
        auto r = speak::speak(*engines_, cfg_, [&](const pipe::Item &c) {
            if (!pcm.empty()) boundaries.push_back(static_cast<int64_t>(pcm.size()));
            pcm.insert(pcm.end(), c.pcm.begin(), c.pcm.end());
        });
        out.t_end_ms = prof::default_clock().now_ms();
        if (r.run.cancelled) throw_runtime("speak run cancelled");
        out.metrics = prof::to_json(r.run.metrics);
        for (size_t i = 0; i < r.run.metrics.stages.size(); ++i) {
            const auto &s = r.run.metrics.stages[i];
            StageFigure f;
            f.name = s.name;
            f.busy_ms = s.busy_ms;
            f.rtf_stage = s.rtf_stage;
            f.device = s.name == "t2w" ? cfg_.t2w.device_voc
                                       : (s.name == "llm" ? cfg_.llm.placement.device : cfg_.tts.placement.device);
            // the resolved count the stage ran with (never the "0 = all CPUs" request)
            f.n_threads = i < r.run.record.stages.size() ? r.run.record.stages[i].n_threads : 1;
            out.stages.push_back(f);
        }
        auto audio = quality::check_audio(pcm, r.sample_rate, boundaries, qcfg_);
        int64_t limit = cfg_.max_audio_s > 0 && !engines_->family
                            ? static_cast<int64_t>(cfg_.max_audio_s * engines_->tts->codes_per_second()) : 0;
        // A run capped by --max-audio-s ends by design before any EOS: no EOS is expected then.
        // Audio-token checks are MiniCPM-o's (its TTS codes); another family is checked on its audio.
        auto tokens = engines_->family ? quality::QualityReport{}
                                       : quality::check_tokens(r.audio_codes, engines_->tts->n_codes(),
                                                               limit > 0 ? -1 : engines_->tts->eos(), limit, qcfg_);
        out.quality_checked = true;
        out.quality_passed = audio.passed() && tokens.passed();
        out.quality = {{"audio", audio.to_json()}, {"audio_tokens", tokens.to_json()}};
        for (const auto *rep : {&audio, &tokens}) {
            for (const auto *c : rep->failures()) {
                if (out.quality_note.empty()) out.quality_note = c->name + ": " + c->reason;
            }
        }
        if (out.quality_note.empty()) {
            out.quality_note = engines_->kit.is_twin ? "passed (twin: level/peak/DC/speech-likeness checks off)" : "passed";
        }
        out.trace = prof::chrome_trace(r.run.record, &r.run.metrics.starvation);
        out.record = prof::to_json(r.run.record);
        out.trace_t0_ms = r.run.record.clock_origin_ms;
        return out;
    }

private:
    Knobs knobs_;
    speak::SpeakConfig cfg_;
    std::unique_ptr<speak::Engines> engines_;
    quality::QualityConfig qcfg_;
};

}  // namespace

WorkloadInfo speak_workload_info() {
    WorkloadInfo info;
    info.name = "speak";
    info.help = "the real speak path (LLM -> TTS -> Token2Wav) on a kit: knobs are rtf speak's flags without '--', "
                "e.g. models=KIT, text=..., max-audio-s=4, d1=16, t2w-threads-voc=2; config=FILE reads a JSON file";
    info.knobs = speak_knob_names();
    info.make = [](const Knobs &k) { return std::make_unique<SpeakWorkload>(k); };
    return info;
}

}  // namespace rtf::bench
