// The Markdown view of an `rtf tune` result (schema rtfkit.tune/1, bench/tune.h): the
// descent curve, the changes kept (tuned.json), every trial with its verdict and reason,
// and why it stopped.
#include <sstream>

#include "report/escape.h"
#include "report/json-view.h"
#include "report/report.h"

namespace rtf::report {

std::string tune_markdown(const json &doc) {
    std::ostringstream o;
    auto me = [](const std::string &s) { return md_escape(s); };
    o << "## rtfkit tune\n\n";
    o << "Baseline RTF **" << fmt(num(doc, "base_rtf")) << "**; the kept changes together: x" << fmt(num(doc, "gain"))
      << " (best ~ **" << fmt(num(doc, "best_rtf_estimate")) << "**) — " << me(str(doc, "stop_reason")) << " ("
      << fmt(num(doc, "wall_s"), 0) << " s). Each ratio comes from one interleaved pair; absolute RTFs of trials "
      << "minutes apart drift, so confirm the tuned config with `rtf bench --ab` (>= 5 runs each).\n\n";
    if (at(doc, "fidelity_unverified").is_boolean() && at(doc, "fidelity_unverified").get<bool>()) {
        o << "**Fidelity not verified:** a kept change alters the math (a type, flow steps or CFG); the quality gates "
             "passed, the output was not scored against the baseline's.\n\n";
    }
    o << "### Descent\n\n| step | A (best so far) | B (with the step) | B/A | cumulative | RTF estimate |\n"
         "|---|---:|---:|---:|---:|---:|\n";
    for (const auto &d : at(doc, "descent")) {
        o << "| " << me(str(d, "step")) << " | " << fmt(num(d, "a_rtf")) << " | " << fmt(num(d, "b_rtf")) << " | "
          << fmt(num(d, "ratio")) << " | " << fmt(num(d, "cumulative")) << " | " << fmt(num(d, "rtf_estimate")) << " |\n";
    }
    o << "\n### Kept changes (tuned.json)\n\n";
    const json &ch = at(doc, "changes");
    if (!is_nonempty(ch)) {
        o << "None: no candidate beat the noise floor with its gates passing; the defaults stand.\n";
    } else {
        o << "| knob | value |\n|---|---|\n";
        for (auto it = ch.begin(); it != ch.end(); ++it) o << "| " << me(it.key()) << " | " << me(str(it.value())) << " |\n";
    }
    o << "\n### Trials (top layer first; A = the best so far, B = it plus the change, interleaved)\n\n";
    o << "| # | layer | change | stage | A RTF | B RTF | delta | verdict | reason |\n|---:|---|---|---|---:|---:|---:|---|---|\n";
    for (const auto &t : at(doc, "trials")) {
        o << "| " << str(t, "index") << " | " << me(str(t, "layer_name")) << " | " << me(str(t, "knob") + "=" + str(t, "value"))
          << " | " << me(str(t, "stage").empty() ? "all" : str(t, "stage")) << " | " << fmt(num(t, "a_rtf")) << " | "
          << fmt(num(t, "b_rtf")) << " | " << fmt(num(t, "delta")) << " | " << me(str(t, "verdict")) << " | "
          << me(str(t, "reason")) << " |\n";
    }
    return o.str();
}

}  // namespace rtf::report
