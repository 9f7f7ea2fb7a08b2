#include "speak/knobs.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/parse.h"
#include "core/topology.h"
#include "models/t2w/onednn-linear.h"
#include "speak/speak.h"

namespace rtf::speak {

namespace {

std::string flag(const std::string &name) { return "--" + name; }

std::string read_text_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw_usage("--text-file: cannot read " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    if (trim(s).empty()) throw_usage("--text-file: " + path + " is empty");
    return s;
}

// --t2w-ramp: "off" (or empty) = none, else window sizes "12,20" in order (not a set: a ramp
// may repeat a size). The range is T2wConfig::validate's, checked here to name the flag.
std::vector<int> parse_ramp(const std::string &v) {
    const std::string t = trim(v);
    if (t.empty() || t == "off") return {};
    std::vector<int> ramp;
    for (const auto &part : split(t, ',')) {
        ramp.push_back(static_cast<int>(parse_int(trim(part), "--t2w-ramp", t2w::kMinFirstWindow, t2w::kWindowTokens)));
    }
    if (ramp.size() > t2w::kMaxRampWindows) {
        throw_usage("--t2w-ramp: " + std::to_string(ramp.size()) + " windows; use at most " +
                    std::to_string(t2w::kMaxRampWindows) + " (then the reference's 28-token windows)");
    }
    return ramp;
}

std::string format_ramp(const std::vector<int> &ramp) {
    if (ramp.empty()) return "off";
    std::string s;
    for (int w : ramp) s += (s.empty() ? "" : ",") + std::to_string(w);
    return s;
}

// Builds a knob's facts (knobs.h, KnobFacts) in one readable expression.
struct Facts {
    KnobFacts f;
    explicit Facts(std::string stage) { f.stage = std::move(stage); }
    Facts &load() {
        f.fixed_at_load = true;
        return *this;
    }
    Facts &threads() {
        f.thread_count = true;
        return *this;
    }
    Facts &tune(int layer, std::vector<std::string> values) {
        f.tune_layer = layer;
        f.tune_values = std::move(values);
        return *this;
    }
    Facts &runnable(std::function<bool(const std::string &)> r) {
        f.runnable = std::move(r);
        return *this;
    }
    Facts &with(std::string knob, std::string value) {
        f.tune_with.emplace_back(std::move(knob), std::move(value));
        return *this;
    }
    operator KnobFacts() const { return f; }  // NOLINT: the table's rows take it as it is
};

// A bf16 vocoder runs oneDNN's convolution: only in a build (and on a CPU) that has it.
bool voc_type_runnable(const std::string &v) { return v != "bf16" || t2w::onednn::available(); }

// Model placement knobs of one libllama stage (llm or tts): the same flags for both.
using PlacementOf = lm::ModelPlacement &(*)(SpeakConfig &);
lm::ModelPlacement &llm_placement(SpeakConfig &c) { return c.llm.placement; }
lm::ModelPlacement &tts_placement(SpeakConfig &c) { return c.tts.placement; }

void add_placement(std::vector<KnobDef> &t, const std::string &p, PlacementOf pl, StagePlacement SpeakConfig::*stage) {
    auto cpl = [pl](const SpeakConfig &c) -> const lm::ModelPlacement & { return pl(const_cast<SpeakConfig &>(c)); };
    const std::string n = p;
    t.push_back({n + "-device", "", p, "", "Backend device for the " + p + " (a name from `rtf devices`, or auto)", {},
                 false, false, false, false,
                 [pl](SpeakConfig &c, const std::string &v) { pl(c).device = v; },
                 [cpl](const SpeakConfig &c) { return cpl(c).device; },
                 Facts(p).load()});
    t.push_back({n + "-ngl", "", p, "layers", "Layers of the " + p + " on the device (-1 = all)", {}, false, false, false,
                 false,
                 [pl, n](SpeakConfig &c, const std::string &v) {
                     pl(c).n_gpu_layers = static_cast<int>(parse_int(v, flag(n + "-ngl"), -1, 100000));
                 },
                 [cpl](const SpeakConfig &c) { return std::to_string(cpl(c).n_gpu_layers); },
                 Facts(p).load()});
    t.push_back({n + "-threads", "", p, "threads", "Decode threads of the " + p + " (0 = all CPUs)", {}, false, false,
                 false, false,
                 [pl, n](SpeakConfig &c, const std::string &v) {
                     pl(c).n_threads = static_cast<int>(parse_int(v, flag(n + "-threads"), 0, 512));
                 },
                 [cpl](const SpeakConfig &c) { return std::to_string(cpl(c).n_threads); },
                 Facts(p).load().threads().tune(0, {"1", "cpus/2"})});
    t.push_back({n + "-threads-batch", "", p, "threads", "Batch/prefill threads of the " + p + " (0 = all CPUs)", {},
                 false, false, false, false,
                 [pl, n](SpeakConfig &c, const std::string &v) {
                     pl(c).n_threads_batch = static_cast<int>(parse_int(v, flag(n + "-threads-batch"), 0, 512));
                 },
                 [cpl](const SpeakConfig &c) { return std::to_string(cpl(c).n_threads_batch); },
                 Facts(p).load().threads()});
    t.push_back({n + "-poll", "", p, "0-100",
                 "How the " + p + "'s idle compute threads wait for work: 0 = sleep, 100 = spin (ggml's threadpool "
                 "poll; spinning threads take cores the other stages could use)",
                 {}, false, false, false, false,
                 [pl, n](SpeakConfig &c, const std::string &v) { pl(c).poll = static_cast<int>(parse_int(v, flag(n + "-poll"), 0, 100)); },
                 [cpl](const SpeakConfig &c) { return std::to_string(cpl(c).poll); },
                 Facts(p).load()});
    t.push_back({n + "-fa", "", p, "", "Flash attention for the " + p, lm::flash_attn_modes(), false, false, false, false,
                 [pl, n](SpeakConfig &c, const std::string &v) { pl(c).flash_attn = knob_one_of(n + "-fa", v, lm::flash_attn_modes()); },
                 [cpl](const SpeakConfig &c) { return cpl(c).flash_attn; },
                 Facts(p).load().tune(3, {"on"})});
    t.push_back({n + "-weight-type", "", p, "",
                 "Weight type of the " + p + "'s matrices: file = the file's own; another is converted once at load "
                 "(libllama's quantizer, the head kept) into the kit's .rtf-cache: fewer bytes per decoded token",
                 lm::weight_types(), false, false, false, true,
                 [pl, n](SpeakConfig &c, const std::string &v) { pl(c).weight_type = knob_one_of(n + "-weight-type", v, lm::weight_types()); },
                 [cpl](const SpeakConfig &c) { return cpl(c).weight_type; },
                 Facts(p).load().tune(1, {"q8_0"})});
    t.push_back({n + "-kv-type", "", p, "", "KV cache type of the " + p, lm::kv_types(), false, false, false, true,
                 [pl, n](SpeakConfig &c, const std::string &v) { pl(c).kv_type = knob_one_of(n + "-kv-type", v, lm::kv_types()); },
                 [cpl](const SpeakConfig &c) { return cpl(c).kv_type; },
                 Facts(p).load().tune(1, {"q8_0"})});
    t.push_back({n + "-ctx", "", p, "tokens", "Context length of the " + p, {}, false, false, false, false,
                 [pl, n](SpeakConfig &c, const std::string &v) {
                     pl(c).n_ctx = static_cast<uint32_t>(parse_int(v, flag(n + "-ctx"), 64, 1 << 20));
                 },
                 [cpl](const SpeakConfig &c) { return std::to_string(cpl(c).n_ctx); },
                 Facts(p).load()});
    t.push_back({n + "-no-mmap", "", p, "", "Read the " + p + " weights into memory instead of mmap", {}, true, false,
                 false, false,
                 [pl, n](SpeakConfig &c, const std::string &v) { pl(c).mmap = !parse_switch(v, flag(n + "-no-mmap")); },
                 [cpl](const SpeakConfig &c) { return cpl(c).mmap ? "false" : "true"; },
                 Facts(p).load()});
    t.push_back({n + "-no-host-buffer", "", p, "", "Bypass the pinned host buffer for the " + p + " weights", {}, true,
                 false, false, false,
                 [pl, n](SpeakConfig &c, const std::string &v) {
                     pl(c).host_buffer = !parse_switch(v, flag(n + "-no-host-buffer"));
                 },
                 [cpl](const SpeakConfig &c) { return cpl(c).host_buffer ? "false" : "true"; },
                 Facts(p).load()});
    t.push_back({n + "-cpus", "", p, "", "CPU set of the " + p + " stage thread and its compute threads, e.g. 0-3,6", {},
                 false, false, false, false,
                 [pl, n, stage](SpeakConfig &c, const std::string &v) {
                     (c.*stage).cpus = pl(c).cpus = v.empty() ? std::vector<int>{} : parse_int_list(v, flag(n + "-cpus"));
                 },
                 [stage](const SpeakConfig &c) { return format_pu_list((c.*stage).cpus); },
                 p == "tts" ? Facts(p).load().tune(0, {"first-cpu"}) : Facts(p).load()});
}

std::vector<KnobDef> make_table() {
    std::vector<KnobDef> t;
    // ---- input
    t.push_back({"models", "", "input", "", "Kit directory: real GGUF files or a twin (`rtf twin`)", {}, false, true,
                 false, false, [](SpeakConfig &c, const std::string &v) { c.models_dir = v; },
                 [](const SpeakConfig &c) { return c.models_dir; },
                 Facts("run").load()});
    t.push_back({"prompt", "p", "input", "", "Prompt: the LLM answers it, the answer is spoken", {}, false, true, false,
                 false, [](SpeakConfig &c, const std::string &v) { c.prompt = v; },
                 [](const SpeakConfig &c) { return c.prompt; },
                 Facts("run")});
    t.push_back({"text", "", "input", "",
                 "Text to speak as the reply (no LLM sampling; the LLM only computes the hidden states the TTS "
                 "conditions on)",
                 {}, false, true, false, false,
                 [](SpeakConfig &c, const std::string &v) {
                     c.text = v;
                     c.text_file.clear();
                 },
                 [](const SpeakConfig &c) { return c.text_file.empty() ? c.text : std::string(); },
                 Facts("run")});
    t.push_back({"text-file", "", "input", "", "Read --text from FILE (UTF-8)", {}, false, true, false, false,
                 [](SpeakConfig &c, const std::string &v) {
                     if (!c.text.empty() && c.text_file.empty()) throw_usage("--text and --text-file exclude each other; give one");
                     c.text = read_text_file(v);
                     c.text_file = v;
                 },
                 [](const SpeakConfig &c) { return c.text_file; },
                 Facts("run")});
    t.push_back({"text-turn", "", "input", "",
                 "With --text, the LLM's user turn: echo = the text itself (the prefill grows with the text); fixed = "
                 "one fixed instruction for every text, prefilled once at load, so only the reply is computed (other "
                 "hidden states: changes the math)",
                 {"echo", "fixed"}, false, false, false, true,
                 [](SpeakConfig &c, const std::string &v) { c.llm.text_turn = knob_one_of("text-turn", v, {"echo", "fixed"}); },
                 [](const SpeakConfig &c) { return c.llm.text_turn; },
                 Facts("llm").load()});
    t.push_back({"llm-prompt-cache", "", "llm", "",
                 "Reuse the KV of the previous prompt's common prefix (system turn, template; prefilled at load). Same "
                 "math; off = every prompt prefilled in full",
                 {"on", "off"}, false, false, false, false,
                 [](SpeakConfig &c, const std::string &v) { c.llm.prompt_cache = parse_switch(v, "--llm-prompt-cache"); },
                 [](const SpeakConfig &c) { return c.llm.prompt_cache ? "on" : "off"; },
                 Facts("llm").load()});
    // ---- work size
    t.push_back({"max-audio-s", "", "work size", "s",
                 "Stop after this much audio (25 audio tokens per second; 0 = until EOS). Fixes the work size: twins "
                 "rarely emit EOS",
                 {}, false, false, false, false,
                 [](SpeakConfig &c, const std::string &v) { c.max_audio_s = parse_double(v, "--max-audio-s", 0, 1e6); },
                 [](const SpeakConfig &c) { return knob_number(c.max_audio_s); },
                 Facts("run")});
    t.push_back({"min-audio-s", "", "work size", "s",
                 "The TTS may not end the utterance (EOS masked) before this much audio; with --min-audio-s = "
                 "--max-audio-s the work size is exact (twins' EOS rate is arbitrary). 0 = the reference's sampling",
                 {}, false, false, false, false,
                 [](SpeakConfig &c, const std::string &v) {
                     c.min_audio_s = parse_double(v, "--min-audio-s", 0, 1e6);
                     c.tts.min_codes_per_turn = static_cast<int64_t>(std::ceil(c.min_audio_s * kCodesPerSecond));
                 },
                 [](const SpeakConfig &c) { return knob_number(c.min_audio_s); },
                 Facts("tts").load()});
    t.push_back({"twin-text-rate", "", "work size", "tokens/s",
                 "Twin kits, prompt mode, with --max-audio-s: cut the LLM's reply at this many text tokens per second "
                 "of audio (a random LLM never ends its turn; real models speak ~3-5/s). 0 = off; real kits are never "
                 "capped",
                 {}, false, false, false, false,
                 [](SpeakConfig &c, const std::string &v) { c.twin_text_rate = parse_double(v, "--twin-text-rate", 0, 1000); },
                 [](const SpeakConfig &c) { return knob_number(c.twin_text_rate); },
                 Facts("run")});
    t.push_back({"max-tokens", "", "work size", "tokens", "Cap on the LLM's reply (0 = until EOS/context)", {}, false,
                 false, false, false,
                 [](SpeakConfig &c, const std::string &v) {
                     c.llm.max_tokens = static_cast<int>(parse_int(v, "--max-tokens", 0, 1 << 24));
                 },
                 [](const SpeakConfig &c) { return std::to_string(c.llm.max_tokens); },
                 Facts("llm").load()});
    // ---- voice and speed (per utterance)
    t.push_back({"voice", "", "t2w", "",
                 "The voice: default = the kit's token2wav-gguf/prompt_cache.gguf, or a name under the kit's voices/ "
                 "(a prompt cache each; `rtf serve` lists them at GET /v1/audio/voices); Pocket TTS / Qwen3-TTS kits: "
                 "default = --speaker-file (or the model's own), NAME = the kit's voices/NAME.wav",
                 {}, false, false, false, true,
                 [](SpeakConfig &c, const std::string &v) { c.voice = v == "default" ? "" : v; },
                 [](const SpeakConfig &c) { return c.voice.empty() ? std::string("default") : c.voice; },
                 Facts("t2w")});
    t.push_back({"speed", "", "t2w", "x",
                 "Output speed 0.25..4 (OpenAI's speed): the PCM time-stretched, pitch kept (Sonic); 1 = the "
                 "model's PCM untouched",
                 {}, false, false, false, true,
                 [](SpeakConfig &c, const std::string &v) { c.speed = parse_double(v, "--speed", 0.25, 4.0); },
                 [](const SpeakConfig &c) { return knob_number(c.speed); },
                 Facts("run")});
    // ---- families other than MiniCPM-o 4.5 (family.h: Pocket TTS)
    t.push_back({"speaker-file", "", "family", "",
                 "Pocket TTS and Qwen3-TTS kits: a reference voice to clone (WAV, MP3 or FLAC; resampled to 24 kHz; "
                 "Pocket uses at most 30 s, Qwen3-TTS one x-vector of the whole file); default none, the model's "
                 "own voice. Encoded once when the engines load",
                 {}, false, false, false, true,
                 [](SpeakConfig &c, const std::string &v) { c.family.speaker_file = v; },
                 [](const SpeakConfig &c) { return c.family.speaker_file; },
                 Facts("run").load()});
    t.push_back({"family-first-frames", "", "family", "frames",
                 "Pocket TTS and Qwen3-TTS kits: frames (80 ms of audio each) in the first PCM chunk: fewer, sooner "
                 "first audio (on Qwen3-TTS each chunk costs a whole 72-frame code2wav window)",
                 {}, false, false, false, false,
                 [](SpeakConfig &c, const std::string &v) {
                     c.family.first_frames = static_cast<int>(parse_int(v, "--family-first-frames", 1, 1000));
                 },
                 [](const SpeakConfig &c) { return std::to_string(c.family.first_frames); },
                 Facts("pipeline").tune(2, {"1", "4"})});
    t.push_back({"family-frames", "", "family", "frames",
                 "Pocket TTS and Qwen3-TTS kits: frames per PCM chunk once the sizes have doubled up from "
                 "--family-first-frames (llama.cpp's helper decodes 8 at a time for Pocket TTS, 72 for Qwen3-TTS)",
                 {}, false, false, false, false,
                 [](SpeakConfig &c, const std::string &v) {
                     c.family.frames = static_cast<int>(parse_int(v, "--family-frames", 1, 1000));
                 },
                 [](const SpeakConfig &c) { return std::to_string(c.family.frames); },
                 Facts("pipeline").tune(2, {"4", "16"})});
    t.push_back({"family-temp", "", "family", "",
                 "Pocket TTS kits: noise temperature of the flow step, 0 = the model variant's (english 0.3, else "
                 "0.7); Qwen3-TTS kits: the talker's sampling temperature, 0 = 0.8. Loaded with the engines",
                 {}, false, false, false, true,
                 [](SpeakConfig &c, const std::string &v) { c.family.temp = parse_double(v, "--family-temp", 0, 10); },
                 [](const SpeakConfig &c) { return knob_number(c.family.temp); },
                 Facts("run").load()});
    // ---- pipeline
    t.push_back({"first-audio-priority", "", "pipeline", "",
                 "The TTS pauses after handing on the codes of Token2Wav's first window until its audio is out (the "
                 "first window gets every core; same math, less TTS head start)",
                 {}, true, false, false, false,
                 [](SpeakConfig &c, const std::string &v) { c.first_audio_priority = parse_switch(v, "--first-audio-priority"); },
                 [](const SpeakConfig &c) { return c.first_audio_priority ? "true" : "false"; },
                 Facts("pipeline")});
    t.push_back({"llm-step", "", "pipeline", "tokens", "Text tokens per LLM -> TTS hand-off (reference 10)", {}, false,
                 false, false, false,
                 [](SpeakConfig &c, const std::string &v) { c.llm.llm_step = static_cast<int>(parse_int(v, "--llm-step", 1, 4096)); },
                 [](const SpeakConfig &c) { return std::to_string(c.llm.llm_step); },
                 Facts("llm").load()});
    t.push_back({"schedule", "", "pipeline", "",
                 "pipelined: stages overlap through queues; lockstep: one item in flight (D1 = D2 = 1); sequential: each "
                 "stage finishes the utterance before the next starts (the baseline)",
                 {"pipelined", "lockstep", "sequential"}, false, false, false, false,
                 [](SpeakConfig &c, const std::string &v) { c.pipeline.schedule = pipe::parse_schedule(v, "--schedule"); },
                 [](const SpeakConfig &c) { return std::string(pipe::to_string(c.pipeline.schedule)); },
                 Facts("pipeline").tune(2, {"sequential"})});
    for (int q = 0; q < 2; ++q) {
        const std::string n = "d" + std::to_string(q + 1);
        t.push_back({n, "", "pipeline", "items",
                     q == 0 ? "Depth of queue q1 (LLM -> TTS) (pipelined)" : "Depth of queue q2 (TTS -> T2W) (pipelined)",
                     {}, false, false, false, false,
                     [q, n](SpeakConfig &c, const std::string &v) {
                         c.pipeline.depths.resize(2, pipe::PipelineConfig::kDefaultDepth);
                         c.pipeline.depths[static_cast<size_t>(q)] =
                             static_cast<int>(parse_int(v, flag(n), 1, pipe::PipelineConfig::kMaxDepth));
                     },
                     [q](const SpeakConfig &c) {
                         return std::to_string(static_cast<size_t>(q) < c.pipeline.depths.size()
                                                   ? c.pipeline.depths[static_cast<size_t>(q)]
                                                   : pipe::PipelineConfig::kDefaultDepth);
                     },
                 Facts("pipeline").tune(2, {q == 0 ? "4" : "2"})});
    }
    t.push_back({"jitter-ms", "", "pipeline", "ms", "Playback jitter buffer for the starvation figure", {}, false, false,
                 false, false,
                 [](SpeakConfig &c, const std::string &v) { c.pipeline.jitter_ms = parse_double(v, "--jitter-ms", 0, 1e9); },
                 [](const SpeakConfig &c) { return knob_number(c.pipeline.jitter_ms); },
                 Facts("pipeline")});
    t.push_back({"no-profile", "", "pipeline", "", "Turn the per-item profiler off (headline metrics stay)", {}, true,
                 false, false, false,
                 [](SpeakConfig &c, const std::string &v) { c.pipeline.profile = !parse_switch(v, "--no-profile"); },
                 [](const SpeakConfig &c) { return c.pipeline.profile ? "false" : "true"; },
                 Facts("pipeline")});
    // ---- sampling
    t.push_back({"seed", "", "sampling", "", "Sampling seed of the LLM and the TTS", {}, false, false, false, false,
                 [](SpeakConfig &c, const std::string &v) {
                     c.llm.seed = c.tts.seed = static_cast<uint32_t>(parse_int(v, "--seed", 0, 4294967295LL));
                 },
                 [](const SpeakConfig &c) { return std::to_string(c.llm.seed); },
                 Facts("run").load()});
    t.push_back({"greedy", "", "sampling", "", "Greedy (argmax) sampling in LLM and TTS: for equivalence checks", {},
                 true, false, false, true,
                 [](SpeakConfig &c, const std::string &v) { c.llm.greedy = c.tts.greedy = parse_switch(v, "--greedy"); },
                 [](const SpeakConfig &c) { return c.llm.greedy ? "true" : "false"; },
                 Facts("run").load()});
    t.push_back({"llm-temperature", "", "sampling", "", "Temperature of the LLM's sampler (with its top-k 40, top-p 0.95, "
                 "min-p 0.05; ignored under --greedy)", {}, false, false, false, true,
                 [](SpeakConfig &c, const std::string &v) {
                     c.llm.temperature = static_cast<float>(parse_double(v, "--llm-temperature", 1e-3, 100));
                 },
                 [](const SpeakConfig &c) { return knob_number(std::round(c.llm.temperature * 1e6) / 1e6); },  // a float: 7 digits
                 Facts("llm").load()});
    // ---- llm, tts
    add_placement(t, "llm", llm_placement, &SpeakConfig::place_llm);
    add_placement(t, "tts", tts_placement, &SpeakConfig::place_tts);
    // ---- t2w
    t.push_back({"t2w-threads-t2m", "", "t2w", "threads", "CPU threads of token2mel (encoder + flow matching)", {}, false,
                 false, true, false,
                 [](SpeakConfig &c, const std::string &v) {
                     c.t2w.threads_t2m = static_cast<int>(parse_int(v, "--t2w-threads-t2m", 1, 4096));
                 },
                 [](const SpeakConfig &c) { return std::to_string(c.t2w.threads_t2m); },
                 Facts("t2w").load().threads().tune(0, {"1", "cpus/2"})});
    t.push_back({"t2w-threads-voc", "", "t2w", "threads", "CPU threads of the HiFT vocoder", {}, false, false, true,
                 false,
                 [](SpeakConfig &c, const std::string &v) {
                     c.t2w.threads_voc = static_cast<int>(parse_int(v, "--t2w-threads-voc", 1, 4096));
                 },
                 [](const SpeakConfig &c) { return std::to_string(c.t2w.threads_voc); },
                 Facts("t2w").load().threads().tune(0, {"1", "cpus/2"})});
    t.push_back({"t2w-device-t2m", "", "t2w", "", "Backend device of token2mel (`rtf devices`)", {}, false, false, true,
                 false, [](SpeakConfig &c, const std::string &v) { c.t2w.device_t2m = v; },
                 [](const SpeakConfig &c) { return c.t2w.device_t2m; },
                 Facts("t2w").load()});
    t.push_back({"t2w-device-voc", "", "t2w", "", "Backend device of the vocoder (`rtf devices`)", {}, false, false,
                 true, false, [](SpeakConfig &c, const std::string &v) { c.t2w.device_voc = v; },
                 [](const SpeakConfig &c) { return c.t2w.device_voc; },
                 Facts("t2w").load()});
    t.push_back({"flow-steps", "", "t2w", "steps",
                 "Euler steps of flow matching (0 = the prompt cache's, 5 in the official file; must match the cache: "
                 "`rtf t2w-prompt --steps N` builds one for N; N != 5 is not the reference's math)",
                 {}, false, false, true, true,
                 [](SpeakConfig &c, const std::string &v) {
                     c.t2w.flow_steps = static_cast<int>(parse_int(v, "--flow-steps", 0, 1000));
                 },
                 [](const SpeakConfig &c) { return std::to_string(c.t2w.flow_steps); },
                 Facts("t2w").load()});
    t.push_back({"no-cfg", "", "t2w", "", "Classifier-free guidance off (half the DiT work, different audio)", {}, true,
                 false, true, true,
                 [](SpeakConfig &c, const std::string &v) { c.t2w.cfg = !parse_switch(v, "--no-cfg"); },
                 [](const SpeakConfig &c) { return c.t2w.cfg ? "false" : "true"; },
                 Facts("t2w").load()});
    t.push_back({"t2w-lead-silence", "", "t2w", "tokens",
                 "Silence codes (4218) the token buffer starts with: 3 as the reference's T2W thread, 0 as its "
                 "token2wav-example",
                 {}, false, false, true, true,
                 [](SpeakConfig &c, const std::string &v) {
                     c.t2w.leading_silence = static_cast<int>(parse_int(v, "--t2w-lead-silence", 0, 1000));
                 },
                 [](const SpeakConfig &c) { return std::to_string(c.t2w.leading_silence); },
                 Facts("t2w").load()});
    t.push_back({"t2w-type-t2m", "", "t2w", "",
                 "Compute type of token2mel's matrix weights (converted at load; f32 = the reference's math). Which is "
                 "faster depends on the CPU: bf16 measured faster on an AMD EPYC Zen 4 (AVX512-BF16, no AMX), slower "
                 "on an Intel Xeon with AMX; --profile auto picks per CPU, `rtf limits` shows this CPU's peaks",
                 t2w::t2m_types(), false, false, true, true,
                 [](SpeakConfig &c, const std::string &v) { c.t2w.type_t2m = knob_one_of("t2w-type-t2m", v, t2w::t2m_types()); },
                 [](const SpeakConfig &c) { return c.t2w.type_t2m; },
                 Facts("t2w").load().tune(1, {"bf16", "f16"})});
    t.push_back({"t2w-type-voc", "", "t2w", "",
                 "Compute type of the vocoder's convolution weights (converted at load; f32 = the reference's math; "
                 "bf16 runs oneDNN's convolution, AMX / AVX512-BF16 picked at run time, and needs a build with oneDNN)",
                 t2w::voc_types(), false, false, true, true,
                 [](SpeakConfig &c, const std::string &v) { c.t2w.type_voc = knob_one_of("t2w-type-voc", v, t2w::voc_types()); },
                 [](const SpeakConfig &c) { return c.t2w.type_voc; },
                 Facts("t2w").load().tune(1, {"f16", "bf16"}).runnable(voc_type_runnable)});
    t.push_back({"t2w-first-window", "", "t2w", "tokens",
                 "Tokens of an utterance's first Token2Wav window, its last 3 look-ahead (28 = the reference's "
                 "25 + 3; 8 = first audio after 5 codes)",
                 {}, false, false, true, true,
                 [](SpeakConfig &c, const std::string &v) {
                     c.t2w.first_window = static_cast<int>(parse_int(v, "--t2w-first-window", t2w::kMinFirstWindow, t2w::kWindowTokens));
                 },
                 [](const SpeakConfig &c) { return std::to_string(c.t2w.first_window); },
                 Facts("t2w").load()});
    t.push_back({"t2w-ramp", "", "t2w", "",
                 "Tokens of the Token2Wav windows after the first, before the reference's 28, e.g. 12,20 (each 8..28, "
                 "its last 3 look-ahead; off = none): with a short --t2w-first-window, windows that grow so that each "
                 "one's audio lasts while the next is made",
                 {}, false, false, true, true,
                 [](SpeakConfig &c, const std::string &v) { c.t2w.ramp = parse_ramp(v); },
                 [](const SpeakConfig &c) { return format_ramp(c.t2w.ramp); },
                 // tried with an 8-token first window (alone the ramp has nothing to ramp from)
                 Facts("t2w").load().tune(2, {"11,15,21"}).with("t2w-first-window", "8")});
    t.push_back({"t2w-cpus", "", "t2w", "", "CPU set of the Token2Wav stage thread, e.g. 0-3", {}, false, false, false,
                 false,
                 [](SpeakConfig &c, const std::string &v) {
                     c.place_t2w.cpus = v.empty() ? std::vector<int>{} : parse_int_list(v, "--t2w-cpus");
                 },
                 [](const SpeakConfig &c) { return format_pu_list(c.place_t2w.cpus); },
                 Facts("t2w").tune(0, {"last-cpu"})});
    return t;
}

}  // namespace

std::string knob_number(double v) {
    std::ostringstream os;
    os.precision(10);
    os << v;
    return os.str();
}

std::string knob_one_of(const std::string &name, const std::string &v, const std::vector<std::string> &allowed) {
    if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return v;
    std::string list;
    for (const auto &a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw_usage(flag(name) + ": '" + v + "' is not allowed; use one of " + list);
}

bool parse_switch(const std::string &value, const std::string &what) {
    const std::string v = trim(value);
    if (v.empty() || v == "1" || v == "true" || v == "on" || v == "yes") return true;
    if (v == "0" || v == "false" || v == "off" || v == "no") return false;
    throw_usage(what + ": '" + value + "' is not a switch value; use true/false (1/0, on/off)");
}

const std::vector<KnobDef> &knob_table() {
    static const std::vector<KnobDef> table = make_table();
    return table;
}

const KnobDef *find_knob(std::string_view name) {
    for (const auto &k : knob_table())
        if (k.name == name) return &k;
    return nullptr;
}

const std::vector<std::string> &knob_stages() {
    static const std::vector<std::string> s = {"run", "pipeline", "llm", "tts", "t2w"};
    return s;
}

nlohmann::json engines_json(const SpeakConfig &c) {
    return {{"models", c.models_dir}, {"llm", c.llm.to_json()}, {"tts", c.tts.to_json()}, {"t2w", c.t2w.to_json()},
            {"family", {{"speaker_file", c.family.speaker_file}, {"temp", c.family.temp}}}};
}

std::vector<std::string> knobs_where(const std::function<bool(const KnobDef &)> &pred) {
    std::vector<std::string> v;
    for (const auto &k : knob_table())
        if (pred(k)) v.push_back(k.name);
    return v;
}

std::vector<std::string> knob_names() {
    std::vector<std::string> v;
    for (const auto &k : knob_table()) v.push_back(k.name);
    return v;
}

SpeakConfig default_config() {
    SpeakConfig c;
    c.pipeline.depths = {pipe::PipelineConfig::kDefaultDepth, pipe::PipelineConfig::kDefaultDepth};
    return c;
}

void apply_knob(SpeakConfig &cfg, const std::string &name, const std::string &value) {
    const KnobDef *k = find_knob(name);
    if (!k) {
        std::string list;
        for (const auto &n : knob_names()) list += (list.empty() ? "" : ", ") + n;
        throw_usage("'" + name + "' is not a speak knob; the knobs are: " + list);
    }
    k->set(cfg, value);
}

void apply_knobs(SpeakConfig &cfg, const std::vector<std::pair<std::string, std::string>> &knobs) {
    for (const auto &[k, v] : knobs) apply_knob(cfg, k, v);
}

std::string knob_value_text(const nlohmann::json &v, const std::string &what) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
    if (v.is_number()) return knob_number(v.get<double>());
    throw_usage(what + " must be a string, number or boolean");
}

std::vector<std::pair<std::string, std::string>> knobs_from_json(nlohmann::json j, const std::string &where) {
    if (!j.is_object()) throw_usage(where + ": want a JSON object of knobs, e.g. {\"d1\": 4}");
    // `rtf tune` writes {"knobs": {...}, ...}: accept that shape too.
    if (j.contains("knobs") && j["knobs"].is_object()) j = j["knobs"];
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto &[k, v] : j.items()) {
        if (!find_knob(k)) {
            std::string list;
            for (const auto &n : knob_names()) list += (list.empty() ? "" : ", ") + n;
            throw_usage(where + ": '" + k + "' is not a speak knob; the knobs are: " + list);
        }
        out.emplace_back(k, knob_value_text(v, where + ": '" + k + "'"));
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> read_knob_file(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw_usage("--config: cannot read " + path);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception &e) {
        throw_usage("--config " + path + ": not valid JSON (" + e.what() + ")");
    }
    return knobs_from_json(std::move(j), "--config " + path);
}

void apply_knob_file(SpeakConfig &cfg, const std::string &path) {
    for (const auto &[k, v] : read_knob_file(path)) {
        try {
            apply_knob(cfg, k, v);
        } catch (const Error &e) {
            throw_usage("--config " + path + ": " + e.what());
        }
    }
}

void finalize(SpeakConfig &cfg) {
    if (!cfg.text.empty()) lm::check_text(cfg.text, cfg.text_file.empty() ? "--text" : "--text-file " + cfg.text_file);
    if (!cfg.prompt.empty()) lm::check_text(cfg.prompt, "--prompt");
    // A smaller context than the default batch is a user's choice of --*-ctx: follow it.
    for (auto *pl : {&cfg.llm.placement, &cfg.tts.placement}) pl->n_batch = std::min(pl->n_batch, pl->n_ctx);
    cfg.validate();
}

std::vector<std::string> run_knob_names() {
    return knobs_where([](const KnobDef &k) { return !k.input && !k.facts.fixed_at_load; });
}

nlohmann::json knobs_json(const SpeakConfig &cfg) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto &k : knob_table()) j[k.name] = k.get(cfg);
    return j;
}

}  // namespace rtf::speak
