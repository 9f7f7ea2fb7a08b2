#include "quality/token-checks.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "core/error.h"
#include "core/parse.h"

namespace rtf::quality {

namespace {

// Length of the longest suffix of ids[0, end) in which ids[i] == ids[i - p]; the periodic
// stretch it implies is that length + p.
size_t periodic_suffix(const std::vector<int32_t> &ids, size_t begin, size_t end, size_t p) {
    size_t len = 0;
    for (size_t i = end; i > begin + p; --i) {
        if (ids[i - 1] != ids[i - 1 - p]) break;
        ++len;
    }
    return len;
}

std::string unit_text(const std::vector<int32_t> &ids, size_t from, size_t p) {
    std::string s = "[";
    for (size_t i = 0; i < p && i < 8; ++i) {
        if (i) s += ' ';
        s += std::to_string(ids[from + i]);
    }
    return s + (p > 8 ? " ...]" : "]");
}

}  // namespace

QualityReport check_tokens(const std::vector<int32_t> &ids, int64_t vocab_size, int64_t eos_id, int64_t limit,
                           const QualityConfig &cfg) {
    if (vocab_size <= 0) throw_usage("check_tokens: vocab size " + std::to_string(vocab_size) + " must be > 0");
    if (limit < 0) throw_usage("check_tokens: limit " + std::to_string(limit) + " must be >= 0 (0 = none)");
    cfg.validate();
    QualityReport r;

    size_t bad = 0;
    int64_t first_bad = -1;
    size_t first_bad_at = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= vocab_size) {
            if (bad++ == 0) {
                first_bad = ids[i];
                first_bad_at = i;
            }
        }
    }
    r.checks.push_back(make_check("out_of_range", "count", static_cast<double>(bad), "==", 0, bad == 0,
                                  bad == 0 ? "all " + std::to_string(ids.size()) + " ids in [0, " +
                                                 std::to_string(vocab_size) + ")"
                                           : std::to_string(bad) + " ids outside [0, " + std::to_string(vocab_size) +
                                                 "), first " + std::to_string(first_bad) + " at index " +
                                                 std::to_string(first_bad_at)));

    // EOS within the limit. `body_end` is where the generated content stops.
    size_t body_end = ids.size();
    if (eos_id < 0) {
        r.checks.push_back(make_skipped("eos", "bool", "==", 1, "skipped: no EOS id given"));
    } else {
        auto it = std::find(ids.begin(), ids.end(), eos_id);
        const size_t at = static_cast<size_t>(it - ids.begin());
        const bool found = it != ids.end() && (limit == 0 || static_cast<int64_t>(at) < limit);
        if (it != ids.end()) body_end = at;
        std::string reason;
        if (found) {
            reason = "EOS (" + std::to_string(eos_id) + ") at index " + std::to_string(at);
        } else if (it != ids.end()) {
            reason = "EOS only at index " + std::to_string(at) + ", past the limit of " + std::to_string(limit);
        } else if (limit > 0 && static_cast<int64_t>(ids.size()) >= limit) {
            reason = "no EOS (" + std::to_string(eos_id) + "): generation ran to the limit of " +
                     std::to_string(limit) + " tokens";
        } else {
            reason = "no EOS (" + std::to_string(eos_id) + ") in " + std::to_string(ids.size()) + " tokens";
        }
        r.checks.push_back(make_check("eos", "bool", found ? 1 : 0, "==", 1, found, reason));
    }

    // Longest run of one id (the body only: padding after EOS is not the model's choice).
    size_t best = 0, best_at = 0, run = 0;
    for (size_t i = 0; i < body_end; ++i) {
        run = (i > 0 && ids[i] == ids[i - 1]) ? run + 1 : 1;
        if (run > best) {
            best = run;
            best_at = i + 1 - run;
        }
    }
    const bool run_ok = static_cast<int64_t>(best) <= cfg.max_token_run;
    r.checks.push_back(make_check("token_run", "tokens", static_cast<double>(best), "<=", cfg.max_token_run, run_ok,
                                  best == 0 ? "empty stream"
                                            : (run_ok ? "longest run: id " : "one token repeated: id ") +
                                                  std::to_string(ids[best_at]) + " x" + std::to_string(best) +
                                                  " from index " + std::to_string(best_at)));

    // Loop in the tail: the smallest period whose back-to-back repeats cover most of it.
    const size_t tail = std::min(body_end, static_cast<size_t>(cfg.loop_tail));
    const size_t begin = body_end - tail;
    double coverage = 0;
    size_t loop_p = 0, loop_len = 0;
    for (size_t p = 1; p <= static_cast<size_t>(cfg.loop_max_period) && 3 * p <= tail; ++p) {
        const size_t len = std::min(tail, periodic_suffix(ids, begin, body_end, p) + p);
        if (len < 3 * p) continue;  // fewer than three copies of the unit is no loop
        const double cov = static_cast<double>(len) / static_cast<double>(tail);
        if (cov > coverage + 1e-12) {
            coverage = cov;
            loop_p = p;
            loop_len = len;
        }
    }
    const bool loop_ok = coverage < cfg.loop_min_coverage;
    r.checks.push_back(make_check(
        "token_loop", "fraction", coverage, "<", cfg.loop_min_coverage, loop_ok,
        tail < 3 ? "stream too short to loop"
        : loop_p == 0
            ? "no repeated unit in the last " + std::to_string(tail) + " tokens"
            : (loop_ok ? "largest repeat in the tail: " : "repetition loop: ") + std::to_string(loop_p) +
                  "-token unit " + unit_text(ids, body_end - loop_len, loop_p) + " repeated " +
                  fmt(static_cast<double>(loop_len) / static_cast<double>(loop_p), 3) + " times over " +
                  fmt(100 * coverage) + " % of the last " + std::to_string(tail) + " tokens"));
    return r;
}

CheckResult compare_tokens(const std::vector<int32_t> &candidate, const std::vector<int32_t> &baseline,
                           const std::string &what) {
    const size_t common = std::min(candidate.size(), baseline.size());
    size_t i = 0;
    while (i < common && candidate[i] == baseline[i]) ++i;
    const bool same = i == common && candidate.size() == baseline.size();
    std::string reason;
    if (same) {
        reason = what + " identical (" + std::to_string(candidate.size()) + " ids)";
    } else if (i < common) {
        reason = what + " differ first at index " + std::to_string(i) + ": candidate " + std::to_string(candidate[i]) +
                 ", baseline " + std::to_string(baseline[i]);
    } else {
        reason = what + " agree for " + std::to_string(i) + " ids, then lengths differ: candidate " +
                 std::to_string(candidate.size()) + ", baseline " + std::to_string(baseline.size());
    }
    // value = index of the first difference; threshold = the baseline length (pass iff equal).
    return make_check("token_ids", "index", static_cast<double>(i), "==", static_cast<double>(baseline.size()), same,
                      reason);
}

std::vector<int32_t> read_token_file(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw_usage("cannot read token file " + path + " (expected whitespace-separated integer ids)");
    std::vector<int32_t> ids;
    std::string word;
    while (in >> word) {
        ids.push_back(static_cast<int32_t>(parse_int(word, "token file " + path + " (id #" +
                                                                std::to_string(ids.size()) + ")",
                                                     INT32_MIN, INT32_MAX)));
    }
    if (in.bad()) throw_usage("error while reading token file " + path);
    return ids;
}

}  // namespace rtf::quality
