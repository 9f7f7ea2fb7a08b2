#include "speak/machine-profile.h"

#include <cstdlib>
#include <sstream>

#include "core/error.h"
#include "models/t2w/onednn-linear.h"
#include "speak/duplex-knobs.h"
#include "speak/knobs.h"

namespace rtf::speak {

namespace {

// Whether `value` of `knob` changes the output: a math-changing knob (knobs.h) set to
// anything but the reference's default.
bool changes_math(const std::string &knob, const std::string &value) {
    if (const KnobDef *k = find_knob(knob)) return k->changes_math && k->get(default_config()) != value;
    if (const DuplexKnobDef *d = find_duplex_knob(knob)) return d->changes_math && d->get(DuplexConfig{}) != value;
    return false;
}

ProfileChoice choice(const std::string &knob, const std::string &value, const std::string &evidence,
                     const std::string &fidelity = "") {
    return {knob, value, changes_math(knob, value), evidence, fidelity};
}

}  // namespace

bool onednn_available() { return t2w::onednn::available(); }

ProfileMode parse_profile_mode(const std::string &v, const std::string &flag) {
    if (v == "auto") return ProfileMode::automatic;
    if (v == "exact") return ProfileMode::exact;
    if (v == "none") return ProfileMode::none;
    throw_usage(flag + " '" + v + "' is not one of: auto (this CPU's verified defaults, or this machine's tuned "
                "result), exact (the reference math: only choices that keep the output), none (plain defaults)");
}

std::string default_profile_mode() {
    const char *e = std::getenv("RTF_PROFILE");
    return e && *e ? e : "auto";
}

std::string to_string(ProfileMode m) {
    switch (m) {
        case ProfileMode::automatic: return "auto";
        case ProfileMode::exact: return "exact";
        case ProfileMode::none: return "none";
    }
    return "?";
}

// The built-in table. Every row names the measurement that put it there and the CPU it was
// measured on; a CPU class without a verified choice gets none (the plain defaults).
std::vector<ProfileChoice> builtin_choices(const CpuFeatures &cpu, bool onednn) {
    std::vector<ProfileChoice> c;
    const std::string isa = cpu.isa_class();
    if (isa == "avx512-bf16") {
        // AVX512-BF16 without AMX (AMD EPYC Zen 4): VDPBF16PS at twice the f32 FMA rate.
        c.push_back(choice("t2w-type-t2m", "bf16",
                           "AMD EPYC Zen 4, 2 cores: Token2Wav RTF 0.398 with the bf16 vocoder vs 0.604 at f32 "
                           "(5 interleaved runs, docs/measurements.md §21; first measured in §5.6, §6)",
                           "token2mel mel SNR 48.4 dB vs f32 (line: >= 40 dB); twin weights: twin-only evidence"));
        c.push_back(choice("tts-weight-type", "q8_0",
                           "AMD EPYC Zen 4, 2 cores: demo with q8_0 LM weights rtf 1.109/1.131 vs 1.158/1.164, "
                           "gapless_start_ms 2680/2777 vs 2929/2900 (docs/measurements.md §13)",
                           "TTS code distribution KL 0.00074 nats mean, top-1 100 % teacher-forced vs F16 (lines: <= 0.01, "
                           ">= 98 %; TtsGolden.C8); twin weights: twin-only evidence"));
        // The vocoder's convolutions in bf16 on oneDNN (onednn-conv.h): only in a build with it.
        if (onednn)
            c.push_back(choice("t2w-type-voc", "bf16",
                               "AMD EPYC Zen 4, 2 cores: vocoder 91 vs 156 ms per window, Token2Wav RTF 0.569 with bf16 "
                               "token2mel vs 0.647 (docs/measurements.md §14)",
                               "vocoder PCM SNR 36.1 dB vs the f32 vocoder on the same mel (line: >= 30 dB; mel "
                               "unchanged); twin weights: twin-only evidence"));
        // The duplex audio encoder (a duplex knob only: rtf speak shows it as not here).
        c.push_back(choice("apm-weight-type", "bf16",
                           "AMD EPYC Zen 4, 1 thread: audio encoder 269 vs 317 ms per 1 s frame (medians of 3 interleaved "
                           "runs; docs/measurements.md §18)",
                           "audio embeddings SNR 45.2 dB vs the F16 file (line: >= 40 dB); twin weights: twin-only evidence"));
        // Not here: llm-weight-type=q8_0. On the twin it misses the top-1 line (92.3 % at KL
        // 0.0078, `rtf lm-fidelity`) and the demo, which speaks a text, does not move with it
        // (rtf 0.832 vs 0.821, within noise: docs/measurements.md §15).
        // Not here: --first-audio-priority. It cuts first audio (2488 -> 1828 ms) but the
        // listener waits longer for gap-free playback (gapless_start_ms 2929 -> 3105 ms, §13).
    } else if (isa == "avx2") {
        // AVX2 + FMA, no AVX-512 (AMD EPYC Zen 3): our packed GEMM, direct conv and fused
        // attention have AVX2 kernels (the same bits as the AVX-512 ones), so the reference math
        // is the fastest token2mel type here too. (Before them, ggml's F16 products beat its
        // F32 ones and this row chose f16 token2mel: §24.) No bf16 in oneDNN on AVX2.
        c.push_back(choice("t2w-type-t2m", "f32",
                           "AMD EPYC Zen 3 (AVX2), 2 cores: Token2Wav RTF 1.252 at f32 on our AVX2 kernels vs 1.383 "
                           "with f16 token2mel (ggml's F16 products) and 1.588 / 1.856 before the AVX2 kernels (f16 / "
                           "f32; medians of 3 interleaved runs, docs/measurements.md §25)"));
        // The TTS reads its ~1.1 GB of F16 weights per code: q8_0 halves the bytes, and on 2
        // shared cores the TTS's time is also Token2Wav's lost time.
        c.push_back(choice("tts-weight-type", "q8_0",
                           "AMD EPYC Zen 3 (AVX2), 2 cores: demo rtf 1.722 vs 2.044, gapless_start_ms 5700 vs 7668 "
                           "(medians of 5 interleaved runs, faster in 5 of 5; docs/measurements.md §25)",
                           "TTS code distribution KL 0.00073 nats mean, top-1 100 % teacher-forced vs F16 on this CPU "
                           "(lines: <= 0.01, >= 98 %; TtsGolden.C8); twin weights: twin-only evidence"));
        // On 2 CPUs Token2Wav (~1.0 of real time alone on both) is the bottleneck, and a TTS on
        // both cores takes them from it exactly while the first windows are made: one TTS thread
        // leaves it a core. Measured on 2 CPUs only; with more cores the TTS keeps its default.
        if (cpu.n_cpus <= 2)
            c.push_back(choice("tts-threads", "1",
                               "AMD EPYC Zen 3 (AVX2), 2 cores: demo gapless_start_ms 3539 -> 3354, first audio 2907 -> "
                               "2686 ms, rtf 1.348 -> 1.300 (medians of 4 interleaved rounds, better in 4 of 4; rtf tune "
                               "--objective gapless_start_ms: kept and confirmed, 10 of 10 pairs; docs/measurements.md §27)"));
    } else if (isa == "amx") {
        // Intel Xeon with AMX: VDPBF16PS peaks at half the f32 FMA rate there, so our bf16
        // token2mel kernel is the slow choice (issue 29 §2); the reference math stays. A bf16
        // token2mel now runs on oneDNN's AMX matmul there (onednn-linear.h), but no rtfkit run
        // on a Xeon has measured it yet: it enters this row when one does (or `rtf tune` on
        // that machine keeps it, which overrides this row).
        c.push_back(choice("t2w-type-t2m", "f32",
                           "Intel Xeon (AMX), 2 cores: bf16 token2mel 618 vs f32 545 ms per window (issue 29 §2)"));
    }
    return c;
}

MachineProfile select_profile(ProfileMode mode, const CpuFeatures &cpu, const std::optional<TunedRow> &tuned,
                              bool onednn) {
    MachineProfile p;
    p.mode = mode;
    p.cpu = cpu;
    if (mode == ProfileMode::none) {
        p.name = "none";
        p.source = "--profile none: the plain knob defaults";
        return p;
    }
    if (tuned && mode == ProfileMode::automatic) {
        p.name = "tuned";
        p.source = "rtf tune result #" + std::to_string(tuned->id) + " (" + tuned->created +
                   ") in the history, for this machine and kit";
        // A tune row holds the profile the tune started from with its kept changes over it: a
        // choice equal to this CPU's built-in one keeps that one's evidence and fidelity.
        const auto builtin = builtin_choices(cpu, onednn);
        const std::string tag = "rtf tune #" + std::to_string(tuned->id);
        for (auto it = tuned->knobs.begin(); it != tuned->knobs.end(); ++it) {
            const std::string v = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
            const ProfileChoice *same = nullptr;
            for (const auto &b : builtin) same = !same && b.knob == it.key() && b.value == v ? &b : same;
            if (same) {
                ProfileChoice c = *same;
                c.evidence += " (also in " + tag + "'s configuration)";
                p.choices.push_back(std::move(c));
            } else {
                p.choices.push_back(choice(it.key(), v, tag + ": kept by an interleaved A/B",
                                           "passed rtf tune's quality gates (--allow-math-changes)"));
            }
        }
        // A row of only kept changes (an older tune's) goes over the built-in choices it does
        // not name: replacing them would drop, say, this CPU's q8_0 TTS for a tune that kept one
        // thread count.
        if (tuned->changes_only) {
            p.source += ", over the built-in " + cpu.isa_class() + " profile (the row holds only the tune's kept changes)";
            for (const auto &b : builtin)
                if (!tuned->knobs.contains(b.knob)) p.choices.push_back(b);
        }
        return p;
    }
    p.name = cpu.isa_class() + (mode == ProfileMode::exact ? " exact" : "");
    p.source = "built-in for " + (cpu.model.empty() ? std::string("this CPU") : cpu.model) + " (" + cpu.flags_text() +
               ", " + std::to_string(cpu.n_cpus) + " CPUs)";
    for (auto &c : builtin_choices(cpu, onednn))
        if (mode != ProfileMode::exact || !c.changes_math) p.choices.push_back(std::move(c));
    if (mode == ProfileMode::exact) p.source += ", math-changing choices left out";
    return p;
}

void apply_profile(SpeakConfig &cfg, MachineProfile &p, const std::set<std::string> &user_set) {
    p.applied.clear();
    p.not_here.clear();
    for (const auto &c : p.choices) {
        if (user_set.count(c.knob)) continue;
        if (!find_knob(c.knob) && find_duplex_knob(c.knob)) {  // a duplex-only choice (the audio encoder's)
            p.not_here.push_back(c.knob);
            continue;
        }
        if (!find_knob(c.knob))
            throw_usage("machine profile '" + p.name + "' (" + p.source + ") names knob '" + c.knob +
                        "', which this build does not have; run with --profile none or re-run rtf tune");
        apply_knob(cfg, c.knob, c.value);
        p.applied.push_back(c.knob);
    }
}

void apply_profile(DuplexConfig &cfg, MachineProfile &p, const std::set<std::string> &user_set) {
    p.applied.clear();
    p.not_here.clear();
    for (const auto &c : p.choices) {
        if (user_set.count(c.knob)) continue;
        if (!find_duplex_knob(c.knob)) {
            p.not_here.push_back(c.knob);
            continue;
        }
        apply_duplex_knob(cfg, c.knob, c.value);
        p.applied.push_back(c.knob);
    }
}

std::string MachineProfile::line() const {
    std::ostringstream o;
    o << name << " (" << source << ")";
    if (choices.empty()) {
        o << ": no choice verified for this CPU, the plain defaults";
        return o.str();
    }
    o << ":";
    for (const auto &c : choices) {
        bool used = false;
        for (const auto &a : applied) used = used || a == c.knob;
        bool here = true;
        for (const auto &n : not_here) here = here && n != c.knob;
        o << " " << c.knob << "=" << c.value;
        if (!here) o << " (no such knob here)";
        else if (!used) o << " (overridden)";
        if (c.changes_math) o << " [changes the math: " << (c.fidelity.empty() ? "fidelity not measured" : c.fidelity) << "]";
    }
    return o.str();
}

nlohmann::json MachineProfile::to_json() const {
    nlohmann::json ch = nlohmann::json::array();
    for (const auto &c : choices)
        ch.push_back({{"knob", c.knob},
                      {"value", c.value},
                      {"changes_math", c.changes_math},
                      {"evidence", c.evidence},
                      {"fidelity", c.fidelity}});
    return {{"mode", to_string(mode)}, {"name", name},       {"source", source},
            {"cpu", cpu.to_json()},    {"choices", ch},      {"applied", applied}, {"not_here", not_here}};
}

}  // namespace rtf::speak
