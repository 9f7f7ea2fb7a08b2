#pragma once
// Renderings of a bench result. The JSON (protocol.h, schema rtfkit.bench/1) is the one
// source of truth; Markdown and CSV are made from it only, so a stored JSON can be
// re-rendered later.
//
//   CSV: one row per config (llama-bench style): label, every knob that varies as its own
//        column, verdict, exit_code, then median/min/max/mad of rtf and the median of
//        rtf_steady, first_audio_ms, starvation.count, xrt, bound_overlap, bound_serial,
//        pipeline_efficiency and every rtf_stage.<s>. RFC 4180 quoting.
//   Markdown: the same table, then per config the verdict with reasons, warnings and the
//        leverage table; a comparison section when the result has one.
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace rtf::bench {

std::string bench_csv(const nlohmann::json &bench);
std::string bench_markdown(const nlohmann::json &bench);
std::string comparison_markdown(const nlohmann::json &comparison);

}  // namespace rtf::bench
