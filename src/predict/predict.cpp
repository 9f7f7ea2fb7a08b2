#include "predict/predict.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/format.h"
#include "core/parse.h"

namespace rtf::predict {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double part(const StageCost &c, const std::string &name) {
    for (const auto &[k, v] : c.parts)
        if (k == name) return v;
    return 0;
}

// The per-unit costs of one predicted stage (t2w split into t2m / voc by its parts).
struct Cost {
    std::string stage, weight_type;
    double units = 0, bytes = 0, flops = 0, kernels = 0;  // per unit
    double weight_bytes = 0, weight_flops = 0;            // LLM: what a prefill pass costs per token
};

std::vector<Cost> split_costs(const ModelCosts &mc) {
    std::vector<Cost> out;
    for (const auto &c : mc.stages) {
        if (c.stage == "t2w") {
            const double mel_b = part(c, "token2mel_bytes"), voc_b = part(c, "vocoder_bytes");
            out.push_back({"t2m", c.weight_type, c.units_per_audio_s, mel_b, part(c, "token2mel_flops"),
                           part(c, "token2mel_kernels"), 0, 0});
            out.push_back({"voc", c.weight_type, c.units_per_audio_s, voc_b, part(c, "vocoder_flops"),
                           part(c, "vocoder_kernels"), 0, 0});
        } else {
            out.push_back({c.stage, c.weight_type, c.units_per_audio_s, c.bytes_per_unit, c.flops_per_unit, part(c, "kernels"),
                           part(c, "weight_bytes"), part(c, "weight_flops")});
        }
    }
    return out;
}

// Bytes per second of audio that enter `stage` from the stage before it (docs/minicpmo45.md §1.3,
// §3): LLM hidden rows (F32) per text token, 25 codes (int32), 50 mel frames x 80 (F32).
double input_bytes(const std::string &stage, const ModelCosts &mc, const FloorAssumptions &a) {
    if (stage == "tts") {
        for (const auto &c : mc.stages)
            if (c.stage == "llm") return a.text_tokens_per_s * (part(c, "hidden_row_bytes") + 4);
        return 0;
    }
    if (stage == "t2m") return a.audio_tokens_per_s * 4;
    if (stage == "voc") return 50.0 * 80 * 4;
    return 0;
}
constexpr double kPcmBytesPerS = 24000.0 * 4;  // the vocoder's F32 PCM back to the host

double link_gb_s(const DeviceSpec &a, const DeviceSpec &b) {
    double l = std::numeric_limits<double>::infinity();
    if (!a.is_cpu()) l = std::min(l, a.host_link_gb_s.value);
    if (!b.is_cpu()) l = std::min(l, b.host_link_gb_s.value);
    return l;
}

StagePrediction place(const Cost &c, const DeviceSpec &d, int threads) {
    StagePrediction s;
    s.stage = c.stage;
    s.device = d.name;
    s.threads = d.is_cpu() ? threads : 0;
    s.weight_type = c.weight_type;
    s.bytes_per_audio_s = c.bytes * c.units;
    s.flops_per_audio_s = c.flops * c.units;
    s.kernels_per_audio_s = c.kernels * c.units;
    s.memory_rtf = s.bytes_per_audio_s / (d.memory_gb_s.value * 1e9);
    s.compute_rtf = s.flops_per_audio_s / (d.gflops_for(c.weight_type, threads, &s.rate_fallback) * 1e9);
    s.launch_rtf = s.kernels_per_audio_s * d.kernel_launch_us.value * 1e-6;
    const double m = std::max({s.memory_rtf, s.compute_rtf, s.launch_rtf});
    s.bound = m == s.memory_rtf ? "memory" : m == s.compute_rtf ? "compute" : "launch";
    s.floor_rtf = m;
    s.floor_here = s.measured_here = s.efficiency = s.likely_rtf = kNaN;
    return s;
}

double prefill_seconds(const Cost &c, const DeviceSpec &d, int threads, int tokens) {
    const double mem = c.weight_bytes / (d.memory_gb_s.value * 1e9);
    const double comp = tokens * c.weight_flops / (d.gflops_for(c.weight_type, threads) * 1e9);
    const double launch = c.kernels * d.kernel_launch_us.value * 1e-6;
    return std::max({mem, comp, launch});
}

std::string where(const Placed &p) { return p.threads > 0 ? p.device + ":" + std::to_string(p.threads) : p.device; }

// The prediction without levers.
Prediction evaluate(const ModelCosts &mc, const Hardware &hw, const Placement &pl, const FloorAssumptions &a) {
    Prediction p;
    p.hardware = hw.name;
    p.models = mc.dir;
    p.placement = pl;
    p.prefill_s = kNaN;
    p.prefill_tokens = a.llm_kv_tokens;
    p.likely_serial_rtf = p.likely_overlapped_rtf = kNaN;
    const DeviceSpec *prev = nullptr;
    std::map<std::string, double> dev_bytes, dev_compute;
    for (const auto &c : split_costs(mc)) {
        const Placed &at = pl.at(c.stage);
        const DeviceSpec &d = hw.device(at.device, "placement " + c.stage);
        StagePrediction s = place(c, d, at.threads);
        // The hand-off into this stage crosses the host link when the previous stage is elsewhere.
        const double in = input_bytes(c.stage, mc, a);
        if (prev && prev->name != d.name) s.link_bytes_per_audio_s += in;
        if (c.stage == "voc" && !d.is_cpu()) s.link_bytes_per_audio_s += kPcmBytesPerS;
        if (s.link_bytes_per_audio_s > 0) {
            const double l = link_gb_s(prev && prev->name != d.name ? *prev : d, d);
            if (std::isfinite(l)) s.transfer_rtf = s.link_bytes_per_audio_s / (l * 1e9);
        }
        s.floor_rtf += s.transfer_rtf;
        if (c.stage == "llm") p.prefill_s = prefill_seconds(c, d, at.threads, a.llm_kv_tokens);
        dev_bytes[d.name] += s.bytes_per_audio_s / (d.memory_gb_s.value * 1e9);
        dev_compute[d.name] += s.flops_per_audio_s / (d.gflops_for(c.weight_type, d.max_threads()) * 1e9);
        p.serial_rtf += s.floor_rtf;
        p.stages.push_back(s);
        prev = &d;
    }
    double worst = 0;
    for (const auto &s : p.stages)
        if (s.floor_rtf >= worst) worst = s.floor_rtf;
    p.overlapped_rtf = worst;
    p.overlapped_binding = "the floor of the slowest stage";
    for (const auto &[dev, v] : dev_bytes)
        if (v > p.overlapped_rtf) {
            p.overlapped_rtf = v;
            p.overlapped_binding = "the memory bus of the " + dev + " (the bytes of its stages together)";
        }
    for (const auto &[dev, v] : dev_compute)
        if (v > p.overlapped_rtf) {
            p.overlapped_rtf = v;
            p.overlapped_binding = "the cores of the " + dev + " (the FLOPs of its stages together)";
        }
    std::vector<const StagePrediction *> by_floor;
    for (const auto &s : p.stages) by_floor.push_back(&s);
    std::stable_sort(by_floor.begin(), by_floor.end(), [](auto *x, auto *y) { return x->floor_rtf > y->floor_rtf; });
    for (auto *s : by_floor) p.order.push_back(s->stage);
    return p;
}

const StagePrediction &stage_of(const Prediction &p, const std::string &s) {
    for (const auto &x : p.stages)
        if (x.stage == s) return x;
    throw_runtime("predict: no stage " + s);
}

}  // namespace

Placement parse_placement(const std::string &overrides, const Hardware &hw, const std::string &what) {
    std::map<std::string, std::string> spec = hw.placement;
    if (!trim(overrides).empty())
        for (const auto &[k, v] : parse_key_values(overrides, what)) {
            if (k == "t2w") {
                spec["t2m"] = v;
                spec["voc"] = v;
            } else {
                spec[k] = v;
            }
        }
    Placement p;
    const auto &all = predict_stages();
    for (const auto &[stage, text] : spec) {
        if (std::find(all.begin(), all.end(), stage) == all.end())
            throw_usage(what + ": '" + stage + "' is not a stage (llm, tts, t2m, voc; t2w = t2m and voc)");
        const std::string at = what + " " + stage;
        const auto colon = text.find(':');
        Placed pl;
        pl.device = trim(text.substr(0, colon));
        const DeviceSpec &d = hw.device(pl.device, at);
        if (std::find(d.cannot_run.begin(), d.cannot_run.end(), stage) != d.cannot_run.end())
            throw_usage(at + ": the " + d.name + " cannot run " + stage + " (" + d.cannot_run_source + ")");
        if (colon != std::string::npos) {
            if (!d.is_cpu()) throw_usage(at + ": threads apply to a CPU only ('" + text + "')");
            pl.threads = static_cast<int>(parse_int(text.substr(colon + 1), at + " threads", 1, d.max_threads()));
        } else if (d.is_cpu()) {
            pl.threads = d.max_threads();
        }
        p[stage] = pl;
    }
    for (const auto &s : all)
        if (!p.count(s)) throw_usage(what + ": stage " + s + " is not placed (give " + s + "=DEVICE; " + hw.name +
                                     " has no default for it)");
    return p;
}

std::string placement_text(const Placement &p) {
    std::string t;
    for (const auto &s : predict_stages())
        if (auto it = p.find(s); it != p.end()) t += (t.empty() ? "" : ",") + s + "=" + where(it->second);
    return t;
}

Prediction predict(const ModelCosts &costs, const Hardware &hw, const Placement &placement, const FloorAssumptions &a) {
    a.validate();
    Prediction p = evaluate(costs, hw, placement, a);
    for (const auto &s : p.stages)
        if (s.rate_fallback)
            p.notes.push_back(s.stage + ": the " + s.device + " lists no " + s.weight_type +
                              " rate; its fastest listed rate was used (the floor stays a bound)");
    // Levers: fix the bottleneck, see which stage binds next.
    Placement cur = placement;
    Prediction now = p;
    for (size_t step = 0; step < predict_stages().size(); ++step) {
        const std::string b = now.order.front();
        const StagePrediction &bs = stage_of(now, b);
        Placement best;
        double best_floor = bs.floor_rtf;
        for (const auto &d : hw.devices) {
            if (std::find(d.cannot_run.begin(), d.cannot_run.end(), b) != d.cannot_run.end()) continue;
            Placed to{d.name, d.is_cpu() ? d.max_threads() : 0};
            if (to.device == cur.at(b).device && to.threads == cur.at(b).threads) continue;
            Placement trial = cur;
            trial[b] = to;
            const double f = stage_of(evaluate(costs, hw, trial, a), b).floor_rtf;
            if (f < best_floor * 0.999) {
                best_floor = f;
                best = trial;
            }
        }
        if (best.empty()) break;
        Prediction next = evaluate(costs, hw, best, a);
        Lever l;
        l.stage = b;
        l.from = where(cur.at(b));
        l.to = where(best.at(b));
        l.from_rtf = bs.floor_rtf;
        l.to_rtf = best_floor;
        l.from_prefill_s = b == "llm" ? now.prefill_s : kNaN;
        l.to_prefill_s = b == "llm" ? next.prefill_s : kNaN;
        l.next_bottleneck = next.order.front();
        l.next_floor_rtf = stage_of(next, l.next_bottleneck).floor_rtf;
        p.levers.push_back(l);
        cur = best;
        now = next;
        if (l.next_bottleneck == b) break;  // the moved stage still binds: nothing else to fix first
    }
    return p;
}

std::map<std::string, double> measured_stage_rtfs(const nlohmann::json &metrics) {
    std::map<std::string, double> m;
    auto num = [&](const std::string &k) -> double {
        auto it = metrics.find(k);
        return it != metrics.end() && it->is_number() ? it->get<double>() : kNaN;
    };
    for (const char *s : {"llm", "tts"})
        if (double v = num(std::string("rtf_stage.") + s); std::isfinite(v)) m[s] = v;
    // Token2Wav: milliseconds per 1-s window = RTF x 1000.
    for (const auto &[stage, key] : {std::pair{"t2m", "t2w.token2mel_ms"}, std::pair{"voc", "t2w.vocoder_ms"}}) {
        double v = num(std::string(key) + ".p50");
        if (!std::isfinite(v)) v = num(std::string(key) + ".mean");
        if (!std::isfinite(v)) v = num(key);
        if (std::isfinite(v) && v > 0) m[stage] = v / 1000.0;
    }
    return m;
}

void calibrate(Prediction &target, const Prediction &here, const std::map<std::string, double> &measured,
               const std::string &from) {
    target.calibration = from;
    double serial = 0, worst = 0;
    bool all = true;
    for (auto &s : target.stages) {
        auto m = measured.find(s.stage);
        const StagePrediction *h = nullptr;
        for (const auto &x : here.stages)
            if (x.stage == s.stage) h = &x;
        if (m == measured.end() || !h || !(m->second > 0)) {
            all = false;
            continue;
        }
        s.floor_here = h->floor_rtf;
        s.measured_here = m->second;
        s.efficiency = h->floor_rtf / m->second;
        s.likely_rtf = s.floor_rtf / s.efficiency;
        serial += s.likely_rtf;
        worst = std::max(worst, s.likely_rtf);
    }
    if (all && !target.stages.empty()) {
        target.likely_serial_rtf = serial;
        target.likely_overlapped_rtf = worst;
    }
}

nlohmann::json to_json(const Prediction &p) {
    auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    auto st = nlohmann::json::array();
    for (const auto &s : p.stages)
        st.push_back({{"name", s.stage},
                      {"device", s.device},
                      {"threads", s.threads},
                      {"weight_type", s.weight_type},
                      {"bytes_per_audio_s", s.bytes_per_audio_s},
                      {"flops_per_audio_s", s.flops_per_audio_s},
                      {"kernels_per_audio_s", s.kernels_per_audio_s},
                      {"link_bytes_per_audio_s", s.link_bytes_per_audio_s},
                      {"memory_rtf", num(s.memory_rtf)},
                      {"compute_rtf", num(s.compute_rtf)},
                      {"launch_rtf", num(s.launch_rtf)},
                      {"transfer_rtf", num(s.transfer_rtf)},
                      {"floor_rtf", num(s.floor_rtf)},
                      {"bound", s.bound},
                      {"rate_fallback", s.rate_fallback},
                      {"floor_here_rtf", num(s.floor_here)},
                      {"measured_here_rtf", num(s.measured_here)},
                      {"efficiency", num(s.efficiency)},
                      {"likely_rtf", num(s.likely_rtf)}});
    auto lv = nlohmann::json::array();
    for (const auto &l : p.levers)
        lv.push_back({{"stage", l.stage},
                      {"from", l.from},
                      {"to", l.to},
                      {"from_rtf", num(l.from_rtf)},
                      {"to_rtf", num(l.to_rtf)},
                      {"from_prefill_s", num(l.from_prefill_s)},
                      {"to_prefill_s", num(l.to_prefill_s)},
                      {"next_bottleneck", l.next_bottleneck},
                      {"next_floor_rtf", num(l.next_floor_rtf)}});
    return {{"hardware", p.hardware},
            {"models", p.models},
            {"placement", placement_text(p.placement)},
            {"stages", st},
            {"bottleneck", p.order.empty() ? "" : p.order.front()},
            {"order", p.order},
            {"serial_rtf", num(p.serial_rtf)},
            {"overlapped_rtf", num(p.overlapped_rtf)},
            {"overlapped_binding", p.overlapped_binding},
            {"prefill_s", num(p.prefill_s)},
            {"prefill_tokens", p.prefill_tokens},
            {"levers", lv},
            {"calibration", p.calibration},
            {"likely_serial_rtf", num(p.likely_serial_rtf)},
            {"likely_overlapped_rtf", num(p.likely_overlapped_rtf)},
            {"notes", p.notes}};
}

}  // namespace rtf::predict
