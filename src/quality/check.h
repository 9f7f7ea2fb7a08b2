#pragma once
// The result type every quality gate returns: a list of named checks, each with the
// measured value, the threshold it was held to, pass / fail / skipped, and a reason a
// person can act on. Modelled on MLPerf LoadGen's VALID/INVALID-with-reasons: a run is
// "pass" only when no check failed; a skipped check (e.g. "skipped (no ASR)") never
// counts as a pass it did not earn — it is listed as skipped in every rendering.
//
// Usage:
//   rtf::quality::QualityReport r = rtf::quality::check_audio(pcm, 24000, {}, cfg);
//   if (!r.passed()) for (const auto *c : r.failures()) std::cerr << c->name << ": " << c->reason;
//   nlohmann::json j = r.to_json();   // {"passed":..,"n_failed":..,"checks":[...]}
//
// Thread-safety: plain values; no shared state.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rtf::quality {

enum class CheckStatus { Pass, Fail, Skipped };
const char *to_string(CheckStatus s) noexcept;  // "pass" | "fail" | "skipped"

struct CheckResult {
    std::string name;       // stable id used in JSON and by bench, e.g. "clip_ratio"
    std::string unit;       // unit of value and threshold, e.g. "dBFS", "fraction", "count"
    double value = 0;       // the measurement (NaN when skipped or not measurable)
    double threshold = 0;   // the limit applied
    std::string op;         // how value relates to threshold to pass: "<=", ">=", "=="
    CheckStatus status = CheckStatus::Skipped;
    std::string reason;     // one line: why it passed, failed or was skipped

    bool failed() const { return status == CheckStatus::Fail; }
    nlohmann::json to_json() const;  // value/threshold are null when not finite
};

struct QualityReport {
    std::vector<CheckResult> checks;

    bool passed() const;                            // no check failed (skipped ones do not fail)
    int n_failed() const;
    int n_skipped() const;
    std::vector<const CheckResult *> failures() const;
    const CheckResult *find(const std::string &name) const;  // nullptr when absent
    void append(const QualityReport &other);
    nlohmann::json to_json() const;
    // One line per check: "PASS clip_ratio 0.0000 <= 0.0010 fraction — reason".
    std::string to_text() const;
};

// Helpers for building checks. `pass` decides the status; the reason is written by the caller.
CheckResult make_check(std::string name, std::string unit, double value, std::string op,
                       double threshold, bool pass, std::string reason);
CheckResult make_skipped(std::string name, std::string unit, std::string op, double threshold,
                         std::string reason);

// Number formatting used in reasons ("%.3g"-like, but fixed for readability).
std::string fmt(double v, int precision = 3);

}  // namespace rtf::quality
