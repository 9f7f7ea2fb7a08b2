#include "speak/duplex-knobs.h"

#include <algorithm>

#include "core/error.h"
#include "core/parse.h"
#include "core/topology.h"
#include "models/lm/placement.h"
#include "models/t2w/t2w-config.h"
#include "pipeline/pipeline.h"
#include "speak/knobs.h"

namespace rtf::speak {

namespace {

// An integer knob stored in `field` of the config.
DuplexKnobDef int_knob(std::string name, std::vector<std::string> aliases, std::string unit, std::string help,
                       int64_t lo, int64_t hi, int DuplexConfig::*field) {
    const std::string flag = "--" + name;
    return {std::move(name), std::move(aliases), std::move(unit), std::move(help), {}, false, false,
            [flag, lo, hi, field](DuplexConfig &c, const std::string &v) { c.*field = static_cast<int>(parse_int(v, flag, lo, hi)); },
            [field](const DuplexConfig &c) { return std::to_string(c.*field); }};
}

// A CPU-set knob stored in `field` ("" = no binding).
DuplexKnobDef cpus_knob(const std::string &stage, std::vector<int> DuplexConfig::*field) {
    const std::string name = stage + "-cpus", flag = "--" + name;
    return {name, {}, "cpus", "CPU set of the " + stage + " stage thread and its compute threads, e.g. 0 or 0-1 (\"\" = unbound)", {},
            false, false,
            [flag, field](DuplexConfig &c, const std::string &v) { c.*field = v.empty() ? std::vector<int>{} : parse_int_list(v, flag); },
            [field](const DuplexConfig &c) { return format_pu_list(c.*field); }};
}

std::vector<DuplexKnobDef> make_table() {
    const int64_t kDepth = pipe::PipelineConfig::kMaxDepth;
    std::vector<DuplexKnobDef> t;
    t.push_back({"models", {}, "", "Kit directory (needs the audio encoder: rtf twin --only apm adds it to a twin)", {},
                 true, false, [](DuplexConfig &c, const std::string &v) { c.models_dir = v; },
                 [](const DuplexConfig &c) { return c.models_dir; }});
    t.push_back({"input", {}, "",
                 "The user's recording (WAV or any file libsndfile reads; any rate and channels: resampled to 16 kHz mono)",
                 {}, true, false, [](DuplexConfig &c, const std::string &v) { c.input = v; },
                 [](const DuplexConfig &c) { return c.input; }});
    t.push_back({"interval", {}, "ms", "Push cadence: frame i is pushed at t0 + i x interval (e.g. 1000ms, 250ms)", {}, false,
                 false, [](DuplexConfig &c, const std::string &v) { c.interval_ms = parse_duration_ms(v, "--interval"); },
                 [](const DuplexConfig &c) { return knob_number(c.interval_ms) + "ms"; }});
    t.push_back(int_knob("frames", {}, "frames",
                         "Frames to push (0 = as many as the recording has; more than it has: the rest are silence, and "
                         "the output says how many)",
                         0, 100000, &DuplexConfig::n_frames));
    t.push_back({"speak-frames", {}, "",
                 "Force the decision: speak in these frames (indexes N or ranges N-M, e.g. 4-12,20-28), listen in the "
                 "others; each range is one speak turn. For twins, whose sampled decision is noise. Frames below the "
                 "force_listen count (3) always listen",
                 {}, false, false, [](DuplexConfig &c, const std::string &v) { c.speak_frames = v; },
                 [](const DuplexConfig &c) { return c.speak_frames; }});
    t.push_back({"speak-tokens", {}, "tokens",
                 "A forced speak frame ends after this many text tokens (1 .. 26; 10 = one TTS call of 26 codes, ~1 s "
                 "of audio per frame, a real speaking frame's pace)",
                 {}, false, false,
                 [](DuplexConfig &c, const std::string &v) {
                     c.llm.forced_speak_tokens = static_cast<int>(parse_int(v, "--speak-tokens", 1, 26));
                 },
                 [](const DuplexConfig &c) { return std::to_string(c.llm.forced_speak_tokens); }});
    t.push_back({"twin-text-rate", {}, "tokens/s",
                 "Twin kits only: a sampled speak frame ends after max(1, ceil(RATE x frame)) text tokens, RATE in text "
                 "tokens per second of audio (a random LLM never ends a speak unit and writes all 26; a real model "
                 "speaking ~3 words/s writes ~4-6 per 1 s unit). 0 = uncapped; forced frames keep --speak-tokens; "
                 "ignored on real model files",
                 {}, false, false,
                 [](DuplexConfig &c, const std::string &v) { c.twin_text_rate = parse_double(v, "--twin-text-rate", 0, 1000); },
                 [](const DuplexConfig &c) { return knob_number(c.twin_text_rate); }});
    t.push_back({"startup-buffer-ms", {}, "ms", "Playback starts this long after a turn's first audio (analyzer [2] and [5])",
                 {}, false, false,
                 [](DuplexConfig &c, const std::string &v) { c.startup_buffer_ms = parse_double(v, "--startup-buffer-ms", 0, 1e9); },
                 [](const DuplexConfig &c) { return knob_number(c.startup_buffer_ms); }});
    t.push_back({"max-gap-ms", {}, "ms", "Largest tolerated playback gap per turn [5]", {}, false, false,
                 [](DuplexConfig &c, const std::string &v) { c.max_gap_ms = parse_double(v, "--max-gap-ms", 0, 1e9); },
                 [](const DuplexConfig &c) { return knob_number(c.max_gap_ms); }});
    // ---- threads: one default for every stage, and speak's per-stage knobs over it
    t.push_back(int_knob("threads", {}, "threads",
                         "Compute threads of each stage's engine unless its own knob says (0 = min(4, CPUs / 2); "
                         "Token2Wav's two parts get half each)",
                         0, 256, &DuplexConfig::threads));
    t.push_back(int_knob("llm-threads", {}, "threads", "Threads of the LLM (0 = --threads)", 0, 256, &DuplexConfig::llm_threads));
    t.push_back(int_knob("tts-threads", {}, "threads", "Threads of the TTS (0 = --threads)", 0, 256, &DuplexConfig::tts_threads));
    t.push_back(int_knob("t2w-threads-t2m", {}, "threads", "Threads of token2mel (0 = half of --threads)", 0, 256,
                         &DuplexConfig::t2w_threads_t2m));
    t.push_back(int_knob("t2w-threads-voc", {}, "threads", "Threads of the vocoder (0 = half of --threads)", 0, 256,
                         &DuplexConfig::t2w_threads_voc));
    t.push_back(int_knob("apm-threads", {}, "threads", "Threads of the audio encoder (0 = --threads)", 0, 256,
                         &DuplexConfig::apm_threads));
    for (auto [stage, field] : {std::pair{"apm", &DuplexConfig::apm_cpus}, std::pair{"llm", &DuplexConfig::llm_cpus},
                                std::pair{"tts", &DuplexConfig::tts_cpus}, std::pair{"t2w", &DuplexConfig::t2w_cpus}})
        t.push_back(cpus_knob(stage, field));
    // ---- queues: d1 / d2 as in speak; the two input queues duplex alone has
    t.push_back(int_knob("encoder-queue-cap", {}, "items", "Frames waiting for the audio encoder (the reference's 16)", 1,
                         kDepth, &DuplexConfig::encoder_queue_cap));
    t.push_back(int_knob("prefill-queue-cap", {}, "items", "Encoded frames waiting for the LLM (the reference's intended 30)",
                         1, kDepth, &DuplexConfig::prefill_queue_cap));
    t.push_back(int_knob("d1", {"tts-queue-cap"}, "items",
                         "Depth of queue q1, LLM messages waiting for the TTS (the write-up's 16; the reference's 1)", 1,
                         kDepth, &DuplexConfig::tts_queue_cap));
    t.push_back(int_knob("d2", {"t2w-queue-cap"}, "items", "Depth of queue q2, TTS chunks waiting for Token2Wav", 1, kDepth,
                         &DuplexConfig::t2w_queue_cap));
    // ---- the LLM's context and sampling
    t.push_back({"llm-ctx", {"ctx-size"}, "tokens",
                 "The LLM's context in positions (a frame takes ~15-45; libllama rounds it up to a multiple of 256)", {},
                 false, false,
                 [](DuplexConfig &c, const std::string &v) {
                     c.llm.placement.n_ctx = static_cast<uint32_t>(parse_int(v, "--llm-ctx", 64, 1 << 20));
                 },
                 [](const DuplexConfig &c) { return std::to_string(c.llm.placement.n_ctx); }});
    t.push_back({"context", {}, "",
                 "When the LLM's context fills: slide (the reference's: drop the older half, keep going) or stop (the "
                 "session ends with 'context full', exit 3)",
                 {"slide", "stop"}, false, false,
                 [](DuplexConfig &c, const std::string &v) { c.llm.context_slide = knob_one_of("context", v, {"slide", "stop"}) == "slide"; },
                 [](const DuplexConfig &c) { return c.llm.context_slide ? "slide" : "stop"; }});
    t.push_back({"seed", {}, "", "LLM sampler seed (re-seeded per session)", {}, false, false,
                 [](DuplexConfig &c, const std::string &v) { c.llm.seed = static_cast<uint32_t>(parse_int(v, "--seed", 0, 4294967295LL)); },
                 [](const DuplexConfig &c) { return std::to_string(c.llm.seed); }});
    // ---- weight and compute types: speak's names and allowed values
    t.push_back({"llm-weight-type", {}, "",
                 "Weight type of the LLM's matrices (as rtf speak's; converted once into the kit's .rtf-cache)",
                 lm::weight_types(), false, true,
                 [](DuplexConfig &c, const std::string &v) { c.llm.placement.weight_type = knob_one_of("llm-weight-type", v, lm::weight_types()); },
                 [](const DuplexConfig &c) { return c.llm.placement.weight_type; }});
    t.push_back({"apm-weight-type", {}, "",
                 "Weight type of the audio encoder's matrices (blocks and projector; converted at load; file = the kit's F16)",
                 apm::apm_weight_types(), false, true,
                 [](DuplexConfig &c, const std::string &v) { c.apm.weight_type = knob_one_of("apm-weight-type", v, apm::apm_weight_types()); },
                 [](const DuplexConfig &c) { return c.apm.weight_type; }});
    t.push_back({"tts-weight-type", {}, "", "Weight type of the TTS's matrices (as rtf speak's)", lm::weight_types(), false, true,
                 [](DuplexConfig &c, const std::string &v) { c.tts.placement.weight_type = knob_one_of("tts-weight-type", v, lm::weight_types()); },
                 [](const DuplexConfig &c) { return c.tts.placement.weight_type; }});
    t.push_back({"t2w-type-t2m", {}, "", "Compute type of token2mel's matrix weights (as rtf speak's; f32 = the reference's math)",
                 t2w::t2m_types(), false, true,
                 [](DuplexConfig &c, const std::string &v) { c.t2w.type_t2m = knob_one_of("t2w-type-t2m", v, t2w::t2m_types()); },
                 [](const DuplexConfig &c) { return c.t2w.type_t2m; }});
    t.push_back({"t2w-type-voc", {}, "", "Compute type of the vocoder's convolutions (as rtf speak's; bf16 needs oneDNN)",
                 t2w::voc_types(), false, true,
                 [](DuplexConfig &c, const std::string &v) { c.t2w.type_voc = knob_one_of("t2w-type-voc", v, t2w::voc_types()); },
                 [](const DuplexConfig &c) { return c.t2w.type_voc; }});
    return t;
}

}  // namespace

const std::vector<DuplexKnobDef> &duplex_knob_table() {
    static const std::vector<DuplexKnobDef> t = make_table();
    return t;
}

const DuplexKnobDef *find_duplex_knob(std::string_view name) {
    for (const auto &k : duplex_knob_table()) {
        if (k.name == name) return &k;
        for (const auto &a : k.aliases)
            if (a == name) return &k;
    }
    return nullptr;
}

std::vector<std::string> duplex_knob_names() {
    std::vector<std::string> v;
    for (const auto &k : duplex_knob_table()) v.push_back(k.name);
    return v;
}

void apply_duplex_knob(DuplexConfig &cfg, const std::string &name, const std::string &value) {
    const DuplexKnobDef *k = find_duplex_knob(name);
    if (!k) {
        std::string list;
        for (const auto &n : duplex_knob_names()) list += (list.empty() ? "" : ", ") + n;
        throw_usage("'" + name + "' is not a duplex knob; the knobs are: " + list);
    }
    k->set(cfg, value);
}

}  // namespace rtf::speak
