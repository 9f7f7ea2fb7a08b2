#pragma once
// Small helpers shared by the subcommands: JSON output, human-readable sizes.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rtf::cli {

// Writes `j` pretty-printed to `path` ("-" = stdout). Throws rtf::Error(Setup) naming the path.
void write_json(const nlohmann::json &j, const std::string &path);

// The LM stages a command runs on (`--stage llm,tts` with `--models KIT` or `--model FILE`):
// exactly one of the two sources, a non-empty list of llm / tts, one stage for a single file.
// Usage errors name `cmd` and the flag.
std::vector<std::string> lm_stages(const std::string &cmd, const std::string &list, const std::string &models,
                                   const std::string &model);

std::string human_bytes(double bytes);

}  // namespace rtf::cli
