#include "speak/voices.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace rtf::speak {

VoiceSet::VoiceSet(const Kit &kit, std::shared_ptr<const t2w::T2wModel> model) : model_(std::move(model)) {
    files_.emplace_back("default", model_->prompt_file());
    for (const auto &v : kit.voices) files_.push_back(v);
    if (model_->voice()) loaded_["default"] = model_->voice();
}

std::vector<std::string> VoiceSet::names() const {
    std::vector<std::string> n;
    for (const auto &f : files_) n.push_back(f.first);
    return n;
}

bool VoiceSet::has(const std::string &name) const {
    for (const auto &f : files_)
        if (f.first == name) return true;
    return false;
}

std::shared_ptr<const t2w::Voice> VoiceSet::get(const std::string &name_in) {
    const std::string name = name_in.empty() ? "default" : name_in;
    std::string path;
    for (const auto &f : files_)
        if (f.first == name) path = f.second;
    if (path.empty()) {
        std::string list;
        for (const auto &f : files_) list += (list.empty() ? "" : ", ") + f.first;
        throw_setting("voice", "unknown voice '" + name + "' (this kit has: " + list + ")");
    }
    // Loaded under the lock: two streams asking for a new voice at once load it once.
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = loaded_.find(name); it != loaded_.end()) return it->second;
    auto v = model_->load_voice(path, name);  // throws before anything is kept
    loaded_[name] = v;
    return v;
}

nlohmann::json VoiceSet::to_json() const {
    std::lock_guard<std::mutex> l(mu_);
    nlohmann::json a = nlohmann::json::array();
    for (const auto &[name, path] : files_)
        a.push_back({{"name", name}, {"path", path}, {"default", name == "default"}, {"loaded", loaded_.count(name) != 0}});
    return a;
}

}  // namespace rtf::speak
