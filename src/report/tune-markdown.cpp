// The Markdown view of an `rtf tune` result (schema rtfkit.tune/1, bench/tune.h): the
// descent curve, the changes kept (tuned.json), every trial with its verdict and reason,
// and why it stopped.
#include <cmath>
#include <sstream>

#include "report/escape.h"
#include "report/json-view.h"
#include "report/report.h"

namespace rtf::report {

std::string tune_markdown(const json &doc) {
    std::ostringstream o;
    auto me = [](const std::string &s) { return md_escape(s); };
    // Results before the objective existed have only the RTF keys: read those as the objective's.
    const std::string objective = str(doc, "objective").empty() ? "rtf" : str(doc, "objective");
    const bool ms = objective != "rtf";
    auto val = [&](const json &j, const char *key, const char *legacy) {
        const double v = num(j, key);
        return std::isfinite(v) ? v : num(j, legacy);
    };
    const int dec = ms ? 0 : 3;
    o << "## rtfkit tune\n\n";
    if (ms) {
        o << "Objective **" << me(objective) << "** (lower is better). Baseline **" << fmt(val(doc, "base_value", "base_rtf"), 0)
          << " ms** (RTF " << fmt(num(doc, "base_rtf")) << "); the kept changes together: x" << fmt(num(doc, "gain"))
          << " (best ~ **" << fmt(num(doc, "best_value_estimate"), 0) << " ms**, RTF ~ " << fmt(num(doc, "best_rtf_estimate"))
          << ") — ";
    } else {
        o << "Baseline RTF **" << fmt(num(doc, "base_rtf")) << "**; the kept changes together: x" << fmt(num(doc, "gain"))
          << " (best ~ **" << fmt(num(doc, "best_rtf_estimate")) << "**) — ";
    }
    o << me(str(doc, "stop_reason")) << " (" << fmt(num(doc, "wall_s"), 0)
      << " s). Each ratio comes from one interleaved pair; absolute figures of trials minutes apart drift, so the "
         "kept changes together meet the starting knobs in one more pair (the confirmation below, unless "
         "--no-confirm); `rtf bench --ab` with more runs settles a close call.\n\n";
    o << profile_markdown(at(doc, "profile"));
    if (at(doc, "fidelity_unverified").is_boolean() && at(doc, "fidelity_unverified").get<bool>()) {
        o << "**Fidelity not verified:** a kept change alters the math (a type, flow steps or CFG); the quality gates "
             "passed, the output was not scored against the baseline's.\n\n";
    }
    o << "### Descent\n\n| step | A (best so far) | B (with the step) | B/A | cumulative | " << (ms ? me(objective) : "RTF")
      << " estimate |\n|---|---:|---:|---:|---:|---:|\n";
    for (const auto &d : at(doc, "descent")) {
        o << "| " << me(str(d, "step")) << " | " << fmt(val(d, "a_value", "a_rtf"), dec) << " | " << fmt(val(d, "b_value", "b_rtf"), dec)
          << " | " << fmt(num(d, "ratio")) << " | " << fmt(num(d, "cumulative")) << " | "
          << fmt(val(d, "estimate", "rtf_estimate"), dec) << " |\n";
    }
    const json &conf = at(doc, "confirmation");
    if (!str(conf, "verdict").empty()) {
        o << "\n**Confirmation** (the starting knobs vs the tuned ones, one more interleaved pair): **" << me(str(conf, "verdict"))
          << "** — " << me(str(conf, "reason")) << ".\n";
    }
    o << "\n### Kept changes (tuned.json)\n\n";
    const json &ch = at(doc, "changes");
    const json &unconfirmed = at(doc, "unconfirmed_changes");
    if (!is_nonempty(ch) && is_nonempty(unconfirmed)) {
        o << "None: the trials kept ";
        size_t i = 0;
        for (auto it = unconfirmed.begin(); it != unconfirmed.end(); ++it)
            o << (i++ ? ", " : "") << "`" << me(it.key()) << "=" << me(str(it.value())) << "`";
        o << ", but the confirmation pair did not show them beyond the noise, so the configuration it started from "
             "stands (measure them with `rtf bench --ab` if they matter).\n";
    } else if (!is_nonempty(ch)) {
        o << "None: no candidate beat the noise floor with its gates passing; the configuration it started from stands.\n";
    } else {
        o << "| knob | value |\n|---|---|\n";
        for (auto it = ch.begin(); it != ch.end(); ++it) o << "| " << me(it.key()) << " | " << me(str(it.value())) << " |\n";
    }
    o << "\n### Trials (top layer first; A = the best so far, B = it plus the change, interleaved)\n\n";
    const std::string unit = ms ? " (ms)" : " RTF";
    o << "| # | layer | change | stage | A" << unit << " | B" << unit << " | delta | verdict | reason |\n"
      << "|---:|---|---|---|---:|---:|---:|---|---|\n";
    for (const auto &t : at(doc, "trials")) {
        const std::string change = str(t, "change").empty() ? str(t, "knob") + "=" + str(t, "value") : str(t, "change");
        o << "| " << str(t, "index") << " | " << me(str(t, "layer_name")) << " | " << me(change) << " | "
          << me(str(t, "stage").empty() ? "all" : str(t, "stage")) << " | " << fmt(val(t, "a_value", "a_rtf"), dec) << " | "
          << fmt(val(t, "b_value", "b_rtf"), dec) << " | " << fmt(num(t, "delta"), dec) << " | " << me(str(t, "verdict"))
          << " | " << me(str(t, "reason")) << " |\n";
    }
    return o.str();
}

}  // namespace rtf::report
