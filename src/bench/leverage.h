#pragma once
// The leverage table — docs/method.md §4: rank levers by gain = stage share x reducible fraction.
//
//   share       rtf_stage.<s> / sum over stages of rtf_stage (the stage's part of the summed
//               stage time, i.e. of bound_serial)
//   reducible   1 - floor / actual, clamped to [0, 1]; `floor` is the stage's lower bound in
//               the same unit (RTF: seconds of work per second of audio) from `rtf limits`
//               or --floor. Unknown floor: reducible = 1 (an upper bound) and floor_known =
//               false, so the row can still be ranked but says it is a guess.
//   gain        share x reducible: the fraction of summed stage time the lever could remove.
//   pipeline    one extra row for scheduling: share 1, reducible = 1 - bound_overlap / rtf
//               (time lost because the stages do not overlap perfectly), layer 3.
//
// Which docs/method.md §5 toolbox layer addresses a stage's gap (a heuristic, stated so it can be
// argued with): reducible >= 0.5 (more than 2x its floor) -> layer 1 backend / placement
// (then 2 precision): that much waste is usually the wrong device or an unsupported type;
// 0.15 .. 0.5 -> layer 4 runtime parameters (threads, NUMA / affinity); < 0.15 -> layer 5
// operators (near the floor: only kernel work is left, small and last). Unknown floor ->
// "measure the floor first (rtf limits --models DIR)". A stage measured below 95 % of its
// floor gets layer 0 "check the floor": the floor's inputs do not match the run. Rows are sorted by gain, largest first.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rtf::bench {

struct StageTime {
    std::string name;
    double rtf_stage = 0;
    double floor_rtf = -1;  // < 0: unknown
};

struct LeverageRow {
    std::string what;        // stage name, or "pipeline (overlap)"
    int layer = 0;           // docs/method.md §5 layer 1..5; 0 when the floor is unknown
    std::string layer_name;
    double share = 0, reducible = 0, gain = 0;
    double actual_rtf = 0;
    double floor_rtf = -1;   // < 0 unknown
    bool floor_known = false;
    std::string advice;
};

std::vector<LeverageRow> leverage_table(const std::vector<StageTime> &stages, double rtf, double bound_overlap);

nlohmann::json to_json(const std::vector<LeverageRow> &rows);

}  // namespace rtf::bench
