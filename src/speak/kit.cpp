#include "speak/kit.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "models/gguf/layout-check.h"
#include "models/gguf/pockettts-layout.h"
#include "models/gguf/qwen3tts-layout.h"
#include "models/t2w/voice.h"

namespace rtf::speak {

namespace fs = std::filesystem;

namespace {

// The first file in `dir` whose name starts with `prefix` and ends in .gguf, skipping
// names that contain `exclude` ("" = none).
std::string find_gguf(const fs::path &dir, const std::string &prefix, const std::string &exclude) {
    std::vector<std::string> hits;
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(dir, ec)) {
        auto name = e.path().filename().string();
        if (!e.is_regular_file() || name.rfind(prefix, 0) != 0 || e.path().extension() != ".gguf") continue;
        if (!exclude.empty() && name.find(exclude) != std::string::npos) continue;
        hits.push_back(e.path().string());
    }
    std::sort(hits.begin(), hits.end());
    return hits.empty() ? std::string() : hits.front();
}

void require_file(const std::string &path, const std::string &dir, const std::string &what) {
    if (path.empty() || !fs::is_regular_file(path)) {
        throw_usage("kit " + dir + " has no " + what + (path.empty() ? "" : " (" + path + ")") +
                    "; expected the reference layout (see `rtf twin --help`, or README \"Real model files\")");
    }
}

// rtf-kit.json's path for `role` ("" when there is no manifest or no such file in it).
std::string manifest_path(const fs::path &root, const std::string &role) {
    const fs::path manifest = root / "rtf-kit.json";
    if (!fs::is_regular_file(manifest)) return "";
    try {
        std::ifstream in(manifest);
        const auto j = nlohmann::json::parse(in);
        if (j.contains("files") && j["files"].is_array())
            for (const auto &f : j["files"])
                if (f.is_object() && f.value("role", "") == role && !f.value("path", "").empty())
                    return (root / f.value("path", "")).string();
    } catch (const std::exception &) {
        // resolve_kit reports a broken manifest; here the default path is tried instead
    }
    return "";
}

std::string default_apm_path(const fs::path &root) {
    std::string p = manifest_path(root, "apm");
    if (p.empty()) p = (root / "audio" / "MiniCPM-o-4_5-audio-F16.gguf").string();
    return p;
}

}  // namespace

std::string resolve_apm(const std::string &dir) {
    if (dir.empty()) throw_setting("models", "no kit directory given (give a kit directory; `rtf twin --out DIR` makes one)");
    if (!fs::is_directory(dir)) throw_setting("models", dir + " is not a directory");
    const std::string p = default_apm_path(dir);
    if (!fs::is_regular_file(p))
        throw_usage("kit " + dir + " has no audio encoder (" + p +
                    "); a twin kit gains one with `rtf twin --only apm --scale <its scale> --out " + dir + "`");
    return p;
}

nlohmann::json Kit::to_json() const {
    nlohmann::json v = nlohmann::json::array();
    for (const auto &[name, path] : voices) v.push_back({{"name", name}, {"path", path}});
    if (family != "minicpmo45")
        return {{"dir", dir}, {"family", family}, {"backbone", backbone}, {"mmproj", mmproj}, {"voices", v}, {"twin", is_twin}};
    return {{"dir", dir}, {"family", family}, {"llm", llm}, {"tts", tts}, {"projector", projector}, {"token2wav", t2w_dir},
            {"apm", apm},         {"voices", v},          {"twin", is_twin}};
}

void require_minicpmo45(const Kit &k, const std::string &what) {
    if (k.family == "minicpmo45") return;
    throw_usage("kit " + k.dir + " is a " + k.family + " kit: " + what +
                " runs MiniCPM-o 4.5 kits only so far (rtf speak and rtf demo speak " + k.family + " kits)");
}

Kit resolve_kit(const std::string &dir, bool check_layouts) {
    if (dir.empty()) throw_setting("models", "no kit directory given (give a kit directory; `rtf twin --out DIR` makes one)");
    fs::path root(dir);
    if (!fs::is_directory(root)) throw_setting("models", dir + " is not a directory");
    Kit k;
    k.dir = dir;
    fs::path manifest = root / "rtf-kit.json";
    if (fs::is_regular_file(manifest)) {
        std::ifstream in(manifest);
        try {
            k.twin = nlohmann::json::parse(in);
        } catch (const std::exception &e) {
            throw_usage(manifest.string() + " is not valid JSON: " + e.what());
        }
        k.is_twin = true;
        if (k.twin.contains("files") && k.twin["files"].is_array()) {
            for (const auto &f : k.twin["files"]) {
                std::string role = f.value("role", ""), path = f.value("path", "");
                if (path.empty()) continue;
                std::string full = (root / path).string();
                if (role == "llm") k.llm = full;
                if (role == "tts") k.tts = full;
                if (role == "projector") k.projector = full;
                if (role == "encoder") k.t2w_dir = (root / path).parent_path().string();
            }
        }
    }
    // A libmtmd family's kit (pockettts-layout.h, qwen3tts-layout.h): its manifest says so, or it has
    // the family's files and no MiniCPM-o LLM.
    struct MtmdFamily {
        const char *name, *backbone, *mmproj;
    };
    const MtmdFamily families[] = {{"pocket-tts", gguf::pockettts::kBackboneFile, gguf::pockettts::kMmprojFile},
                                   {"qwen3-tts", gguf::qwen3tts::kBackboneFile, gguf::qwen3tts::kMmprojFile}};
    const MtmdFamily *fam = nullptr;
    for (const auto &f : families)
        if (k.twin.value("family", "") == f.name ||
            (!k.is_twin && fs::is_regular_file(root / f.backbone) && find_gguf(root, "MiniCPM-o-4_5-", "").empty()))
            fam = &f;
    if (fam) {
        k.family = fam->name;
        k.backbone = manifest_path(root, "backbone");
        k.mmproj = manifest_path(root, "mmproj");
        if (k.backbone.empty()) k.backbone = (root / fam->backbone).string();
        if (k.mmproj.empty()) k.mmproj = (root / fam->mmproj).string();
        require_file(k.backbone, dir, std::string(fam->name) + " backbone (" + fam->backbone + ")");
        require_file(k.mmproj, dir, std::string(fam->name) + " mmproj (" + fam->mmproj + ")");
        if (check_layouts) {
            gguf::require_layout(k.backbone, gguf::Role::backbone);
            gguf::require_layout(k.mmproj, gguf::Role::mmproj);
        }
        // Its voices: reference recordings voices/NAME.wav (.mp3, .flac), cloned by the speaker encoder.
        std::error_code ec;
        for (const auto &e : fs::directory_iterator(root / "voices", ec)) {
            const std::string ext = e.path().extension().string(), name = e.path().stem().string();
            if (!e.is_regular_file() || (ext != ".wav" && ext != ".mp3" && ext != ".flac")) continue;
            if (!t2w::valid_voice_name(name))
                throw_usage("kit " + dir + ": voices/" + e.path().filename().string() +
                            ": not a voice name (1-32 of a-z, 0-9, '_', '-'; not 'default')");
            k.voices.emplace_back(name, e.path().string());
        }
        std::sort(k.voices.begin(), k.voices.end());
        return k;
    }
    if (k.llm.empty()) k.llm = find_gguf(root, "MiniCPM-o-4_5-", "");
    if (k.tts.empty()) k.tts = find_gguf(root / "tts", "MiniCPM-o-4_5-tts-", "");
    if (k.projector.empty()) k.projector = (root / "tts" / "MiniCPM-o-4_5-projector-F16.gguf").string();
    if (k.t2w_dir.empty()) k.t2w_dir = (root / "token2wav-gguf").string();
    k.apm = default_apm_path(root);
    if (!fs::is_regular_file(k.apm)) k.apm.clear();

    require_file(k.llm, dir, "LLM GGUF (MiniCPM-o-4_5-<TYPE>.gguf)");
    require_file(k.tts, dir, "TTS GGUF (tts/MiniCPM-o-4_5-tts-<TYPE>.gguf)");
    require_file(k.projector, dir, "projector GGUF (tts/MiniCPM-o-4_5-projector-F16.gguf)");
    for (const char *f : {"encoder", "flow_matching", "flow_extra", "hifigan2", "prompt_cache"}) {
        require_file((fs::path(k.t2w_dir) / (std::string(f) + ".gguf")).string(), dir,
                     std::string("token2wav-gguf/") + f + ".gguf");
    }
    // More voices: voices/NAME/prompt_cache.gguf (a folder without one is not a voice).
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(root / "voices", ec)) {
        const std::string name = e.path().filename().string();
        if (!e.is_directory() || !fs::is_regular_file(e.path() / "prompt_cache.gguf")) continue;
        if (!t2w::valid_voice_name(name))
            throw_usage("kit " + dir + ": voices/" + name + " is not a voice name (1-32 of a-z, 0-9, '_', '-'; not 'default')");
        k.voices.emplace_back(name, (e.path() / "prompt_cache.gguf").string());
    }
    std::sort(k.voices.begin(), k.voices.end());
    if (check_layouts) {
        using gguf::Role;
        for (const auto &v : k.voices) gguf::require_layout(v.second, Role::prompt_cache);
        gguf::require_layout(k.llm, Role::llm);
        gguf::require_layout(k.tts, Role::tts);
        gguf::require_layout(k.projector, Role::projector);
        const std::pair<const char *, Role> t2w[] = {{"encoder", Role::encoder},
                                                     {"flow_matching", Role::flow_matching},
                                                     {"flow_extra", Role::flow_extra},
                                                     {"hifigan2", Role::hifigan2},
                                                     {"prompt_cache", Role::prompt_cache}};
        for (const auto &[f, role] : t2w) {
            gguf::require_layout((fs::path(k.t2w_dir) / (std::string(f) + ".gguf")).string(), role);
        }
    }
    return k;
}

}  // namespace rtf::speak
