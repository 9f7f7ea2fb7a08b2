#include "core/parse.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/error.h"

namespace rtf {

namespace {
std::string quote(std::string_view s) { return "'" + std::string(s) + "'"; }
}  // namespace

std::string trim(std::string_view text) {
    size_t b = 0, e = text.size();
    while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
    return std::string(text.substr(b, e - b));
}

std::vector<std::string> split(std::string_view text, char sep) {
    std::vector<std::string> out;
    size_t start = 0;
    for (;;) {
        size_t pos = text.find(sep, start);
        out.push_back(trim(text.substr(start, pos == std::string_view::npos ? pos : pos - start)));
        if (pos == std::string_view::npos) break;
        start = pos + 1;
    }
    return out;
}

double parse_double(std::string_view text, std::string_view what, double min, double max) {
    std::string s = trim(text);
    char *end = nullptr;
    errno = 0;
    double v = s.empty() ? 0.0 : std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v)) {
        throw_usage(std::string(what) + ": " + quote(text) + " is not a number");
    }
    if (v < min || v > max) {
        throw_usage(std::string(what) + ": " + quote(text) + " is out of range; allowed " +
                    std::to_string(min) + " .. " + std::to_string(max));
    }
    return v;
}

int64_t parse_int(std::string_view text, std::string_view what, int64_t min, int64_t max) {
    std::string s = trim(text);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
        throw_usage(std::string(what) + ": " + quote(text) + " is not an integer");
    }
    if (v < min || v > max) {
        throw_usage(std::string(what) + ": " + quote(text) + " is out of range; allowed " +
                    std::to_string(min) + " .. " + std::to_string(max));
    }
    return v;
}

double parse_duration_ms(std::string_view text, std::string_view what) {
    std::string s = trim(text);
    double scale = 1.0;
    std::string num = s;
    auto ends_with = [&](std::string_view suf) {
        return s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
    };
    if (ends_with("ms")) {
        num = s.substr(0, s.size() - 2);
    } else if (ends_with("min")) {
        num = s.substr(0, s.size() - 3);
        scale = 60e3;
    } else if (ends_with("m")) {
        num = s.substr(0, s.size() - 1);
        scale = 60e3;
    } else if (ends_with("h")) {
        num = s.substr(0, s.size() - 1);
        scale = 3600e3;
    } else if (ends_with("us")) {
        num = s.substr(0, s.size() - 2);
        scale = 1e-3;
    } else if (ends_with("s")) {
        num = s.substr(0, s.size() - 1);
        scale = 1e3;
    }
    char *end = nullptr;
    errno = 0;
    double v = num.empty() ? 0.0 : std::strtod(num.c_str(), &end);
    if (num.empty() || end != num.c_str() + num.size() || !std::isfinite(v) || v < 0) {
        throw_usage(std::string(what) + ": " + quote(text) +
                    " is not a duration; use e.g. 120ms, 1.5s, 800us, 2m, 1h (>= 0)");
    }
    return v * scale;
}

std::vector<std::pair<std::string, std::string>> parse_key_values(std::string_view text,
                                                                  std::string_view what) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto &item : split(text, ',')) {
        auto eq = item.find('=');
        if (eq == std::string::npos || trim(item.substr(0, eq)).empty() ||
            trim(item.substr(eq + 1)).empty()) {
            throw_usage(std::string(what) + ": " + quote(item) + " in " + quote(text) +
                        " is not KEY=VALUE");
        }
        out.emplace_back(trim(item.substr(0, eq)), trim(item.substr(eq + 1)));
    }
    return out;
}

std::vector<int> parse_int_list(std::string_view text, std::string_view what) {
    std::vector<int> out;
    for (const auto &item : split(text, ',')) {
        auto dash = item.find('-');
        if (dash == std::string::npos) {
            out.push_back(static_cast<int>(parse_int(item, what, 0, 1 << 20)));
        } else {
            int a = static_cast<int>(parse_int(item.substr(0, dash), what, 0, 1 << 20));
            int b = static_cast<int>(parse_int(item.substr(dash + 1), what, 0, 1 << 20));
            if (b < a) throw_usage(std::string(what) + ": range " + quote(item) + " is reversed");
            for (int i = a; i <= b; ++i) out.push_back(i);
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

}  // namespace rtf
