#include "speak/family.h"

#include "core/error.h"
#include "speak/knobs.h"
#include "speak/pocket-stages.h"
#include "speak/qwen3-stages.h"

namespace rtf::speak {

std::unique_ptr<FamilyEngines> load_family(const Kit &kit, const SpeakConfig &cfg) {
    if (kit.family == "pocket-tts") return std::make_unique<PocketFamily>(kit, cfg);
    if (kit.family == "qwen3-tts") return std::make_unique<Qwen3Family>(kit, cfg);
    throw_usage("kit " + kit.dir + ": no engines for the family '" + kit.family +
                "' in this build (minicpmo45, pocket-tts, qwen3-tts)");
}

std::string family_voice(const SpeakConfig &cfg, const std::string &load_speaker, const std::vector<std::string> &loaded) {
    if (cfg.family.speaker_file != load_speaker)
        throw_setting("speaker-file", "is fixed when the engines load (" + (load_speaker.empty() ? std::string("none") : load_speaker) +
                                          "); load them again for another default voice, or name one of the kit's with --voice");
    const std::string voice = cfg.voice.empty() ? "default" : cfg.voice;
    std::string names;
    for (const auto &n : loaded) {
        if (n == voice) return voice;
        names += (names.empty() ? "" : ", ") + n;
    }
    throw_setting("voice", "no voice '" + voice + "' in this kit (" + names + "; a Pocket TTS / Qwen3-TTS kit's voices are "
                           "its voices/NAME.wav recordings, and default)");
}

bool family_reads_knob(const std::string &name) {
    static const char *const kRead[] = {"voice", "tts-threads", "tts-threads-batch", "tts-poll", "tts-fa",     "tts-kv-type",
                                        "tts-ctx",     "tts-no-mmap",       "tts-cpus", "tts-device", "t2w-threads-voc",
                                        "t2w-cpus",    "d1",                "schedule"};
    if (name.rfind("family-", 0) == 0 || name == "speaker-file") return true;
    for (const char *k : kRead)
        if (name == k) return true;
    // The run's own knobs (input, work size, seed, output) apply to every family.
    for (const auto &k : knob_table())
        if (k.name == name) return k.input || k.facts.stage == "run";
    return false;
}

}  // namespace rtf::speak
