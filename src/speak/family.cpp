#include "speak/family.h"

#include "core/error.h"
#include "speak/pocket-stages.h"
#include "speak/qwen3-stages.h"

namespace rtf::speak {

std::unique_ptr<FamilyEngines> load_family(const Kit &kit, const SpeakConfig &cfg) {
    if (kit.family == "pocket-tts") return std::make_unique<PocketFamily>(kit, cfg);
    if (kit.family == "qwen3-tts") return std::make_unique<Qwen3Family>(kit, cfg);
    throw_usage("kit " + kit.dir + ": no engines for the family '" + kit.family +
                "' in this build (minicpmo45, pocket-tts, qwen3-tts)");
}

}  // namespace rtf::speak
