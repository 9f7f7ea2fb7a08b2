#include "bench/duplex-workload.h"

#include <cmath>
#include <iostream>
#include <memory>

#include "bench/duplex-analysis.h"
#include "core/error.h"
#include "core/parse.h"
#include "profile/clock.h"
#include "speak/duplex.h"

namespace rtf::bench {

namespace {

const std::vector<std::string> &duplex_knob_names() {
    static const std::vector<std::string> k = {"models",         "input",      "interval",          "frames",
                                               "speak-frames",   "speak-tokens", "threads",         "startup-buffer-ms",
                                               "max-gap-ms",     "encoder-queue-cap", "prefill-queue-cap", "tts-queue-cap",
                                               "t2w-queue-cap",  "seed",       "twin-text-rate"};
    return k;
}

class DuplexWorkload : public Workload {
public:
    explicit DuplexWorkload(const Knobs &knobs) : knobs_(knobs) {
        check_knobs("duplex", knobs, duplex_knob_names());
        auto &c = cfg_;
        for (const auto &[k, v] : knobs) {
            const std::string what = "duplex workload: " + k;
            auto i = [&](int64_t lo, int64_t hi) { return static_cast<int>(parse_int(v, what, lo, hi)); };
            if (k == "models") c.models_dir = v;
            else if (k == "input") c.input = v;
            else if (k == "interval") c.interval_ms = parse_duration_ms(v, what);
            else if (k == "frames") c.n_frames = i(0, 100000);
            else if (k == "speak-frames") c.speak_frames = v;
            else if (k == "speak-tokens") c.llm.forced_speak_tokens = i(1, 26);
            else if (k == "threads") c.threads = i(0, 256);
            else if (k == "startup-buffer-ms") c.startup_buffer_ms = parse_double(v, what, 0, 1e9);
            else if (k == "max-gap-ms") c.max_gap_ms = parse_double(v, what, 0, 1e9);
            else if (k == "encoder-queue-cap") c.encoder_queue_cap = i(1, 1 << 20);
            else if (k == "prefill-queue-cap") c.prefill_queue_cap = i(1, 1 << 20);
            else if (k == "tts-queue-cap") c.tts_queue_cap = i(1, 1 << 20);
            else if (k == "t2w-queue-cap") c.t2w_queue_cap = i(1, 1 << 20);
            else if (k == "seed") c.llm.seed = static_cast<uint32_t>(parse_int(v, what, 0, 4294967295LL));
            else if (k == "twin-text-rate") c.twin_text_rate = parse_double(v, what, 0, 1000);
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
        if (find_knob(knobs, "twin-text-rate") && !engines_->kit.is_twin)
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
            f.n_threads = cfg_.threads;
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
    info.knobs = duplex_knob_names();
    info.make = [](const Knobs &k) { return std::make_unique<DuplexWorkload>(k); };
    return info;
}

}  // namespace rtf::bench
