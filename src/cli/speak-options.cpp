#include "cli/speak-options.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/parse.h"

namespace rtf::cli {

namespace {
void add_placement(CLI::App *sub, const std::string &p, lm::ModelPlacement &pl, bool &no_mmap, bool &no_host,
                   std::string &cpus) {
    sub->add_option("--" + p + "-device", pl.device,
                    "Backend device for the " + p + " (a name from `rtf devices`, or auto)")
        ->default_str(pl.device)->group(p);
    sub->add_option("--" + p + "-ngl", pl.n_gpu_layers, "Layers of the " + p + " on the device (-1 = all)")
        ->default_str("-1")->group(p);
    sub->add_option("--" + p + "-threads", pl.n_threads, "Decode threads of the " + p + " (0 = all CPUs)")
        ->default_str("0")->check(CLI::Range(0, 4096))->group(p);
    sub->add_option("--" + p + "-threads-batch", pl.n_threads_batch,
                    "Batch/prefill threads of the " + p + " (0 = all CPUs)")
        ->default_str("0")->check(CLI::Range(0, 4096))->group(p);
    sub->add_option("--" + p + "-fa", pl.flash_attn, "Flash attention for the " + p + ": auto, on, off")
        ->default_str(pl.flash_attn)->check(CLI::IsMember({"auto", "on", "off"}))->group(p);
    sub->add_option("--" + p + "-kv-type", pl.kv_type,
                    "KV cache type of the " + p + ": f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1")
        ->default_str(pl.kv_type)
        ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}))
        ->group(p);
    sub->add_option("--" + p + "-ctx", pl.n_ctx, "Context length of the " + p + ", tokens")
        ->default_str(std::to_string(pl.n_ctx))->check(CLI::Range(64u, 1u << 20))->group(p);
    sub->add_flag("--" + p + "-no-mmap", no_mmap, "Read the " + p + " weights into memory instead of mmap")->group(p);
    sub->add_flag("--" + p + "-no-host-buffer", no_host,
                  "Bypass the pinned host buffer for the " + p + " weights")->group(p);
    sub->add_option("--" + p + "-cpus", cpus, "CPU set of the " + p + " stage thread and its compute threads, e.g. 0-3,6")
        ->group(p);
}
}  // namespace

void add_speak_options(CLI::App *sub, SpeakOptions &o, bool with_input) {
    auto &c = o.cfg;
    if (with_input) {
        sub->add_option("--models", c.models_dir, "Kit directory: real GGUF files or a twin (`rtf twin`)")
            ->group("input");
        sub->add_option("-p,--prompt", c.prompt, "Prompt: the LLM answers it, the answer is spoken")->group("input");
        sub->add_option("--text", c.text, "Text to speak as the reply (no LLM sampling; the LLM only "
                                          "computes the hidden states the TTS conditions on)")
            ->group("input");
        sub->add_option("--text-file", o.text_file, "Read --text from FILE (UTF-8)")->group("input");
    }
    sub->add_option("--max-audio-s", c.max_audio_s,
                    "Stop after this much audio, seconds (25 audio tokens per second; 0 = until EOS). "
                    "Fixes the work size: twins rarely emit EOS")
        ->default_str("0")->group("work size");
    sub->add_option("--min-audio-s", c.min_audio_s,
                    "The TTS may not end the utterance (EOS masked) before this much audio, seconds; with "
                    "--min-audio-s = --max-audio-s the work size is exact (twins' EOS rate is arbitrary). "
                    "0 = the reference's sampling")
        ->default_str("0")->group("work size");
    sub->add_option("--twin-text-rate", c.twin_text_rate,
                    "Twin kits, prompt mode, with --max-audio-s: cut the LLM's reply at this many text tokens per "
                    "second of audio (a random LLM never ends its turn; real models speak ~3-5/s). 0 = off; "
                    "real kits are never capped")
        ->default_str("4")->group("work size");
    sub->add_option("--max-tokens", c.llm.max_tokens, "Cap on the LLM's reply, tokens (0 = until EOS/context)")
        ->default_str("0")->group("work size");
    sub->add_option("--llm-step", c.llm.llm_step, "Text tokens per LLM -> TTS hand-off (reference 10)")
        ->default_str("10")->check(CLI::Range(1, 4096))->group("pipeline");
    sub->add_option("--schedule", o.schedule,
                    "pipelined: stages overlap through queues; lockstep: one item in flight (D1 = D2 = 1); "
                    "sequential: each stage finishes the utterance before the next starts (the baseline)")
        ->default_str(o.schedule)->check(CLI::IsMember({"pipelined", "lockstep", "sequential"}))->group("pipeline");
    sub->add_option("--d1", o.d1, "Depth of queue q1 (LLM -> TTS), items (pipelined)")
        ->default_str("16")->check(CLI::Range(1, 1 << 20))->group("pipeline");
    sub->add_option("--d2", o.d2, "Depth of queue q2 (TTS -> T2W), items (pipelined)")
        ->default_str("16")->check(CLI::Range(1, 1 << 20))->group("pipeline");
    sub->add_option("--jitter-ms", c.pipeline.jitter_ms, "Playback jitter buffer for the starvation figure, ms")
        ->default_str("0")->check(CLI::Range(0.0, 1e9))->group("pipeline");
    sub->add_flag("--no-profile", o.no_profile, "Turn the per-item profiler off (headline metrics stay)")
        ->group("pipeline");
    sub->add_option("--seed", c.llm.seed, "Sampling seed of the LLM and the TTS")->default_str("42")->group("sampling");
    sub->add_flag("--greedy", c.llm.greedy, "Greedy (argmax) sampling in LLM and TTS: for equivalence checks")
        ->group("sampling");
    add_placement(sub, "llm", c.llm.placement, o.no_mmap_llm, o.no_host_llm, o.llm_cpus);
    add_placement(sub, "tts", c.tts.placement, o.no_mmap_tts, o.no_host_tts, o.tts_cpus);
    sub->add_option("--t2w-threads-t2m", c.t2w.threads_t2m, "CPU threads of token2mel (encoder + flow matching)")
        ->default_str(std::to_string(c.t2w.threads_t2m))->check(CLI::Range(1, 4096))->group("t2w");
    sub->add_option("--t2w-threads-voc", c.t2w.threads_voc, "CPU threads of the HiFT vocoder")
        ->default_str(std::to_string(c.t2w.threads_voc))->check(CLI::Range(1, 4096))->group("t2w");
    sub->add_option("--t2w-device-t2m", c.t2w.device_t2m, "Backend device of token2mel (`rtf devices`)")
        ->default_str(c.t2w.device_t2m)->group("t2w");
    sub->add_option("--t2w-device-voc", c.t2w.device_voc, "Backend device of the vocoder (`rtf devices`)")
        ->default_str(c.t2w.device_voc)->group("t2w");
    sub->add_option("--flow-steps", c.t2w.flow_steps,
                    "Euler steps of flow matching (0 = the prompt cache's, 5 in the official file)")
        ->default_str("0")->check(CLI::Range(0, 1000))->group("t2w");
    sub->add_flag("--no-cfg", o.no_cfg, "Classifier-free guidance off (half the DiT work, different audio)")
        ->group("t2w");
    sub->add_option("--t2w-cpus", o.t2w_cpus, "CPU set of the Token2Wav stage thread, e.g. 0-3")->group("t2w");
}

speak::SpeakConfig make_speak_config(SpeakOptions &o) {
    auto c = o.cfg;
    if (!o.text_file.empty()) {
        if (!c.text.empty()) throw_usage("--text and --text-file exclude each other; give one");
        std::ifstream in(o.text_file, std::ios::binary);
        if (!in) throw_usage("--text-file: cannot read " + o.text_file);
        std::stringstream ss;
        ss << in.rdbuf();
        c.text = ss.str();
        if (trim(c.text).empty()) throw_usage("--text-file: " + o.text_file + " is empty");
    }
    if (!c.text.empty()) lm::check_text(c.text, o.text_file.empty() ? "--text" : "--text-file " + o.text_file);
    if (!c.prompt.empty()) lm::check_text(c.prompt, "--prompt");
    c.pipeline.schedule = pipe::parse_schedule(o.schedule, "--schedule");
    c.pipeline.depths = {o.d1, o.d2};
    c.pipeline.profile = !o.no_profile;
    c.llm.placement.mmap = !o.no_mmap_llm;
    c.llm.placement.host_buffer = !o.no_host_llm;
    c.tts.placement.mmap = !o.no_mmap_tts;
    c.tts.placement.host_buffer = !o.no_host_tts;
    c.t2w.cfg = !o.no_cfg;
    c.tts.seed = c.llm.seed;
    c.tts.min_codes_per_turn = static_cast<int64_t>(std::ceil(c.min_audio_s * 25.0));
    c.tts.greedy = c.llm.greedy;
    if (!o.llm_cpus.empty()) c.place_llm.cpus = c.llm.placement.cpus = parse_int_list(o.llm_cpus, "--llm-cpus");
    if (!o.tts_cpus.empty()) c.place_tts.cpus = c.tts.placement.cpus = parse_int_list(o.tts_cpus, "--tts-cpus");
    if (!o.t2w_cpus.empty()) c.place_t2w.cpus = parse_int_list(o.t2w_cpus, "--t2w-cpus");
    // A smaller context than the default batch is a user's choice of --*-ctx: follow it.
    for (auto *pl : {&c.llm.placement, &c.tts.placement}) pl->n_batch = std::min(pl->n_batch, pl->n_ctx);
    c.validate();
    return c;
}

}  // namespace rtf::cli
