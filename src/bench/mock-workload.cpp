#include "bench/mock-workload.h"

#include "core/error.h"
#include "core/parse.h"
#include "profile/clock.h"

namespace rtf::bench {

namespace {

const std::vector<std::string> kKnobs = {"rtf",        "spread",   "first-audio-ms", "starvation", "stages",
                                         "outlier-run", "fail-run", "quality"};

class MockWorkload final : public Workload {
public:
    explicit MockWorkload(const Knobs &knobs) {
        check_knobs("mock", knobs, kKnobs);
        for (const auto &[k, v] : knobs) {
            if (k == "rtf") rtf_ = parse_double(v, "rtf", 1e-6, 1e6);
            else if (k == "spread") spread_ = parse_double(v, "spread", 0, 10);
            else if (k == "first-audio-ms") first_ms_ = parse_duration_ms(v, "first-audio-ms");
            else if (k == "starvation") starvation_ = static_cast<int>(parse_int(v, "starvation", 0, 1000000));
            else if (k == "outlier-run") outlier_run_ = static_cast<int>(parse_int(v, "outlier-run", -1, 1000000));
            else if (k == "fail-run") fail_run_ = static_cast<int>(parse_int(v, "fail-run", -1, 1000000));
            else if (k == "quality") {
                if (v != "pass" && v != "fail" && v != "skip")
                    throw_usage("quality: '" + v + "' is not pass, fail or skip");
                quality_ = v;
            } else if (k == "stages") {
                shares_.clear();
                for (const auto &[s, share] : parse_key_values(v, "stages"))
                    shares_.emplace_back(s, parse_double(share, "stages " + s, 0, 1000));
            }
        }
    }
    std::string name() const override { return "mock"; }
    nlohmann::json config() const override {
        nlohmann::json st = nlohmann::json::object();
        for (const auto &[s, v] : shares_) st[s] = v;
        return {{"rtf", rtf_},         {"spread", spread_},         {"first-audio-ms", first_ms_},
                {"starvation", starvation_}, {"stages", st},        {"outlier-run", outlier_run_},
                {"fail-run", fail_run_}, {"quality", quality_}};
    }
    RunOutput run_once() override {
        const int i = n_++;
        if (i == fail_run_) throw Error(ErrorKind::Runtime, "stage t2w failed: mock failure forced on run " + std::to_string(i));
        static const double o[5] = {0, 1, -1, 0.5, -0.5};
        double rtf = rtf_ * (1 + spread_ * o[i % 5]);
        if (i == outlier_run_) rtf *= 3;
        RunOutput r;
        r.t_start_ms = prof::default_clock().now_ms();
        const double audio_ms = 10000;
        double sum = 0, mx = 0;
        for (const auto &[s, share] : shares_) {
            StageFigure f;
            f.name = s;
            f.rtf_stage = share * rtf;
            f.busy_ms = f.rtf_stage * audio_ms;
            f.device = "CPU";
            r.stages.push_back(f);
            r.metrics["rtf_stage." + s] = f.rtf_stage;
            sum += f.rtf_stage;
            mx = std::max(mx, f.rtf_stage);
        }
        r.metrics["rtf"] = rtf;
        r.metrics["rtf_steady"] = rtf;
        r.metrics["xrt"] = 1 / rtf;
        r.metrics["first_audio_ms"] = first_ms_ * (1 + spread_ * o[i % 5]);
        r.metrics["starvation"] = {{"count", starvation_}, {"total_ms", starvation_ * 100.0}};
        r.metrics["bound_overlap"] = mx;
        r.metrics["bound_serial"] = sum;
        r.metrics["pipeline_efficiency"] = mx / rtf;
        r.metrics["audio_ms"] = audio_ms;
        r.metrics["n_chunks"] = 10;
        if (quality_ == "skip") {
            r.quality_note = "mock: quality not checked";
        } else {
            r.quality_checked = true;
            r.quality_passed = quality_ == "pass";
            r.quality = {{"passed", r.quality_passed},
                         {"checks", {{{"name", "mock_gate"}, {"status", quality_}, {"reason", "forced by quality=" + quality_}}}}};
            r.quality_note = r.quality_passed ? "mock gate passed" : "mock_gate failed (forced by quality=fail)";
        }
        r.t_end_ms = prof::default_clock().now_ms();
        return r;
    }

private:
    double rtf_ = 0.5, spread_ = 0.01, first_ms_ = 300;
    int starvation_ = 0, outlier_run_ = -1, fail_run_ = -1;
    std::string quality_ = "pass";
    std::vector<std::pair<std::string, double>> shares_ = {{"llm", 0.2}, {"tts", 0.3}, {"t2w", 0.5}};
    int n_ = 0;
};

}  // namespace

std::unique_ptr<Workload> make_mock_workload(const Knobs &knobs) { return std::make_unique<MockWorkload>(knobs); }

WorkloadInfo mock_workload_info() {
    return {"mock", "deterministic figures, runs nothing (for tests of the protocol)", kKnobs, make_mock_workload};
}

}  // namespace rtf::bench
