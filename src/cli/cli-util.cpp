#include "cli/cli-util.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/parse.h"

namespace rtf::cli {

// Invalid UTF-8 (a twin's random reply text, a token split mid-character) is replaced by
// U+FFFD rather than aborting the write: results must never be lost to a text field.
void write_json(const nlohmann::json &j, const std::string &path) {
    if (path == "-") {
        std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        return;
    }
    std::ofstream out(path);
    if (!out) throw_setup("cannot write JSON to " + path);
    out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    if (!out) throw_setup("write failed for " + path);
}

std::string human_bytes(double bytes) {
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
    return buf;
}

std::vector<std::string> lm_stages(const std::string &cmd, const std::string &list, const std::string &models,
                                   const std::string &model) {
    if (models.empty() == model.empty()) throw_usage(cmd + ": give exactly one of --models KIT or --model FILE");
    std::vector<std::string> stages;
    for (auto s : split(list, ',')) {
        s = trim(s);
        if (s != "llm" && s != "tts") throw_usage("--stage: '" + s + "' is not one of llm, tts");
        stages.push_back(s);
    }
    if (stages.empty()) throw_usage("--stage: empty list (allowed: llm, tts)");
    if (!model.empty() && stages.size() != 1) throw_usage("--model FILE needs exactly one --stage (llm or tts)");
    return stages;
}

}  // namespace rtf::cli
