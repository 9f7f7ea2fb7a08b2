#pragma once
// Chrome trace event JSON (loads in ui.perfetto.dev and chrome://tracing) from a RunRecord.
//
// Layout: one process "rtf pipeline"; one thread track per stage (tid = stage index + 1,
// named by "thread_name" metadata) with a complete ("X") event per work segment
// ("<stage> #<out_seq>"), sub-stage scopes nested inside it, and sub-stage values in its
// args; a "playback" track (tid = n_stages + 1) with each chunk's playing interval and
// every starvation gap; one counter ("C") track per queue with its depth over time.
// Timestamps are microseconds since the request (t0). Format reference: "Trace Event
// Format" (Google, docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "profile/playback.h"
#include "profile/run-record.h"

namespace rtf::prof {

// `playback` may be nullptr (no playback track).
nlohmann::json chrome_trace(const RunRecord &run, const Starvation *playback);

// Writes `trace` to `path`; throws rtf::Error(Setup) naming the path when it cannot.
void write_trace_file(const nlohmann::json &trace, const std::string &path);

}  // namespace rtf::prof
