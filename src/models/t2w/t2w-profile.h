#pragma once
// The reference's OMNI_T2W_PROFILE output, driven by RTF_T2W_PROFILE:
//   =1  summary at the end: init, first-chunk total, then per stage
//       n/min/p50/p95/p99/max/mean (ms; core's percentile(): linear interpolation at p·(n-1)),
//       then audio=<s> compute=<s> RTF=<x> (compute = Σ window totals).
//   =2  additionally one [timing] line per window as it completes.
// Stage names: t2m.upload, t2m.compute, t2m.download, voc.upload, voc.compute,
// voc.download, token2mel, vocoder, total. Not thread-safe (one per stream).
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "models/t2w/t2w-stream.h"

namespace rtf::t2w {

class T2wProfile {
public:
    // level from RTF_T2W_PROFILE (0 when unset or unparsable).
    static int level_from_env();

    explicit T2wProfile(int level = level_from_env()) : level_(level) {}
    int level() const { return level_; }
    void set_init_ms(double ms) { init_ms_ = ms; }
    void record(const WindowRecord &r);
    // Stats of one stage (empty vector if never recorded): n, min, p50, p95, p99, max, mean.
    std::vector<double> stats(const std::string &stage) const;
    double audio_s() const { return static_cast<double>(samples_) / kSampleRate; }
    double compute_s() const { return compute_ms_ / 1000.0; }
    void print_summary(std::FILE *out) const;

private:
    int level_ = 0;
    double init_ms_ = -1, first_ms_ = -1, compute_ms_ = 0;
    int64_t samples_ = 0;
    std::vector<std::string> order_;
    std::map<std::string, std::vector<double>> samples_by_stage_;
    void add(const std::string &stage, double ms);
};

}  // namespace rtf::t2w
