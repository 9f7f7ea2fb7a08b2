#include "quality/check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace rtf::quality {

const char *to_string(CheckStatus s) noexcept {
    switch (s) {
    case CheckStatus::Pass: return "pass";
    case CheckStatus::Fail: return "fail";
    case CheckStatus::Skipped: return "skipped";
    }
    return "?";
}

namespace {
nlohmann::json num_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }
}  // namespace

nlohmann::json CheckResult::to_json() const {
    return {{"name", name},   {"status", to_string(status)},     {"value", num_or_null(value)},
            {"op", op},       {"threshold", num_or_null(threshold)}, {"unit", unit},
            {"reason", reason}};
}

bool QualityReport::passed() const { return n_failed() == 0; }

int QualityReport::n_failed() const {
    int n = 0;
    for (const auto &c : checks) n += c.status == CheckStatus::Fail;
    return n;
}

int QualityReport::n_skipped() const {
    int n = 0;
    for (const auto &c : checks) n += c.status == CheckStatus::Skipped;
    return n;
}

std::vector<const CheckResult *> QualityReport::failures() const {
    std::vector<const CheckResult *> out;
    for (const auto &c : checks)
        if (c.failed()) out.push_back(&c);
    return out;
}

const CheckResult *QualityReport::find(const std::string &name) const {
    for (const auto &c : checks)
        if (c.name == name) return &c;
    return nullptr;
}

void QualityReport::append(const QualityReport &other) {
    checks.insert(checks.end(), other.checks.begin(), other.checks.end());
}

nlohmann::json QualityReport::to_json() const {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto &c : checks) arr.push_back(c.to_json());
    return {{"passed", passed()}, {"n_failed", n_failed()}, {"n_skipped", n_skipped()}, {"checks", arr}};
}

std::string QualityReport::to_text() const {
    std::ostringstream os;
    for (const auto &c : checks) {
        const char *tag = c.status == CheckStatus::Pass ? "PASS" : c.status == CheckStatus::Fail ? "FAIL" : "SKIP";
        os << tag << "  " << c.name;
        if (std::isfinite(c.value)) os << "  " << fmt(c.value, 4);
        if (!c.op.empty()) os << " " << c.op << " " << fmt(c.threshold, 4);
        if (!c.unit.empty()) os << " " << c.unit;
        os << "  — " << c.reason << "\n";
    }
    return os.str();
}

CheckResult make_check(std::string name, std::string unit, double value, std::string op, double threshold,
                       bool pass, std::string reason) {
    CheckResult c;
    c.name = std::move(name);
    c.unit = std::move(unit);
    c.value = value;
    c.op = std::move(op);
    c.threshold = threshold;
    c.status = pass ? CheckStatus::Pass : CheckStatus::Fail;
    c.reason = std::move(reason);
    return c;
}

CheckResult make_skipped(std::string name, std::string unit, std::string op, double threshold,
                         std::string reason) {
    CheckResult c = make_check(std::move(name), std::move(unit), std::nan(""), std::move(op), threshold, true,
                               std::move(reason));
    c.status = CheckStatus::Skipped;
    return c;
}

std::string fmt(double v, int precision) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    double a = std::fabs(v);
    if (a != 0 && (a < 1e-3 || a >= 1e6)) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    } else {
        // Fixed notation with `precision` significant digits at most, trailing zeros dropped.
        int decimals = a >= 1 ? std::max(0, precision - 1 - static_cast<int>(std::floor(std::log10(a)))) : precision;
        std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
        std::string s = buf;
        if (s.find('.') != std::string::npos) {
            while (!s.empty() && s.back() == '0') s.pop_back();
            if (!s.empty() && s.back() == '.') s.pop_back();
        }
        return s;
    }
    return buf;
}

}  // namespace rtf::quality
