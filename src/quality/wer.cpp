#include "quality/wer.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "core/error.h"

namespace rtf::quality {

namespace {

const char *const kOnes[] = {"zero",    "one",     "two",       "three",    "four",     "five",    "six",
                             "seven",   "eight",   "nine",      "ten",      "eleven",   "twelve",  "thirteen",
                             "fourteen", "fifteen", "sixteen",  "seventeen", "eighteen", "nineteen"};
const char *const kTens[] = {"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"};

std::string below_thousand(int n) {
    std::string s;
    if (n >= 100) {
        s = kOnes[n / 100];
        s += " hundred";
        n %= 100;
        if (n == 0) return s;
        s += " ";
    }
    if (n < 20) return s + kOnes[n];
    s += kTens[n / 10];
    if (n % 10) {
        s += ' ';
        s += kOnes[n % 10];
    }
    return s;
}

std::string number_words(const std::string &digits) {
    // Leading zeros or long numbers are read digit by digit, as people say them.
    if (digits.size() > 6 || (digits.size() > 1 && digits[0] == '0')) {
        std::string s;
        for (char c : digits) {
            if (!s.empty()) s += ' ';
            s += kOnes[c - '0'];
        }
        return s;
    }
    const int n = std::stoi(digits);
    if (n < 1000) return below_thousand(n);
    std::string s = below_thousand(n / 1000) + " thousand";
    if (n % 1000) {
        s += ' ';
        s += below_thousand(n % 1000);
    }
    return s;
}

}  // namespace

std::string normalise_text(const std::string &text) {
    // Lowercase and map everything but letters, digits and apostrophes to spaces.
    std::string t;
    t.reserve(text.size());
    for (unsigned char c : text) {
        if (std::isalnum(c) && c < 128) t += static_cast<char>(std::tolower(c));
        else if (c == '\'') t += '\'';
        else t += ' ';
    }
    std::vector<std::string> out;
    std::istringstream is(t);
    std::string w;
    while (is >> w) {
        // Apostrophes only inside words ("don't" stays, quotes 'x' go).
        while (!w.empty() && w.front() == '\'') w.erase(w.begin());
        while (!w.empty() && w.back() == '\'') w.pop_back();
        if (w.empty()) continue;
        // Split letter/digit runs ("3rd" -> "3 rd") and spell the digits.
        size_t i = 0;
        while (i < w.size()) {
            size_t j = i;
            const bool digit = std::isdigit(static_cast<unsigned char>(w[i])) != 0;
            while (j < w.size() && (std::isdigit(static_cast<unsigned char>(w[j])) != 0) == digit) ++j;
            std::string part = w.substr(i, j - i);
            out.push_back(digit ? number_words(part) : part);
            i = j;
        }
    }
    std::string s;
    for (const auto &p : out) {
        if (!s.empty()) s += ' ';
        s += p;
    }
    return s;
}

std::vector<std::string> words_of(const std::string &normalised) {
    std::vector<std::string> w;
    std::istringstream is(normalised);
    std::string x;
    while (is >> x) w.push_back(x);
    return w;
}

nlohmann::json WerResult::to_json() const {
    return {{"reference", reference},       {"hypothesis", hypothesis}, {"n_reference_words", n_reference_words},
            {"substitutions", substitutions}, {"deletions", deletions},  {"insertions", insertions},
            {"wer_pct", wer_pct}};
}

WerResult word_error_rate(const std::string &reference, const std::string &hypothesis) {
    WerResult r;
    r.reference = normalise_text(reference);
    r.hypothesis = normalise_text(hypothesis);
    const auto ref = words_of(r.reference), hyp = words_of(r.hypothesis);
    if (ref.empty()) throw_usage("reference text '" + reference + "' has no words to score against");
    const size_t n = ref.size(), m = hyp.size();
    // Edit-distance table with backtrace to split the errors into S/D/I.
    std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
    for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
    for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
    for (size_t i = 1; i <= n; ++i)
        for (size_t j = 1; j <= m; ++j)
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1])});
    size_t i = n, j = m;
    while (i > 0 || j > 0) {
        if (i > 0 && j > 0 && d[i][j] == d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1])) {
            r.substitutions += ref[i - 1] != hyp[j - 1];
            --i;
            --j;
        } else if (i > 0 && d[i][j] == d[i - 1][j] + 1) {
            ++r.deletions;
            --i;
        } else {
            ++r.insertions;
            --j;
        }
    }
    r.n_reference_words = static_cast<int>(n);
    r.wer_pct = 100.0 * (r.substitutions + r.deletions + r.insertions) / static_cast<double>(n);
    return r;
}

CheckResult wer_check(const WerResult &w, const QualityConfig &cfg) {
    const bool ok = w.wer_pct <= cfg.max_wer_pct;
    return make_check("wer_pct", "%", w.wer_pct, "<=", cfg.max_wer_pct, ok,
                      std::string(ok ? "intelligible" : "unintelligible") + ": " +
                          std::to_string(w.substitutions) + " sub, " + std::to_string(w.deletions) + " del, " +
                          std::to_string(w.insertions) + " ins in " + std::to_string(w.n_reference_words) +
                          " words; heard \"" + w.hypothesis + "\"");
}

CheckResult wer_red_line(double candidate_wer_pct, double baseline_wer_pct, const QualityConfig &cfg) {
    const double diff = candidate_wer_pct - baseline_wer_pct;
    const bool ok = diff <= cfg.max_wer_increase_pp + 1e-9;
    return make_check("wer_increase_pp", "pp", diff, "<=", cfg.max_wer_increase_pp, ok,
                      std::string(ok ? "within the red line" : "red line crossed") + ": WER " +
                          fmt(candidate_wer_pct) + " % vs baseline " + fmt(baseline_wer_pct) + " %");
}

}  // namespace rtf::quality
