#include "bench/leverage.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace rtf::bench {

namespace {
void assign_layer(LeverageRow &r) {
    if (!r.floor_known) {
        r.layer = 0;
        r.layer_name = "unknown";
        r.advice = "floor unknown (gain is an upper bound): measure it with `rtf limits --models DIR` or pass --floor";
    } else if (r.actual_rtf < 0.95 * r.floor_rtf) {
        r.layer = 0;
        r.layer_name = "check the floor";
        r.advice = "measured faster than its floor: the floor's inputs (model files, rates, speech rate) do not "
                   "match this run";
    } else if (r.reducible >= 0.5) {
        r.layer = 1;
        r.layer_name = "backend / placement (then precision)";
        r.advice = "more than 2x above its floor: check the device the stage runs on and its weight type first";
    } else if (r.reducible >= 0.15) {
        r.layer = 4;
        r.layer_name = "runtime parameters";
        r.advice = "within 2x of its floor: threads, NUMA / affinity, context size";
    } else {
        r.layer = 5;
        r.layer_name = "operators";
        r.advice = "near its floor: only kernel work is left (small, last)";
    }
}
}  // namespace

std::vector<LeverageRow> leverage_table(const std::vector<StageTime> &stages, double rtf, double bound_overlap) {
    std::vector<LeverageRow> rows;
    double sum = 0;
    for (const auto &s : stages)
        if (std::isfinite(s.rtf_stage)) sum += s.rtf_stage;
    for (const auto &s : stages) {
        LeverageRow r;
        r.what = s.name;
        r.actual_rtf = s.rtf_stage;
        r.share = sum > 0 && std::isfinite(s.rtf_stage) ? s.rtf_stage / sum : 0.0;
        r.floor_known = s.floor_rtf >= 0;
        r.floor_rtf = s.floor_rtf;
        if (r.floor_known && s.rtf_stage > 0)
            r.reducible = std::clamp(1.0 - s.floor_rtf / s.rtf_stage, 0.0, 1.0);
        else
            r.reducible = r.floor_known ? 0.0 : 1.0;
        r.gain = r.share * r.reducible;
        assign_layer(r);
        rows.push_back(r);
    }
    if (std::isfinite(rtf) && rtf > 0 && std::isfinite(bound_overlap)) {
        LeverageRow p;
        p.what = "pipeline (overlap)";
        p.layer = 3;
        p.layer_name = "pipeline / scheduling";
        p.share = 1.0;
        p.actual_rtf = rtf;
        p.floor_rtf = bound_overlap;
        p.floor_known = true;
        p.reducible = std::clamp(1.0 - bound_overlap / rtf, 0.0, 1.0);
        p.gain = p.reducible;
        p.advice = p.reducible > 0.05 ? "the stages do not overlap: queue depths (D1, D2), decoupling, --schedule"
                                      : "the pipeline already hides all but the bottleneck stage";
        rows.push_back(p);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.gain > b.gain; });
    return rows;
}

nlohmann::json to_json(const std::vector<LeverageRow> &rows) {
    auto arr = nlohmann::json::array();
    auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    for (const auto &r : rows) {
        arr.push_back({{"what", r.what},
                       {"layer", r.layer},
                       {"layer_name", r.layer_name},
                       {"share", num(r.share)},
                       {"actual_rtf", num(r.actual_rtf)},
                       {"floor_rtf", r.floor_known ? num(r.floor_rtf) : nlohmann::json(nullptr)},
                       {"floor_known", r.floor_known},
                       {"reducible", num(r.reducible)},
                       {"gain", num(r.gain)},
                       {"advice", r.advice}});
    }
    return arr;
}

}  // namespace rtf::bench
