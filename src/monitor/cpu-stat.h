#pragma once
// CPU utilisation from /proc/stat (proc(5)): per-core and whole-machine busy share between
// two snapshots.
//
//   auto a = read_proc_stat(); ... auto b = read_proc_stat();
//   auto u = cpu_utilisation(a, b);   // u[0] = "cpu" (all), then cpu0, cpu1, ...
//
// busy = user + nice + system + irq + softirq + steal; idle = idle + iowait (guest time is
// already inside user/nice, so it is not added again). Lines that are not "cpu*" rows are
// ignored; a malformed cpu row throws rtf::Error(Runtime) naming the line.
// The figures are machine-wide: other processes' load counts too (that is the point when
// judging contention; compare with an idle baseline when judging rtfkit alone).
#include <cstdint>
#include <string>
#include <vector>

namespace rtf::mon {

struct CpuTimes {
    std::string name;  // "cpu" (aggregate) or "cpuN"
    int index = -1;    // N, -1 for the aggregate row
    uint64_t busy = 0, idle = 0;  // jiffies
};

std::vector<CpuTimes> parse_proc_stat(const std::string &text);
// Reads /proc/stat (throws rtf::Error(Runtime) when it cannot).
std::vector<CpuTimes> read_proc_stat(const std::string &path = "/proc/stat");

struct CpuUtil {
    std::string name;
    int index = -1;
    double busy_pct = 0;  // NaN when no time passed between the snapshots
};

// Rows are matched by name; rows missing in either snapshot are dropped (CPU hot-plug).
std::vector<CpuUtil> cpu_utilisation(const std::vector<CpuTimes> &before, const std::vector<CpuTimes> &after);

}  // namespace rtf::mon
