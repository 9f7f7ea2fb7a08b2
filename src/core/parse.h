#pragma once
// Parsing of user-supplied values (flags, config keys). Every function throws
// rtf::Error(Usage) naming `what` (the flag or key) and the offending text, and says
// what would be accepted.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rtf {

// "120ms", "1.5s", "800us", "2m" / "2min", "1h", "250" (bare numbers are milliseconds) -> milliseconds.
double parse_duration_ms(std::string_view text, std::string_view what);

// Strict integer / float parsing with range checks, e.g. parse_int("0", "--d1", 1, 1024).
int64_t parse_int(std::string_view text, std::string_view what, int64_t min, int64_t max);
double parse_double(std::string_view text, std::string_view what, double min, double max);

// "a=1,b=2" -> {{"a","1"},{"b","2"}}; keys and values trimmed, both must be non-empty.
std::vector<std::pair<std::string, std::string>> parse_key_values(std::string_view text,
                                                                  std::string_view what);

// "0-3,6,8-9" -> {0,1,2,3,6,8,9} (sorted, unique). Used for CPU sets.
std::vector<int> parse_int_list(std::string_view text, std::string_view what);

std::vector<std::string> split(std::string_view text, char sep);
std::string trim(std::string_view text);

}  // namespace rtf
