#include "speak/speak-config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/topology.h"

namespace rtf::speak {

pipe::StageSpec stage_spec(const char *name, int threads, const StagePlacement &p, const std::string &device) {
    pipe::StageSpec s;
    s.name = name;
    s.n_threads = threads;
    s.cpus = p.cpus;
    s.numa_node = p.numa_node;
    s.device = device;
    return s;
}

void SpeakConfig::validate() const {
    if (!(first_audio_wait_max_ms > 0)) throw_usage("first_audio_wait_max_ms must be > 0 ms");
    if (models_dir.empty()) throw_setting("models", "a kit directory is required (make one with `rtf twin`)");
    if (prompt.empty() == text.empty()) {
        throw_usage(prompt.empty() ? "give the input with -p/--prompt, --text or --text-file"
                                   : "-p/--prompt and --text/--text-file exclude each other; give one");
    }
    if (max_audio_s < 0) throw_setting("max-audio-s", "must be >= 0 (0 = no cap)");
    if (!(speed >= 0.25 && speed <= 4.0)) throw_setting("speed", std::to_string(speed) + " is out of range (0.25..4)");
    if (min_audio_s < 0) throw_setting("min-audio-s", "must be >= 0 (0 = the reference's sampling)");
    if (max_audio_s > 0 && min_audio_s > max_audio_s)
        throw_setting("min-audio-s", std::to_string(min_audio_s) + " must not exceed max-audio-s (" +
                    std::to_string(max_audio_s) + ")");
    if (!(twin_text_rate >= 0 && twin_text_rate <= 1000))
        throw_setting("twin-text-rate", "must be in [0, 1000] text tokens per second of audio (0 = no cap)");
    if (llm.llm_step < 1) throw_setting("llm-step", "must be >= 1 (reference 10)");
    if (llm.max_tokens < 0) throw_setting("max-tokens", "must be >= 0 (0 = no cap)");
    if (family.first_frames < 1 || family.first_frames > 1000) throw_setting("family-first-frames", "must be in 1..1000 frames");
    if (family.frames < 1 || family.frames > 1000) throw_setting("family-frames", "must be in 1..1000 frames");
    if (!(family.temp >= 0 && family.temp <= 10)) throw_setting("family-temp", "must be in [0, 10] (0 = the model's)");
    tts.placement.validate("tts");
    llm.placement.validate("llm");
    t2w.validate();
    pipeline.validate(3);
}

nlohmann::json SpeakConfig::to_json() const {
    auto place = [](const StagePlacement &p) {
        return nlohmann::json{{"cpus", format_pu_list(p.cpus)}, {"numa_node", p.numa_node}};
    };
    nlohmann::json j;
    j["models_dir"] = models_dir;
    j["input"] = prompt.empty() ? nlohmann::json{{"text", text}} : nlohmann::json{{"prompt", prompt}};
    j["llm"] = llm.to_json();
    j["tts"] = tts.to_json();
    j["t2w"] = t2w.to_json();
    j["pipeline"] = pipeline.to_json();
    j["placement"] = {{"llm", place(place_llm)}, {"tts", place(place_tts)}, {"t2w", place(place_t2w)}};
    j["max_audio_s"] = max_audio_s;
    j["min_audio_s"] = min_audio_s;
    j["twin_text_rate"] = twin_text_rate;
    j["first_audio_priority"] = first_audio_priority;
    j["voice"] = voice.empty() ? "default" : voice;
    j["speed"] = speed;
    j["family"] = {{"speaker_file", family.speaker_file}, {"first_frames", family.first_frames},
                   {"frames", family.frames}, {"temp", family.temp}};
    return j;
}

}  // namespace rtf::speak
