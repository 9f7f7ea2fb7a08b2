#include "quality/quality-config.h"

#include <cmath>

#include "core/error.h"
#include "core/parse.h"

namespace rtf::quality {

namespace {

// One row per numeric field: JSON key, member, allowed range. Bools and ints are handled
// separately below so the table stays homogeneous.
struct DoubleField {
    const char *key;
    double QualityConfig::*member;
    double min, max;
};

constexpr DoubleField kDoubles[] = {
    {"max_nonfinite", &QualityConfig::max_nonfinite, 0, 1e12},
    {"max_peak", &QualityConfig::max_peak, 0.001, 1e6},
    {"clip_level", &QualityConfig::clip_level, 0.001, 1e6},
    {"max_clip_ratio", &QualityConfig::max_clip_ratio, 0, 1},
    {"min_rms_dbfs", &QualityConfig::min_rms_dbfs, -200, 60},
    {"max_rms_dbfs", &QualityConfig::max_rms_dbfs, -200, 60},
    {"max_dc_offset", &QualityConfig::max_dc_offset, 0, 1e6},
    {"min_duration_ms", &QualityConfig::min_duration_ms, 0, 1e9},
    {"frame_ms", &QualityConfig::frame_ms, 1, 1000},
    {"silence_dbfs", &QualityConfig::silence_dbfs, -200, 0},
    {"max_silence_ratio", &QualityConfig::max_silence_ratio, 0, 1},
    {"max_silence_ms", &QualityConfig::max_silence_ms, 0, 1e9},
    {"max_flatness", &QualityConfig::max_flatness, 0, 1},
    {"max_loop_ms", &QualityConfig::max_loop_ms, 0, 1e9},
    {"loop_frame_db", &QualityConfig::loop_frame_db, 0, 100},
    {"max_boundary_jump_ratio", &QualityConfig::max_boundary_jump_ratio, 1, 1e6},
    {"min_boundary_jump", &QualityConfig::min_boundary_jump, 0, 2},
    {"loop_min_coverage", &QualityConfig::loop_min_coverage, 0.01, 1},
    {"max_log_mel_distance_db", &QualityConfig::max_log_mel_distance_db, 0, 1000},
    {"max_rms_ratio_db", &QualityConfig::max_rms_ratio_db, 0, 1000},
    {"max_duration_diff", &QualityConfig::max_duration_diff, 0, 1000},
    {"max_wer_pct", &QualityConfig::max_wer_pct, 0, 1000},
    {"max_wer_increase_pp", &QualityConfig::max_wer_increase_pp, 0, 1000},
};

struct IntField {
    const char *key;
    int QualityConfig::*member;
    int min, max;
};

constexpr IntField kInts[] = {
    {"max_token_run", &QualityConfig::max_token_run, 2, 1 << 30},
    {"loop_tail", &QualityConfig::loop_tail, 4, 1 << 20},
    {"loop_max_period", &QualityConfig::loop_max_period, 1, 1 << 16},
};

std::string range_text(double min, double max) { return std::to_string(min) + " .. " + std::to_string(max); }

}  // namespace

void QualityConfig::validate() const {
    for (const auto &f : kDoubles) {
        double v = this->*f.member;
        if (!std::isfinite(v) || v < f.min || v > f.max) {
            throw_usage(std::string("quality threshold ") + f.key + " = " + std::to_string(v) +
                        " is out of range; allowed " + range_text(f.min, f.max));
        }
    }
    for (const auto &f : kInts) {
        int v = this->*f.member;
        if (v < f.min || v > f.max) {
            throw_usage(std::string("quality threshold ") + f.key + " = " + std::to_string(v) +
                        " is out of range; allowed " + std::to_string(f.min) + " .. " + std::to_string(f.max));
        }
    }
    if (min_rms_dbfs >= max_rms_dbfs) {
        throw_usage("quality thresholds: min_rms_dbfs (" + std::to_string(min_rms_dbfs) +
                    ") must be below max_rms_dbfs (" + std::to_string(max_rms_dbfs) + ")");
    }
    if (loop_max_period * 3 > loop_tail) {
        throw_usage("quality thresholds: loop_tail (" + std::to_string(loop_tail) +
                    ") must hold at least 3 repeats of loop_max_period (" + std::to_string(loop_max_period) + ")");
    }
}

nlohmann::json QualityConfig::to_json() const {
    nlohmann::json j;
    for (const auto &f : kDoubles) j[f.key] = this->*f.member;
    for (const auto &f : kInts) j[f.key] = this->*f.member;
    j["expect_speech"] = expect_speech;
    return j;
}

std::vector<std::string> QualityConfig::keys() {
    std::vector<std::string> k;
    for (const auto &f : kDoubles) k.emplace_back(f.key);
    for (const auto &f : kInts) k.emplace_back(f.key);
    k.emplace_back("expect_speech");
    return k;
}

void QualityConfig::set(const std::string &key, const std::string &value) {
    const std::string what = "quality threshold " + key;
    for (const auto &f : kDoubles) {
        if (key == f.key) {
            this->*f.member = parse_double(value, what, f.min, f.max);
            return;
        }
    }
    for (const auto &f : kInts) {
        if (key == f.key) {
            this->*f.member = static_cast<int>(parse_int(value, what, f.min, f.max));
            return;
        }
    }
    if (key == "expect_speech") {
        std::string v = trim(value);
        if (v == "true" || v == "1" || v == "yes") expect_speech = true;
        else if (v == "false" || v == "0" || v == "no") expect_speech = false;
        else throw_usage(what + ": '" + value + "' is not a boolean; allowed true/false");
        return;
    }
    std::string known;
    for (const auto &k : keys()) known += (known.empty() ? "" : ", ") + k;
    throw_usage("unknown quality threshold '" + key + "'; known: " + known);
}

}  // namespace rtf::quality
