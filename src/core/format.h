#pragma once
// Numbers as text for tables, summaries and messages: the one fixed-point formatter, so
// every command prints a missing or broken figure the same way instead of "nan" here
// and "-" there.
//
//   fmt(0.51234)           -> "0.512"
//   fmt(1234.5, 1)         -> "1234.5"
//   fmt(NAN)               -> "n/a"
//   fmt(INFINITY, 1, "-")  -> "-"       (a placeholder that fits a narrow column)
//
// (quality/check.h keeps its own significant-digit fmt for the reasons of quality checks.)
#include <string>
#include <string_view>

namespace rtf {

// `v` with exactly `decimals` digits after the point (0..17; 0 also drops the point);
// NaN and +-inf become `non_finite`.
std::string fmt(double v, int decimals = 3, std::string_view non_finite = "n/a");

}  // namespace rtf
