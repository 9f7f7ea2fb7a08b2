#pragma once
// The voices a kit offers (kit.h: "default" = token2wav-gguf/prompt_cache.gguf, then
// voices/NAME/prompt_cache.gguf), each loaded onto a Token2Wav model the first time it is
// asked for and kept: a server's slots share one VoiceSet, so a voice costs its file once
// (MiniCPM-o: ~27 MB tiny, ~200 MB at full shape) and a switch costs only the stream's
// upload (T2wStream::set_voice).
//
//   VoiceSet vs(kit, model);
//   auto v = vs.get("twin-a");               // loads on first use; Usage error lists the names
//   stream.set_voice(v);
//
// Thread-safe: get() may be called from any number of threads.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/t2w/t2w-model.h"
#include "models/t2w/voice.h"
#include "speak/kit.h"

namespace rtf::speak {

class VoiceSet {
public:
    VoiceSet(const Kit &kit, std::shared_ptr<const t2w::T2wModel> model);

    // "default" first, then the kit's voices by name.
    std::vector<std::string> names() const;
    bool has(const std::string &name) const;
    // The voice `name` ("" = "default"), loaded on first use. Throws rtf::Error(Usage)
    // "--voice: unknown voice 'x' (this kit has: default, twin-a, twin-b)" for another name,
    // or naming the file and tensor of a voice that does not fit the model.
    std::shared_ptr<const t2w::Voice> get(const std::string &name);
    // [{"name", "path", "default", "loaded"}] in names() order.
    nlohmann::json to_json() const;

private:
    std::shared_ptr<const t2w::T2wModel> model_;
    std::vector<std::pair<std::string, std::string>> files_;  // name -> prompt_cache.gguf
    mutable std::mutex mu_;
    std::map<std::string, std::shared_ptr<const t2w::Voice>> loaded_;
};

}  // namespace rtf::speak
