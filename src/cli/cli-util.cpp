#include "cli/cli-util.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace rtf::cli {

void write_json(const nlohmann::json &j, const std::string &path) {
    if (path == "-") {
        std::cout << j.dump(2) << "\n";
        return;
    }
    std::ofstream out(path);
    if (!out) throw_setup("cannot write JSON to " + path);
    out << j.dump(2) << "\n";
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

}  // namespace rtf::cli
