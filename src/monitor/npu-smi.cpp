#include "monitor/npu-smi.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include <unistd.h>

#include "core/error.h"
#include "core/parse.h"

namespace rtf::mon {

double NpuUsage::memory_traffic_pct() const {
    if (!std::isnan(hbm_bw_pct)) return hbm_bw_pct;
    if (!std::isnan(ddr_bw_pct)) return ddr_bw_pct;
    return mem_bw_pct;
}

namespace {

struct KeyValue {
    std::string key, value;
};

bool split_line(const std::string &line, KeyValue &kv) {
    auto p = line.find(':');
    if (p == std::string::npos) return false;
    kv.key = trim(std::string_view(line).substr(0, p));
    kv.value = trim(std::string_view(line).substr(p + 1));
    return !kv.key.empty();
}

// Returns false for garbage; sets NaN for the documented "not available" markers.
bool number(const std::string &v, double &out) {
    if (v.empty() || v == "NA" || v == "N/A" || v == "-") {
        out = kNotReported;
        return true;
    }
    char *end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || !trim(std::string_view(end)).empty()) return false;
    out = d;
    return true;
}

double *field(NpuUsage &u, const std::string &key) {
    if (key == "Aicore Usage Rate(%)") return &u.aicore_pct;
    if (key == "Aivector Usage Rate(%)") return &u.aivector_pct;
    if (key == "Aicpu Usage Rate(%)") return &u.aicpu_pct;
    if (key == "Ctrlcpu Usage Rate(%)") return &u.ctrlcpu_pct;
    if (key == "HBM Bandwidth Usage Rate(%)") return &u.hbm_bw_pct;
    if (key == "DDR Bandwidth Usage Rate(%)") return &u.ddr_bw_pct;
    if (key == "Memory Bandwidth Usage Rate(%)") return &u.mem_bw_pct;
    if (key == "HBM Usage Rate(%)") return &u.hbm_usage_pct;
    if (key == "Memory Usage Rate(%)") return &u.memory_usage_pct;
    return nullptr;
}

}  // namespace

NpuSmiParse parse_npu_smi_usages(const std::string &text) {
    NpuSmiParse r;
    std::istringstream in(text);
    std::string line;
    NpuUsage cur;
    bool has_values = false;
    std::vector<std::string> seen;  // usage keys in the current block
    auto flush = [&] {
        if (has_values) r.chips.push_back(cur);
        has_values = false;
        seen.clear();
    };
    int line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        KeyValue kv;
        if (!split_line(line, kv)) continue;
        if (kv.key == "NPU ID" || kv.key == "Chip ID") {
            double v = 0;
            if (!number(kv.value, v) || std::isnan(v) || v < 0) {
                r.warnings.push_back("npu-smi line " + std::to_string(line_no) + ": bad " + kv.key + " '" + kv.value + "'");
                continue;
            }
            int id = static_cast<int>(v);
            int &target = kv.key == "NPU ID" ? cur.npu_id : cur.chip_id;
            if (has_values && target != id) {
                // A new device starts: keep the other id (npu-smi prints the NPU ID once for
                // several chips) but reset every figure.
                NpuUsage next;
                next.npu_id = cur.npu_id;
                next.chip_id = cur.chip_id;
                flush();
                cur = next;
            }
            target = id;
            continue;
        }
        double *f = field(cur, kv.key);
        if (!f) continue;  // capacity/hugepage lines and unknown keys
        for (const auto &k : seen) {
            if (k == kv.key) {  // the same figure again without an id line: a new block
                NpuUsage next;
                next.npu_id = cur.npu_id;
                next.chip_id = cur.chip_id + 1;
                flush();
                cur = next;
                f = field(cur, kv.key);
                break;
            }
        }
        double v = 0;
        if (!number(kv.value, v)) {
            r.warnings.push_back("npu-smi line " + std::to_string(line_no) + ": '" + kv.key + "' is not a number: '" +
                                 kv.value + "'");
            continue;
        }
        *f = v;
        seen.push_back(kv.key);
        has_values = true;
    }
    flush();
    return r;
}

std::vector<int> parse_npu_smi_list(const std::string &text) {
    std::vector<int> ids;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        KeyValue kv;
        if (!split_line(line, kv) || kv.key != "NPU ID") continue;
        double v = 0;
        if (number(kv.value, v) && !std::isnan(v) && v >= 0) ids.push_back(static_cast<int>(v));
    }
    return ids;
}

std::vector<DeviceReading> to_readings(const std::vector<NpuUsage> &chips, double t_ms) {
    std::vector<DeviceReading> out;
    for (const auto &c : chips) {
        UtilSample s;
        s.t_ms = t_ms;
        s.compute_pct = c.aicore_pct;
        s.memory_pct = c.memory_traffic_pct();
        s.mem_bw_pct = c.memory_traffic_pct();
        out.push_back({"npu" + std::to_string(c.npu_id) + "." + std::to_string(c.chip_id), s});
    }
    return out;
}

namespace {

std::string run_capture(const std::string &cmd, int *status) {
    std::string out;
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) {
        *status = -1;
        return out;
    }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    *status = pclose(p);
    return out;
}

bool on_path(const std::string &prog) {
    if (prog.find('/') != std::string::npos) return access(prog.c_str(), X_OK) == 0;
    const char *path = std::getenv("PATH");
    if (!path) return false;
    for (const auto &dir : split(path, ':')) {
        if (!dir.empty() && access((dir + "/" + prog).c_str(), X_OK) == 0) return true;
    }
    return false;
}

class NpuSmiSampler final : public Sampler {
public:
    NpuSmiSampler(std::string prog, std::vector<int> ids) : prog_(std::move(prog)), ids_(std::move(ids)) {}
    std::string name() const override { return "npu-smi"; }
    std::vector<DeviceReading> sample(double t_ms) override {
        std::vector<NpuUsage> all;
        for (int id : ids_) {
            int st = 0;
            std::string out = run_capture(prog_ + " info -t usages -i " + std::to_string(id) + " 2>/dev/null", &st);
            if (st != 0) throw_runtime(prog_ + " info -t usages -i " + std::to_string(id) + " failed (status " +
                                       std::to_string(st) + ")");
            auto parsed = parse_npu_smi_usages(out);
            for (auto &c : parsed.chips) {
                if (c.npu_id < 0) c.npu_id = id;
                all.push_back(c);
            }
        }
        return to_readings(all, t_ms);
    }

private:
    std::string prog_;
    std::vector<int> ids_;
};

}  // namespace

std::unique_ptr<Sampler> make_npu_smi_sampler(std::string *why, const std::string &npu_smi) {
    if (!on_path(npu_smi)) {
        if (why) *why = "unavailable: " + npu_smi + " not found on PATH (no Ascend driver)";
        return nullptr;
    }
    int st = 0;
    auto ids = parse_npu_smi_list(run_capture(npu_smi + " info -l 2>/dev/null", &st));
    if (st != 0 || ids.empty()) {
        if (why) *why = "unavailable: `" + npu_smi + " info -l` lists no NPU";
        return nullptr;
    }
    return std::make_unique<NpuSmiSampler>(npu_smi, ids);
}

}  // namespace rtf::mon
