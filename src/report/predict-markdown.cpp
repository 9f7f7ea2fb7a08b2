// The Markdown view of an `rtf predict` result (schema rtfkit.predict/1, bench/predict.h):
// per stage the floor on the described machine with its terms, the calibration beside it,
// the bottleneck and the hard limits, and the levers that move the bottleneck. The same text
// is what `rtf predict` prints.
#include <cmath>
#include <sstream>

#include "report/escape.h"
#include "report/json-view.h"
#include "report/report.h"

namespace rtf::report {

std::string predict_markdown(const json &doc) {
    std::ostringstream o;
    auto me = [](const std::string &s) { return md_escape(s); };
    const json &hw = at(doc, "hardware");
    const json &p = at(doc, "prediction");
    o << "## rtfkit predict: " << me(str(hw, "title").empty() ? str(hw, "name") : str(hw, "title")) << "\n\n";
    o << "Models: " << me(str(p, "models")) << "; placement " << me(str(p, "placement")) << "; hardware file "
      << me(str(hw, "path")) << ".\n\n";
    const bool cal = !str(p, "calibration").empty();
    o << "| stage | device | type | GB / audio s | GFLOP / audio s | memory | compute | launch | transfer | **floor RTF** | bound |";
    if (cal) o << " floor here | measured here | efficiency | likely RTF |";
    o << "\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|" << (cal ? "---:|---:|---:|---:|" : "") << "\n";
    for (const auto &s : at(p, "stages")) {
        const int th = static_cast<int>(num(s, "threads"));
        o << "| " << me(str(s, "name")) << " | " << me(str(s, "device")) << (th > 0 ? ":" + std::to_string(th) : "") << " | "
          << me(str(s, "weight_type")) << " | " << fmt(num(s, "bytes_per_audio_s") / 1e9, 3) << " | "
          << fmt(num(s, "flops_per_audio_s") / 1e9, 1) << " | " << fmt(num(s, "memory_rtf"), 4) << " | "
          << fmt(num(s, "compute_rtf"), 4) << " | " << fmt(num(s, "launch_rtf"), 4) << " | " << fmt(num(s, "transfer_rtf"), 5)
          << " | **" << fmt(num(s, "floor_rtf"), 4) << "** | " << me(str(s, "bound")) << " |";
        if (cal)
            o << " " << fmt(num(s, "floor_here_rtf"), 4) << " | " << fmt(num(s, "measured_here_rtf"), 3) << " | "
              << fmt(num(s, "efficiency"), 3) << " | " << fmt(num(s, "likely_rtf"), 4) << " |";
        o << "\n";
    }
    std::string order;
    for (const auto &s : at(p, "order")) order += (order.empty() ? "" : ", ") + str(s);
    o << "\nBottleneck: **" << me(str(p, "bottleneck")) << "** (stages by floor, largest first: " << me(order) << ").\n";
    o << "Hard limits: serial RTF **" << fmt(num(p, "serial_rtf"), 4) << "**, overlapped RTF **"
      << fmt(num(p, "overlapped_rtf"), 4) << "** (set by " << me(str(p, "overlapped_binding")) << ").";
    if (std::isfinite(num(p, "prefill_s")))
        o << " LLM prefill of " << str(p, "prefill_tokens") << " prompt tokens: >= " << fmt(num(p, "prefill_s"), 3) << " s.";
    o << "\n";
    if (cal && std::isfinite(num(p, "likely_serial_rtf")))
        o << "Likely (floor / efficiency measured here): serial RTF " << fmt(num(p, "likely_serial_rtf"), 3)
          << ", overlapped RTF " << fmt(num(p, "likely_overlapped_rtf"), 3) << ".\n";
    o << "\n### What changes the bottleneck\n\n";
    const json &lv = at(p, "levers");
    if (!is_nonempty(lv)) o << "Nothing within this hardware: no other device or thread count lowers the bottleneck's floor.\n";
    for (const auto &l : lv) {
        o << "- " << me(str(l, "stage")) << " on " << me(str(l, "from")) << ": floor " << fmt(num(l, "from_rtf"), 4) << " RTF";
        if (std::isfinite(num(l, "from_prefill_s"))) o << ", prefill " << fmt(num(l, "from_prefill_s"), 3) << " s";
        o << " -> on " << me(str(l, "to")) << ": " << fmt(num(l, "to_rtf"), 4) << " RTF";
        if (std::isfinite(num(l, "to_prefill_s"))) o << ", prefill " << fmt(num(l, "to_prefill_s"), 3) << " s";
        o << "; the bottleneck becomes " << me(str(l, "next_bottleneck")) << " (" << fmt(num(l, "next_floor_rtf"), 4) << ")\n";
    }
    o << "\nThe floor is a **bound**: max(bytes / bandwidth, FLOPs / peak, kernels x launch time) + host-link transfer, "
         "from the datasheet figures of the hardware file; no implementation runs the stage faster there.";
    if (cal)
        o << " The likely figure is an **extrapolation**: the floor there divided by the efficiency (floor / measured) "
             "this machine reached on the same stage (" << me(str(p, "calibration"))
          << "); it assumes the stage's kernels reach the same share of the limit on the other machine, which nobody "
             "measured.";
    else
        o << " No calibration: give a measured run here (`--calibrate`) for a likely figure.";
    o << "\n";
    for (const auto &n : at(p, "notes")) o << "\nNote: " << me(str(n));
    if (is_nonempty(at(p, "notes"))) o << "\n";
    return o.str();
}

}  // namespace rtf::report
