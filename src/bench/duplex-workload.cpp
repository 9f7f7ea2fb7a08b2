#include "bench/duplex-workload.h"

#include <cmath>
#include <iostream>
#include <memory>

#include "bench/duplex-analysis.h"
#include "core/error.h"
#include "core/parse.h"
#include "profile/clock.h"
#include "speak/duplex-knobs.h"
#include "speak/duplex.h"

namespace rtf::bench {

namespace {

class DuplexWorkload : public Workload {
public:
    explicit DuplexWorkload(const Knobs &knobs) : knobs_(knobs) {
        // rtf duplex's knob table (speak/duplex-knobs.h): the same names, parsers and aliases.
        std::vector<std::string> names;
        for (const auto &k : speak::duplex_knob_table()) {
            names.push_back(k.name);
            names.insert(names.end(), k.aliases.begin(), k.aliases.end());
        }
        check_knobs("duplex", knobs, names);
        auto &c = cfg_;
        for (const auto &[k, v] : knobs) {
            try {
                speak::apply_duplex_knob(c, k, v);
            } catch (const Error &e) {
                throw_usage("duplex workload: " + std::string(e.what()));
            }
        }
        c.validate();
        opt_.interval_ms = c.interval_ms;
        opt_.startup_buffer_ms = c.startup_buffer_ms;
        opt_.max_gap_ms = c.max_gap_ms;
        validate(opt_);
        c.finalize();
        const apm::AudioInput audio = apm::load_audio_16k(c.input);
        frames_ = speak::input_frames(c, audio, &n_silence_);
        engines_ = speak::load_duplex_engines(c);
        c = engines_->config;
        if (knob_value(knobs, "twin-text-rate") && !engines_->kit.is_twin)
            std::cerr << "bench: duplex workload: twin-text-rate ignored: real model files end their own speak units\n";
    }

    std::string name() const override { return "duplex"; }
    nlohmann::json config() const override {
        nlohmann::json j = cfg_.to_json();
        j["knobs"] = knobs_json(knobs_);
        j["kit"] = engines_->kit.to_json();
        j["n_frames_pushed"] = frames_.size();
        j["n_silence_frames"] = n_silence_;
        j["twin_text_cap"] = engines_->llm->config().text_cap;  // valid tokens per sampled speak frame; 0 = none
        return j;
    }

    RunOutput run_once() override {
        RunOutput out;
        out.t_start_ms = prof::default_clock().now_ms();
        speak::DuplexResult r = speak::run_duplex(*engines_, cfg_, frames_);
        out.t_end_ms = prof::default_clock().now_ms();
        if (!r.completed) throw_runtime("duplex run incomplete: " + r.error);
        const nlohmann::json doc = speak::to_json(r);
        const DuplexAnalysis a = analyze_duplex(doc, opt_);
        if (a.verdict == DuplexVerdict::Incomplete) throw_runtime("duplex run incomplete: " + a.summary);
        int gaps = 0;
        double underrun = 0;
        for (const auto &p : a.pairs) {
            gaps += p.gaps;
            underrun += p.underrun_ms;
        }
        const double audio_ms = 1000.0 * a.audio_total_s;
        out.metrics = {{"rtf", a.tts_rtf_max},
                       {"tts_rtf_mean", a.tts_rtf_mean},
                       {"first_audio_ms", a.first_audio_e2e_p95_ms},
                       {"decision_latency_ms", {{"p50", a.decision_p50_ms}, {"p95", a.decision_p95_ms}, {"max", a.decision_max_ms}}},
                       {"starvation", {{"count", gaps}, {"total_ms", underrun}}},
                       {"audio_s", a.audio_total_s},
                       {"duplex_verdict_code", exit_code(a.verdict)}};
        for (const auto &[name, ms] : r.busy_ms) {
            if (name == "input") continue;
            StageFigure f;
            f.name = name;
            f.busy_ms = ms;
            f.rtf_stage = audio_ms > 0 ? ms / audio_ms : 0.0;
            f.device = "CPU";
            f.n_threads = name == "apm"   ? cfg_.apm.n_threads
                          : name == "llm" ? cfg_.llm.placement.threads()
                          : name == "tts" ? cfg_.tts.placement.threads()
                                          : cfg_.t2w.threads_voc;  // the stage thread's own count (speak/duplex.cpp)
            out.metrics["rtf_stage." + name] = f.rtf_stage;
            out.stages.push_back(f);
        }
        out.quality_checked = false;
        out.quality_note = std::string("not checked: the duplex workload's output is its timeline (verdict ") +
                           to_string(a.verdict) + ": " + a.summary + ")";
        return out;
    }

private:
    Knobs knobs_;
    speak::DuplexConfig cfg_;
    DuplexOptions opt_;
    std::vector<std::vector<float>> frames_;
    int n_silence_ = 0;
    std::unique_ptr<speak::DuplexEngines> engines_;
};

}  // namespace

WorkloadInfo duplex_workload_info() {
    WorkloadInfo info;
    info.name = "duplex";
    info.help = "a duplex session (rtf duplex) judged by the duplex analyzer: knobs are rtf duplex's flags without '--', "
                "e.g. models=KIT, input=speech.wav, frames=30, speak-frames=4-12,20-28, interval=1000ms, "
                "twin-text-rate=4 (twins: text tokens per second of audio in a sampled speak frame; 0 = uncapped); rtf = the "
                "worst turn's TTS RTF, first_audio_ms = first audio P95";
    info.knobs = speak::duplex_knob_names();
    info.make = [](const Knobs &k) { return std::make_unique<DuplexWorkload>(k); };
    return info;
}

}  // namespace rtf::bench
