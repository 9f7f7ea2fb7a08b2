#pragma once
// The report's charts, each a function from data to one inline <svg> string (svg.h).
// Each chart copes with its edge cases itself (no data, one point, thousands of points,
// NaN values) and says so on the chart instead of failing; values from the JSON are
// escaped by the Svg writer.
#include <string>
#include <vector>

#include "report/json-view.h"

namespace rtf::report {

// Per-chunk pace (chunk_rtf) and running end-to-end RTF (cumulative_rtf) against the
// chunk index, with the RTF = 1 line and rtf_steady. Values far above the rest (chunk 0
// carries the first-audio latency) are clipped at the top and labelled with their value.
std::string chunk_rtf_chart(const RunView &v);

// Gantt: one row per chunk, one bar per stage on that chunk's path, a tick where the chunk
// reached the sink. Bars of different chunks overlapping in time = the stages overlap;
// a staircase with no overlap = lockstep / sequential. At most `max_rows` rows (the first
// ones; the chart says how many were left out).
std::string gantt_chart(const RunView &v, size_t max_rows = 600);

// Stage lanes: each stage's work segments on its own lane, plus a playback lane (audio
// playing, and the starvation gaps in red).
std::string lanes_chart(const RunView &v);

// Stacked stage shares: one bar per row, segments = rtf_stage.<s> (seconds of work per
// second of audio; the bar's length is bound_serial, its longest segment bound_overlap),
// a black marker at the row's measured RTF and the RTF = 1 line.
struct ShareRow {
    std::string label;
    std::vector<std::pair<std::string, double>> stages;  // (stage, rtf_stage)
    double rtf = 0;                                      // NaN: no marker
};
std::string stage_share_chart(const std::vector<ShareRow> &rows, const std::vector<std::string> &stage_order);

// The leverage table (bench/leverage.h JSON rows) as bars of gain = share x reducible.
std::string leverage_chart(const json &rows);

// Device duty-cycle timeline: compute % and memory % per device over the run, the duty
// thresholds, and the samples counted as active shaded.
struct DeviceSeries {
    std::string device;
    std::vector<double> t_ms, compute, memory;  // memory NaN when not reported
    double compute_threshold = 5, memory_threshold = 5;
    double duty_cycle = 0;  // NaN when unknown
};
std::string duty_chart(const std::vector<DeviceSeries> &devices);

// RTF of every run per config side by side: dots per run (grey = warm-up, red cross =
// failed quality gate or run, not counted), the median as a bar, the noise band (median
// +- noise) shaded, and the target line. Used for single, sweep and A/B results.
struct RunPoint {
    double rtf = 0;
    bool warmup = false, counted = true;
    std::string note;  // tooltip
};
struct ConfigRuns {
    std::string label;
    std::vector<RunPoint> runs;
    double median = 0;  // NaN: none
};
std::string runs_chart(const std::vector<ConfigRuns> &configs, double noise, double target_rtf);

// One metric over the history (oldest first, one point per result): a line through the
// values, each point with its id / commit / value as tooltip, the commit under the axis.
struct SeriesPoint {
    std::string label;   // short commit (or id) under the axis
    std::string note;    // tooltip
    double value = 0;    // NaN: a gap
};
std::string series_chart(const std::vector<SeriesPoint> &points, const std::string &metric);

}  // namespace rtf::report
