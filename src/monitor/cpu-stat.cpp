#include "monitor/cpu-stat.h"

#include <fstream>
#include <limits>
#include <sstream>

#include "core/error.h"

namespace rtf::mon {

std::vector<CpuTimes> parse_proc_stat(const std::string &text) {
    std::vector<CpuTimes> rows;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("cpu", 0) != 0) continue;
        std::istringstream ls(line);
        CpuTimes t;
        ls >> t.name;
        if (t.name != "cpu") {
            try {
                size_t pos = 0;
                t.index = std::stoi(t.name.substr(3), &pos);
                if (pos != t.name.size() - 3) throw std::invalid_argument("suffix");
            } catch (const std::exception &) {
                continue;  // not a cpu row (defensive: no such rows exist today)
            }
        }
        uint64_t v[10] = {};
        int n = 0;
        while (n < 10 && ls >> v[n]) ++n;
        if (n < 4) throw_runtime("/proc/stat: malformed row '" + line + "' (need at least 4 counters)");
        // user nice system idle iowait irq softirq steal guest guest_nice
        t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        t.idle = v[3] + v[4];
        rows.push_back(t);
    }
    return rows;
}

std::vector<CpuTimes> read_proc_stat(const std::string &path) {
    std::ifstream f(path);
    if (!f) throw_runtime("cannot read " + path + " (CPU sampler)");
    std::stringstream ss;
    ss << f.rdbuf();
    return parse_proc_stat(ss.str());
}

std::vector<CpuUtil> cpu_utilisation(const std::vector<CpuTimes> &before, const std::vector<CpuTimes> &after) {
    std::vector<CpuUtil> out;
    for (const auto &b : after) {
        for (const auto &a : before) {
            if (a.name != b.name) continue;
            CpuUtil u;
            u.name = b.name;
            u.index = b.index;
            // Counters are monotonic; guard against a wrapped/reset counter anyway.
            double busy = b.busy >= a.busy ? static_cast<double>(b.busy - a.busy) : 0.0;
            double idle = b.idle >= a.idle ? static_cast<double>(b.idle - a.idle) : 0.0;
            u.busy_pct = busy + idle > 0 ? 100.0 * busy / (busy + idle) : std::numeric_limits<double>::quiet_NaN();
            out.push_back(u);
            break;
        }
    }
    return out;
}

}  // namespace rtf::mon
