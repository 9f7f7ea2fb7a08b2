#include "tune/tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iterator>
#include <optional>

#include "core/elapsed.h"
#include "core/error.h"
#include "core/parse.h"
#include "speak/family.h"
#include "speak/knobs.h"

namespace rtf::tune {

using namespace bench;  // the protocol this loop drives (A/B runs, knob sets, results)

namespace {

double median_of(const ConfigResult &r, const std::string &metric) {
    for (const auto &[m, s] : r.summary)
        if (m == metric) return s.n > 0 ? s.median : std::numeric_limits<double>::quiet_NaN();
    return std::numeric_limits<double>::quiet_NaN();
}

std::vector<double> values_of(const ConfigResult &r, const std::string &metric) {
    for (const auto &[m, v] : r.values)
        if (m == metric) return v;
    return {};
}

// Share of each stage in a result's time: the leverage order of the next candidates.
double stage_share(const ConfigResult &r, const std::string &stage) {
    if (stage.empty()) return 1.0;  // acts on the whole path
    double sum = 0, mine = 0;
    const std::string prefix = "rtf_stage.";  // llm, tts, t2w; a family kit's gen, decoder
    for (const auto &[m, st] : r.summary) {
        if (m.rfind(prefix, 0) != 0 || st.n == 0 || !std::isfinite(st.median)) continue;
        sum += st.median;
        if (m.compare(prefix.size(), std::string::npos, stage) == 0) mine = st.median;
    }
    return sum > 0 ? mine / sum : 0.0;
}

std::string fmt_fixed(double v, int decimals) {
    char b[32];
    std::snprintf(b, sizeof b, "%.*f", decimals, v);
    return b;
}
std::string fmt3(double v) { return fmt_fixed(v, 3); }

}  // namespace

const std::vector<std::string> &tune_objectives() {
    static const std::vector<std::string> o = {"rtf", "gapless_start_ms", "first_audio_ms"};
    return o;
}

std::string TuneCandidate::label() const {
    std::string s = knob + "=" + value;
    for (const auto &[k, v] : with) s += " + " + k + "=" + v;
    return s;
}

TuneCandidate TuneCandidate::parse(const std::string &text, const std::string &what) {
    // LAYER:KEY=VALUE[+KEY=VALUE...][:STAGE]
    const auto c1 = text.find(':');
    const auto eq = text.find('=', c1 == std::string::npos ? 0 : c1);
    if (c1 == std::string::npos || eq == std::string::npos) {
        throw_usage(what + ": '" + text + "' is not LAYER:KEY=VALUE[:STAGE] (LAYER 0-4 or placement|types|pipeline|runtime|operators)");
    }
    TuneCandidate c;
    const std::string layer = trim(text.substr(0, c1));
    c.layer = -1;
    for (int i = 0; i < kTuneLayerCount; ++i)
        if (layer == kTuneLayers[i] || layer == std::to_string(i)) c.layer = i;
    if (c.layer < 0) throw_usage(what + ": layer '" + layer + "' is not 0-4 or placement|types|pipeline|runtime|operators");
    c.knob = trim(text.substr(c1 + 1, eq - c1 - 1));
    std::string rest = text.substr(eq + 1);
    const auto c2 = rest.rfind(':');
    if (c2 != std::string::npos) {
        c.stage = trim(rest.substr(c2 + 1));
        rest = rest.substr(0, c2);
        if (c.stage != "llm" && c.stage != "tts" && c.stage != "t2w" && c.stage != "gen" && c.stage != "decoder" &&
            !c.stage.empty())
            throw_usage(what + ": stage '" + c.stage + "' is not llm, tts, t2w (MiniCPM-o) or gen, decoder (other families)");
    }
    // more knobs of the same trial: "+KEY=VALUE" (a '+' inside a value stays: the next part
    // must look like KEY=VALUE)
    auto parts = split(rest, '+');
    c.value = trim(parts[0]);
    for (size_t i = 1; i < parts.size(); ++i) {
        const auto e = parts[i].find('=');
        if (e == std::string::npos || trim(parts[i].substr(0, e)).empty()) {
            c.value += "+" + parts[i];  // part of the value
            c.value = trim(c.value);
            continue;
        }
        c.with.emplace_back(trim(parts[i].substr(0, e)), trim(parts[i].substr(e + 1)));
    }
    if (c.knob.empty()) throw_usage(what + ": '" + text + "' has an empty knob name");
    return c;
}

void TuneConfig::validate() const {
    pc.validate();
    if (pc.runs < ProtocolConfig::kMinRuns) {
        throw_usage("--runs: a tuner trial needs >= " + std::to_string(ProtocolConfig::kMinRuns) + " runs per side, got " +
                    std::to_string(pc.runs));
    }
    if (!(budget_s > 0)) throw_usage("--budget: must be > 0");
    if (!(target_rtf >= 0)) throw_usage("--target-rtf: must be >= 0 (0 = no target)");
    const auto &objs = tune_objectives();
    if (std::find(objs.begin(), objs.end(), objective) == objs.end()) {
        throw_usage("--objective: '" + objective + "' is not rtf, gapless_start_ms or first_audio_ms");
    }
    if (!(objective_noise_ms >= 0)) throw_usage("--objective-noise-ms: must be >= 0");
}

namespace {

// One interleaved pair judged for the objective `obj` (lower is better): its medians, and a
// verdict — "kept" (B beyond the noise floor, and significant when a test is possible),
// "slower", "within noise", "not significant", "failed" (A not VALID) or "failed gate" (B
// not VALID) — with its reason. A trial and the confirmation pair read the same judgement.
struct PairJudgement {
    double a_rtf, b_rtf, a_value, b_value, delta;
    std::string verdict, reason;
};

PairJudgement judge_pair(const AbResult &ab, const std::string &obj, double noise) {
    PairJudgement j;
    j.a_rtf = median_of(ab.a, "rtf");
    j.b_rtf = median_of(ab.b, "rtf");
    j.a_value = median_of(ab.a, obj);
    j.b_value = median_of(ab.b, obj);
    j.delta = j.b_value - j.a_value;
    const bool ms = obj != "rtf";
    auto fmt_obj = [&](double v) { return ms ? fmt_fixed(v, 0) + " ms" : fmt3(v); };
    const std::string obj_name = ms ? obj : "RTF";
    const auto test = mann_whitney_u(values_of(ab.a, obj), values_of(ab.b, obj));
    if (!ab.a.verdict.valid) {
        j.verdict = "failed";
        j.reason = "the current best did not give a VALID result: " +
                   (ab.a.verdict.reasons.empty() ? std::string("?") : ab.a.verdict.reasons.front());
    } else if (!ab.b.verdict.valid) {
        j.verdict = "failed gate";
        j.reason = ab.b.verdict.reasons.empty() ? "INVALID" : ab.b.verdict.reasons.front();
    } else if (!std::isfinite(j.delta) || j.delta >= noise) {
        j.verdict = "slower";
        j.reason = "median " + obj_name + " " + fmt_obj(j.a_value) + " -> " + fmt_obj(j.b_value) +
                   (std::isfinite(j.delta) ? "" : " (not measured: " + obj + " missing from a side's runs)");
    } else if (j.delta > -noise) {
        j.verdict = "within noise";
        j.reason = "|delta| " + fmt_obj(std::fabs(j.delta)) + " < noise " + fmt_obj(noise);
    } else if (test.possible && !test.significant) {
        j.verdict = "not significant";
        j.reason = test.note;
    } else {
        j.verdict = "kept";
        j.reason = "median " + obj_name + " " + fmt_obj(j.a_value) + " -> " + fmt_obj(j.b_value) +
                   (ms ? " (RTF " + fmt3(j.a_rtf) + " -> " + fmt3(j.b_rtf) + ")" : "") +
                   (test.possible ? " (" + test.note + ")" : " (beyond the noise floor; too few runs for a test)");
    }
    return j;
}

// The confirmation pair (TuneConfig::confirm): the starting knobs (A) against the tuned ones
// (B), interleaved, judged as a trial is. Not confirmed: the kept changes move to
// r.unconfirmed and the result is the starting knobs again.
template <class Say>
void confirm(const WorkloadInfo &info, const TuneConfig &cfg, std::chrono::steady_clock::time_point t0, double trial_cost_s,
             const Say &say, TuneResult &r) {
    auto &c = r.confirmation;
    const double spent = ms_since(t0) / 1000.0;
    if (spent + trial_cost_s > cfg.budget_s) {
        c.verdict = "skipped (budget)";
        c.reason = "no budget left for the confirmation pair: the kept changes stand on their trials alone";
        say("confirmation: " + c.verdict);
        return;
    }
    say("confirmation: the starting knobs vs the tuned ones (" + knobs_label(r.changes) + ") ...");
    const auto tt = std::chrono::steady_clock::now();
    bool ok = false;
    try {
        const PairJudgement j = judge_pair(run_ab(info, Knobs{}, r.base, r.best, cfg.pc, nullptr), cfg.objective, cfg.noise());
        c.a_rtf = j.a_rtf;
        c.b_rtf = j.b_rtf;
        c.a_value = j.a_value;
        c.b_value = j.b_value;
        ok = j.verdict == "kept";
        c.reason = ok ? j.reason : j.verdict + ": " + j.reason;
    } catch (const std::exception &e) {
        c.reason = std::string("the pair failed: ") + e.what();
    }
    c.wall_s = ms_since(tt) / 1000.0;
    c.verdict = ok ? "confirmed" : "not confirmed";
    say("  " + c.verdict + ": " + c.reason);
    if (ok) return;
    r.unconfirmed = r.changes;
    r.changes.clear();
    r.best = r.base;
    r.gain = r.rtf_gain = 1.0;
    r.best_rtf = std::isfinite(c.a_rtf) ? c.a_rtf : r.base_rtf;
    r.best_value = std::isfinite(c.a_value) ? c.a_value : r.base_value;
    r.fidelity_unverified = false;
}

}  // namespace

TuneResult tune(const WorkloadInfo &info, const Knobs &base, std::vector<TuneCandidate> candidates, const TuneConfig &cfg,
                const TuneProgress &progress) {
    cfg.validate();
    const auto t0 = std::chrono::steady_clock::now();
    auto say = [&](const std::string &l) {
        if (progress) progress(l);
    };
    TuneResult r;
    r.objective = cfg.objective;
    r.base = r.best = base;
    const std::string &obj = cfg.objective;
    const double noise = cfg.noise();
    ConfigResult best_result;  // the latest measurement of the current best (its A side)
    bool have_best = false;
    double trial_cost_s = 0;   // the largest trial so far: the estimate of the next
    int index = 0;
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const TuneCandidate &a, const TuneCandidate &b) { return a.layer < b.layer; });

    for (int layer = 0; layer < kTuneLayerCount; ++layer) {
        std::vector<TuneCandidate> todo;
        for (const auto &c : candidates)
            if (c.layer == layer) todo.push_back(c);
        while (!todo.empty()) {
            // leverage order: the candidate whose stage takes the largest share of the best's time
            if (have_best) {
                std::stable_sort(todo.begin(), todo.end(), [&](const TuneCandidate &a, const TuneCandidate &b) {
                    return stage_share(best_result, a.stage) > stage_share(best_result, b.stage);
                });
            }
            TuneCandidate c = todo.front();
            todo.erase(todo.begin());
            auto unchanged = [&](const std::string &k, const std::string &v) {
                const std::string *cur = knob_value(r.best, k);
                return cur && *cur == v;
            };
            bool same = unchanged(c.knob, c.value);
            for (const auto &[k, v] : c.with) same = same && unchanged(k, v);
            if (same) continue;  // no change
            TuneTrial t;
            t.index = index++;
            t.cand = c;
            const std::string name = std::string(kTuneLayers[c.layer]) + " " + c.label();
            const double spent = ms_since(t0) / 1000.0;
            if (c.changes_math && !cfg.allow_math) {
                t.verdict = "skipped (changes the math)";
                t.reason = "changes the output: needs --allow-math-changes";
            } else if (cfg.target_rtf > 0 && std::isfinite(r.best_rtf) && r.best_rtf <= cfg.target_rtf) {
                t.verdict = "skipped (target reached)";
                t.reason = "best RTF " + fmt3(r.best_rtf) + " <= target " + fmt3(cfg.target_rtf);
            } else if (spent + trial_cost_s > cfg.budget_s) {
                t.verdict = "skipped (budget)";
                char b[128];
                std::snprintf(b, sizeof b, "a trial costs ~%.0f s, %.0f s of the %.0f s budget left", trial_cost_s,
                              std::max(0.0, cfg.budget_s - spent), cfg.budget_s);
                t.reason = b;
            } else {
                say("trial " + std::to_string(t.index + 1) + ": " + name + " vs the current best ...");
                const auto tt = std::chrono::steady_clock::now();
                try {
                    Knobs b = r.best;
                    set_knob(b, c.knob, c.value);
                    for (const auto &[k, v] : c.with) set_knob(b, k, v);
                    AbResult ab = run_ab(info, Knobs{}, r.best, b, cfg.pc, nullptr);
                    const PairJudgement j = judge_pair(ab, obj, noise);
                    t.a_rtf = j.a_rtf;
                    t.b_rtf = j.b_rtf;
                    t.a_value = j.a_value;
                    t.b_value = j.b_value;
                    t.delta = j.delta;
                    if (!have_best) {
                        r.base_rtf = r.best_rtf = t.a_rtf;
                        r.base_value = r.best_value = t.a_value;
                        r.descent.push_back({"baseline", t.a_value, t.a_value, 1.0, 1.0, t.a_rtf, t.a_rtf});
                    } else {
                        r.best_rtf = t.a_rtf;  // re-measured in this pair: drift hits both alike
                        r.best_value = t.a_value;
                    }
                    best_result = ab.a;
                    have_best = true;
                    t.verdict = j.verdict;
                    t.reason = j.reason;
                    if (j.verdict == "kept") {
                        r.best = b;
                        set_knob(r.changes, c.knob, c.value);
                        for (const auto &[k, v] : c.with) set_knob(r.changes, k, v);
                        r.best_rtf = t.b_rtf;
                        r.best_value = t.b_value;
                        best_result = ab.b;
                        r.gain *= t.b_value / t.a_value;
                        r.rtf_gain *= t.b_rtf / t.a_rtf;
                        r.descent.push_back({c.label(), t.a_value, t.b_value, t.b_value / t.a_value, r.gain, t.a_rtf, t.b_rtf});
                        if (c.changes_math) r.fidelity_unverified = true;
                    }
                } catch (const std::exception &e) {
                    t.verdict = "failed";
                    t.reason = e.what();
                }
                t.wall_s = ms_since(tt) / 1000.0;
                trial_cost_s = std::max(trial_cost_s, t.wall_s);
                say("  " + t.verdict + ": " + t.reason);
            }
            r.trials.push_back(t);
        }
    }
    if (cfg.confirm && !r.changes.empty()) confirm(info, cfg, t0, trial_cost_s, say, r);
    r.wall_s = ms_since(t0) / 1000.0;
    if (!r.unconfirmed.empty()) {
        r.stop_reason = "the kept changes were not confirmed by the final A/B: none kept";
    } else if (cfg.target_rtf > 0 && std::isfinite(r.best_rtf) && r.best_rtf <= cfg.target_rtf) {
        r.stop_reason = "target reached (" + fmt3(r.best_rtf) + " <= " + fmt3(cfg.target_rtf) + ")";
    } else {
        bool budget = false;
        for (const auto &t : r.trials) budget |= t.verdict == "skipped (budget)";
        r.stop_reason = budget ? "budget spent (trials skipped)" : "no candidate left";
    }
    return r;
}

std::vector<TuneCandidate> speak_candidates(const Knobs &base, int n_cpus, const std::string &family) {
    const bool other_family = family != "minicpmo45";
    // Every candidate comes from the knob table's facts (KnobFacts::tune_layer, tune_values):
    // a knob is tuned iff its row says so; the symbolic values are resolved for this machine.
    auto resolve = [n_cpus](const std::string &v) -> std::optional<std::string> {
        if (v == "cpus/2") return std::to_string(std::max(1, n_cpus / 2));
        if (v == "first-cpu") return n_cpus >= 2 ? std::optional<std::string>("0") : std::nullopt;  // a CPU of its own
        if (v == "last-cpu") return n_cpus >= 2 ? std::optional<std::string>(std::to_string(n_cpus - 1)) : std::nullopt;
        return v;
    };
    std::vector<TuneCandidate> v;
    for (int layer = 0; layer < static_cast<int>(std::size(kTuneLayers)); ++layer) {
        for (const auto &k : speak::knob_table()) {
            if (k.facts.tune_layer != layer) continue;
            if (other_family ? !speak::family_reads_knob(k.name) : k.group == "family") continue;
            for (const auto &sym : k.facts.tune_values) {
                const auto value = resolve(sym);
                if (!value) continue;
                if (k.facts.runnable && !k.facts.runnable(*value)) continue;  // e.g. bf16 vocoder without oneDNN
                if (const std::string *cur = knob_value(base, k.name); cur && *cur == *value) continue;
                bool dup = false;  // e.g. n_cpus / 2 == 1 on 2 CPUs
                for (const auto &c : v) dup = dup || (c.knob == k.name && c.value == *value);
                if (dup) continue;
                std::string stage = k.facts.stage == "pipeline" || k.facts.stage == "run" ? "" : k.facts.stage;
                if (other_family && !stage.empty()) stage = stage == "tts" ? "gen" : "decoder";  // family.h's stages
                bool math = k.changes_math;
                for (const auto &[wk, wv] : k.facts.tune_with) {
                    const auto *wd = speak::find_knob(wk);
                    math = math || (wd && wd->changes_math);
                }
                v.push_back({layer, k.name, *value, stage, math, k.facts.tune_with});
            }
        }
    }
    return v;
}

namespace {
nlohmann::json with_json(const TuneCandidate &c) {
    nlohmann::json w = nlohmann::json::object();
    for (const auto &[k, v] : c.with) w[k] = v;
    return w;
}
}  // namespace

nlohmann::json to_json(const TuneResult &r) {
    auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    nlohmann::json trials = nlohmann::json::array();
    for (const auto &t : r.trials) {
        trials.push_back({{"index", t.index},
                          {"layer", t.cand.layer},
                          {"layer_name", kTuneLayers[t.cand.layer]},
                          {"knob", t.cand.knob},
                          {"value", t.cand.value},
                          {"with", with_json(t.cand)},
                          {"change", t.cand.label()},
                          {"stage", t.cand.stage},
                          {"changes_math", t.cand.changes_math},
                          {"a_rtf", num(t.a_rtf)},
                          {"b_rtf", num(t.b_rtf)},
                          {"a_value", num(t.a_value)},
                          {"b_value", num(t.b_value)},
                          {"delta", num(t.delta)},
                          {"wall_s", t.wall_s},
                          {"verdict", t.verdict},
                          {"reason", t.reason}});
    }
    nlohmann::json descent = nlohmann::json::array();
    for (const auto &d : r.descent) {
        descent.push_back({{"step", d.step},
                           {"a_value", num(d.a_value)},
                           {"b_value", num(d.b_value)},
                           {"ratio", num(d.ratio)},
                           {"cumulative", num(d.cumulative)},
                           {"estimate", num(r.base_value * d.cumulative)},
                           {"a_rtf", num(d.a_rtf)},
                           {"b_rtf", num(d.b_rtf)}});
    }
    return {{"schema", "rtfkit.tune/1"},
            {"objective", r.objective},
            {"base_knobs", knobs_json(r.base)},
            {"best_knobs", knobs_json(r.best)},
            {"changes", knobs_json(r.changes)},
            {"base_rtf", num(r.base_rtf)},
            {"best_rtf", num(r.best_rtf)},
            {"base_value", num(r.base_value)},
            {"best_value", num(r.best_value)},
            {"gain", num(r.gain)},
            {"best_value_estimate", num(r.base_value * r.gain)},
            {"rtf_gain", num(r.rtf_gain)},
            {"best_rtf_estimate", num(r.base_rtf * r.rtf_gain)},
            {"descent", descent},
            {"trials", trials},
            {"confirmation",
             {{"verdict", r.confirmation.verdict},
              {"reason", r.confirmation.reason},
              {"a_value", num(r.confirmation.a_value)},
              {"b_value", num(r.confirmation.b_value)},
              {"a_rtf", num(r.confirmation.a_rtf)},
              {"b_rtf", num(r.confirmation.b_rtf)},
              {"wall_s", r.confirmation.wall_s}}},
            {"unconfirmed_changes", knobs_json(r.unconfirmed)},
            {"stop_reason", r.stop_reason},
            {"fidelity_unverified", r.fidelity_unverified},
            {"wall_s", r.wall_s}};
}

nlohmann::json tuned_config(const TuneResult &r) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto &[k, v] : r.changes) j[k] = v;
    return j;
}

}  // namespace rtf::tune
