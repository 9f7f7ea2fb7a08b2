#include "models/t2w/t2w-profile.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "core/robust-stats.h"

namespace rtf::t2w {

int T2wProfile::level_from_env() {
    const char *e = std::getenv("RTF_T2W_PROFILE");
    if (!e || !*e) return 0;
    const int v = std::atoi(e);
    return v < 0 ? 0 : v;
}

void T2wProfile::add(const std::string &stage, double ms) {
    auto it = samples_by_stage_.find(stage);
    if (it == samples_by_stage_.end()) {
        order_.push_back(stage);
        samples_by_stage_[stage] = {ms};
    } else {
        it->second.push_back(ms);
    }
}

void T2wProfile::record(const WindowRecord &r) {
    add("t2m.upload", r.times.t2m.upload_ms);
    add("t2m.compute", r.times.t2m.compute_ms);
    add("t2m.download", r.times.t2m.download_ms);
    add("voc.upload", r.times.voc.upload_ms);
    add("voc.compute", r.times.voc.compute_ms);
    add("voc.download", r.times.voc.download_ms);
    add("token2mel", r.times.t2m.total_ms);
    add("vocoder", r.times.voc.total_ms);
    add("total", r.times.total_ms);
    if (first_ms_ < 0) first_ms_ = r.times.total_ms;
    compute_ms_ += r.times.total_ms;
    samples_ += r.samples;
    if (level_ >= 2) {
        std::fprintf(stderr, "[timing] call=%lld%s tokens=%d final=%d token2mel=%.3fms vocoder=%.3fms total=%.3fms audio=%lld\n",
                     static_cast<long long>(r.call), r.call == 0 ? "(first)" : "", r.n_tokens, r.final ? 1 : 0,
                     r.times.t2m.total_ms, r.times.voc.total_ms, r.times.total_ms, static_cast<long long>(r.samples));
    }
}

std::vector<double> T2wProfile::stats(const std::string &stage) const {
    auto it = samples_by_stage_.find(stage);
    if (it == samples_by_stage_.end() || it->second.empty()) return {};
    const auto &v = it->second;
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    // v is never empty here (returned {} above), so core's NaN-for-empty never reaches the summary.
    return {static_cast<double>(v.size()), *std::min_element(v.begin(), v.end()), percentile(v, 50), percentile(v, 95),
            percentile(v, 99), *std::max_element(v.begin(), v.end()), mean};
}

void T2wProfile::print_summary(std::FILE *out) const {
    std::fprintf(out, "==== t2w profile ====\n");
    if (init_ms_ >= 0) std::fprintf(out, "init: %.3f ms\n", init_ms_);
    if (first_ms_ >= 0) std::fprintf(out, "first-chunk total: %.3f ms\n", first_ms_);
    std::fprintf(out, "%-14s %5s %10s %10s %10s %10s %10s %10s\n", "stage", "n", "min", "p50", "p95", "p99", "max", "mean");
    for (const auto &s : order_) {
        auto st = stats(s);
        std::fprintf(out, "%-14s %5d %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", s.c_str(), static_cast<int>(st[0]), st[1],
                     st[2], st[3], st[4], st[5], st[6]);
    }
    const double a = audio_s(), c = compute_s();
    std::fprintf(out, "audio=%.3fs compute=%.3fs RTF=%.3f\n", a, c, a > 0 ? c / a : 0.0);
}

}  // namespace rtf::t2w
