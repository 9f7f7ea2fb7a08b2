#pragma once
// Word error rate: word-level Levenshtein distance between a normalised reference and a
// normalised hypothesis, divided by the reference's word count.
//
// Normalisation (applied to both sides): lowercase; every character other than a-z, 0-9
// and an apostrophe inside a word becomes a space; integers 0 .. 999999 are spelled as
// words ("42" -> "forty two") so "42" and "forty two" match, as pocketsphinx emits words.
//
// Thread-safety: pure functions.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quality/check.h"
#include "quality/quality-config.h"

namespace rtf::quality {

std::string normalise_text(const std::string &text);
std::vector<std::string> words_of(const std::string &normalised);

struct WerResult {
    std::string reference;   // normalised
    std::string hypothesis;  // normalised
    int n_reference_words = 0;
    int substitutions = 0, deletions = 0, insertions = 0;
    double wer_pct = 0;      // 100 x (S + D + I) / N; can exceed 100 with many insertions

    nlohmann::json to_json() const;
};

// Throws rtf::Error(Usage) when the reference has no words after normalisation.
WerResult word_error_rate(const std::string &reference, const std::string &hypothesis);

// Intelligibility gate: WER <= cfg.max_wer_pct ("wer_pct").
CheckResult wer_check(const WerResult &w, const QualityConfig &cfg);

// The red line (docs/method.md §6.4): candidate WER <= baseline WER + cfg.max_wer_increase_pp
// ("wer_increase_pp", value = candidate - baseline in percentage points).
CheckResult wer_red_line(double candidate_wer_pct, double baseline_wer_pct, const QualityConfig &cfg);

}  // namespace rtf::quality
