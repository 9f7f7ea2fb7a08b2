#pragma once
// Small helpers shared by the subcommands: JSON output, human-readable sizes.
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace rtf::cli {

// Writes `j` pretty-printed to `path` ("-" = stdout). Throws rtf::Error(Setup) naming the path.
void write_json(const nlohmann::json &j, const std::string &path);

std::string human_bytes(double bytes);

}  // namespace rtf::cli
