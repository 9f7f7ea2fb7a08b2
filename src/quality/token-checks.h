#pragma once
// Token-stream checks: did the model degenerate? Works on text tokens (LLM) and audio
// tokens (TTS) alike. The write-up's Q8_0 run emitted a "??????" loop at a fine RTF; these
// checks catch that class of failure from the ids alone.
//
// Checks (names are stable JSON ids; thresholds in QualityConfig):
//   out_of_range  == 0                  ids < 0 or >= vocab_size
//   eos           == 1                  the EOS id appears within the first `limit` tokens
//                                        (skipped when eos_id < 0)
//   token_run     <= max_token_run      longest run of one id anywhere
//   token_loop    <  loop_min_coverage  share of the tail (last loop_tail ids, EOS and what
//                                        follows it excluded) covered by a unit of period
//                                        <= loop_max_period repeated back to back >= 3 times
//
// Thread-safety: pure functions.
#include <cstdint>
#include <string>
#include <vector>

#include "quality/check.h"
#include "quality/quality-config.h"

namespace rtf::quality {

// `limit`: the generation limit the run used (tokens; 0 = none). Throws rtf::Error(Usage)
// when vocab_size <= 0 or cfg is invalid.
QualityReport check_tokens(const std::vector<int32_t> &ids, int64_t vocab_size, int64_t eos_id, int64_t limit,
                           const QualityConfig &cfg = QualityConfig{});

// Equivalence for changes that claim not to alter the math (threads, placement, queue
// depth, F16 vs F32 buffers) under greedy decoding or a fixed seed: the ids must be
// identical. One check "token_ids" (value = index of the first difference, or the common
// length when identical). `what` names the stream in the reason, e.g. "audio tokens".
CheckResult compare_tokens(const std::vector<int32_t> &candidate, const std::vector<int32_t> &baseline,
                           const std::string &what = "tokens");

// Whitespace-separated integer ids from a file (rtf quality --tokens). Throws
// rtf::Error(Usage) naming the file and the offending word.
std::vector<int32_t> read_token_file(const std::string &path);

}  // namespace rtf::quality
