// The `speak` workload of `rtf bench`: the real speak path (src/speak) under the bench
// protocol. Its knobs are exactly `rtf speak`'s flags without "--" (models=DIR, d1=16,
// t2w-threads-voc=2, schedule=sequential, no-cfg=1, ...): they are parsed by the same
// CLI11 definitions (speak-options.h), so a knob means the same in speak, demo and bench.
// Engines load once per configuration (construction); every run_once() speaks the same
// input again and runs the quality gates on its audio and audio codes.
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench/workload.h"
#include "cli/speak-options.h"
#include "core/error.h"
#include "profile/clock.h"
#include "profile/metrics.h"
#include "profile/trace.h"
#include "quality/audio-checks.h"
#include "quality/token-checks.h"
#include "speak/speak.h"

namespace rtf::cli {

namespace {

constexpr int64_t kAudioVocab = 6562;  // 6561 codes + EOS (spec §2.4)
constexpr int64_t kAudioEos = 6561;

std::vector<std::string> speak_knob_names() {
    CLI::App app;
    SpeakOptions o;
    add_speak_options(&app, o);
    std::vector<std::string> names;
    for (const CLI::Option *opt : app.get_options()) {
        for (const auto &n : opt->get_lnames()) names.push_back(n);
    }
    return names;
}

class SpeakWorkload : public bench::Workload {
public:
    explicit SpeakWorkload(const bench::Knobs &knobs) : knobs_(knobs) {
        bench::check_knobs("speak", knobs, speak_knob_names());
        CLI::App app{"speak workload"};
        add_speak_options(&app, opts_);
        std::vector<std::string> args;
        for (const auto &[k, v] : knobs) {
            const CLI::Option *opt = app.get_option_no_throw("--" + k);
            bool flag = opt && opt->get_type_size() == 0;
            if (flag) {
                if (v == "1" || v == "true" || v == "on") args.push_back("--" + k);
                else if (!(v == "0" || v == "false" || v == "off")) throw_usage("speak knob " + k + "=" + v + ": a switch takes 1/0");
            } else {
                args.push_back("--" + k);
                args.push_back(v);
            }
        }
        std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
        try {
            app.parse(args);
        } catch (const CLI::ParseError &e) {
            throw_usage(std::string("speak workload: ") + e.what());
        }
        cfg_ = make_speak_config(opts_);
        engines_ = speak::load_engines(cfg_);
        qcfg_.expect_speech = !engines_->kit.is_twin;
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
        j["knobs"] = bench::knobs_json(knobs_);
        j["kit"] = engines_->kit.to_json();
        return j;
    }

    bench::RunOutput run_once() override {
        std::vector<float> pcm;
        std::vector<int64_t> boundaries;
        bench::RunOutput out;
        out.t_start_ms = prof::default_clock().now_ms();
        auto r = speak::speak(*engines_, cfg_, [&](const pipe::Item &c) {
            if (!pcm.empty()) boundaries.push_back(static_cast<int64_t>(pcm.size()));
            pcm.insert(pcm.end(), c.pcm.begin(), c.pcm.end());
        });
        out.t_end_ms = prof::default_clock().now_ms();
        if (r.run.cancelled) throw_runtime("speak run cancelled");
        out.metrics = prof::to_json(r.run.metrics);
        for (const auto &s : r.run.metrics.stages) {
            bench::StageFigure f;
            f.name = s.name;
            f.busy_ms = s.busy_ms;
            f.rtf_stage = s.rtf_stage;
            f.device = s.name == "t2w" ? cfg_.t2w.device_voc
                                       : (s.name == "llm" ? cfg_.llm.placement.device : cfg_.tts.placement.device);
            f.n_threads = s.name == "t2w" ? cfg_.t2w.threads_voc
                                          : (s.name == "llm" ? cfg_.llm.placement.n_threads : cfg_.tts.placement.n_threads);
            out.stages.push_back(f);
        }
        auto audio = quality::check_audio(pcm, r.sample_rate, boundaries, qcfg_);
        int64_t limit = cfg_.max_audio_s > 0 ? static_cast<int64_t>(cfg_.max_audio_s * 25) : 0;
        // A run capped by --max-audio-s ends by design before any EOS: no EOS is expected then.
        auto tokens = quality::check_tokens(r.audio_codes, kAudioVocab, limit > 0 ? -1 : kAudioEos, limit, qcfg_);
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
    bench::Knobs knobs_;
    SpeakOptions opts_;
    speak::SpeakConfig cfg_;
    std::unique_ptr<speak::Engines> engines_;
    quality::QualityConfig qcfg_;
};

struct Registrar {
    Registrar() {
        bench::WorkloadInfo info;
        info.name = "speak";
        info.help = "the real speak path (LLM -> TTS -> Token2Wav) on a kit: knobs are rtf speak's flags "
                    "without '--', e.g. models=KIT, text=..., max-audio-s=4, d1=16, t2w-threads-voc=2";
        info.knobs = speak_knob_names();
        info.make = [](const bench::Knobs &k) { return std::make_unique<SpeakWorkload>(k); };
        bench::register_workload(std::move(info));
    }
};
const Registrar registrar;

}  // namespace

}  // namespace rtf::cli
