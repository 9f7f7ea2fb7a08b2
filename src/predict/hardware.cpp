#include "predict/hardware.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "machine/backend-devices.h"
#include "predict/roofline.h"
#include "rtf/build-info.h"
#include "core/error.h"
#include "core/format.h"

namespace rtf::predict {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string> &predict_stages() {
    static const std::vector<std::string> s = {"llm", "tts", "t2m", "voc"};
    return s;
}

namespace {

// One figure {"value": > 0, "source": "..."}; `required` false lets it be absent.
Figure figure(const json &parent, const std::string &key, const std::string &where, bool required) {
    Figure f;
    if (!parent.contains(key)) {
        if (required) throw_usage(where + "." + key + ": missing (an object {\"value\": number, \"source\": text})");
        return f;
    }
    const json &v = parent.at(key);
    const std::string at = where + "." + key;
    if (!v.is_object()) throw_usage(at + ": must be an object {\"value\": number, \"source\": text}");
    if (!v.contains("value") || !v.at("value").is_number()) throw_usage(at + ".value: missing or not a number");
    f.value = v.at("value").get<double>();
    if (!(f.value > 0) || !std::isfinite(f.value)) throw_usage(at + ".value: must be > 0");
    if (!v.contains("source") || !v.at("source").is_string() || v.at("source").get<std::string>().empty())
        throw_usage(at + ".source: missing; say where the figure comes from (a datasheet, a measurement)");
    f.source = v.at("source").get<std::string>();
    return f;
}

std::string text(const json &j, const std::string &key, const std::string &where, bool required) {
    if (!j.contains(key)) {
        if (required) throw_usage(where + "." + key + ": missing");
        return "";
    }
    if (!j.at(key).is_string()) throw_usage(where + "." + key + ": must be a string");
    return j.at(key).get<std::string>();
}

std::string rate_type(const std::string &weight_type) {
    if (weight_type == "f32" || weight_type == "bf16" || weight_type == "int8") return weight_type;
    return "f16";  // f16 and the quantised types (ggml dequantises them to f16 for products)
}

}  // namespace

double DeviceSpec::gflops_for(const std::string &type, int threads, bool *fallback) const {
    auto it = gflops.find(rate_type(type));
    double r = 0;
    if (it != gflops.end()) {
        r = it->second.value;
    } else {
        for (const auto &[t, f] : gflops) r = std::max(r, f.value);
    }
    if (fallback) *fallback = it == gflops.end();
    if (is_cpu()) r *= std::clamp(threads, 1, max_threads()) / cores.value;
    return r;
}

int DeviceSpec::max_threads() const { return is_cpu() ? std::max(1, static_cast<int>(cores.value)) : 1; }

const DeviceSpec &Hardware::device(const std::string &n, const std::string &what) const {
    std::string names;
    for (const auto &d : devices) {
        if (d.name == n) return d;
        names += (names.empty() ? "" : ", ") + d.name;
    }
    throw_usage(what + ": no device '" + n + "' in " + (path.empty() ? name : path) + " (it has: " + names + ")");
}

Hardware parse_hardware(const json &j, const std::string &what) {
    if (!j.is_object()) throw_usage(what + ": not a JSON object");
    if (j.contains("schema") && j.at("schema") != "rtfkit.hardware/1")
        throw_usage(what + ": schema: '" + j.at("schema").dump() + "' is not rtfkit.hardware/1");
    Hardware h;
    h.name = text(j, "name", what, true);
    h.title = text(j, "title", what, false);
    if (!j.contains("devices") || !j.at("devices").is_array() || j.at("devices").empty())
        throw_usage(what + ": devices: missing or empty (a list of device objects)");
    for (size_t i = 0; i < j.at("devices").size(); ++i) {
        const json &dj = j.at("devices").at(i);
        const std::string at = what + ": devices[" + std::to_string(i) + "]";
        if (!dj.is_object()) throw_usage(at + ": not an object");
        DeviceSpec d;
        d.name = text(dj, "name", at, true);
        d.kind = text(dj, "kind", at, true);
        if (d.kind != "cpu" && d.kind != "accelerator") throw_usage(at + ".kind: '" + d.kind + "' is not cpu or accelerator");
        d.model = text(dj, "model", at, false);
        if (dj.contains("software")) {
            if (!dj.at("software").is_boolean()) throw_usage(at + ".software: must be true or false");
            d.software = dj.at("software").get<bool>();
        }
        d.cores = figure(dj, "cores", at, d.is_cpu());
        d.memory_gb_s = figure(dj, "memory_gb_s", at, true);
        d.host_link_gb_s = figure(dj, "host_link_gb_s", at, !d.is_cpu());
        d.kernel_launch_us = figure(dj, "kernel_launch_us", at, false);
        if (!dj.contains("gflops") || !dj.at("gflops").is_object() || dj.at("gflops").empty())
            throw_usage(at + ".gflops: missing (an object of f32 / f16 / bf16 / int8 figures, GFLOP/s)");
        for (const auto &[t, v] : dj.at("gflops").items()) {
            if (t != "f32" && t != "f16" && t != "bf16" && t != "int8")
                throw_usage(at + ".gflops." + t + ": unknown type (allowed: f32, f16, bf16, int8)");
            d.gflops[t] = figure(dj.at("gflops"), t, at + ".gflops", true);
        }
        if (dj.contains("cannot_run")) {
            const json &c = dj.at("cannot_run");
            if (!c.is_object() || !c.contains("stages") || !c.at("stages").is_array())
                throw_usage(at + ".cannot_run: must be {\"stages\": [...], \"source\": text}");
            for (const auto &s : c.at("stages")) {
                const std::string st = s.is_string() ? s.get<std::string>() : s.dump();
                const auto &all = predict_stages();
                if (std::find(all.begin(), all.end(), st) == all.end())
                    throw_usage(at + ".cannot_run.stages: '" + st + "' is not a stage (llm, tts, t2m, voc)");
                d.cannot_run.push_back(st);
            }
            d.cannot_run_source = text(c, "source", at + ".cannot_run", true);
        }
        for (const auto &o : h.devices)
            if (o.name == d.name) throw_usage(at + ".name: '" + d.name + "' appears twice");
        h.devices.push_back(std::move(d));
    }
    if (j.contains("placement")) {
        if (!j.at("placement").is_object()) throw_usage(what + ": placement: must be an object stage -> device[:threads]");
        for (const auto &[s, v] : j.at("placement").items()) {
            if (!v.is_string()) throw_usage(what + ": placement." + s + ": must be a string device[:threads]");
            h.placement[s] = v.get<std::string>();
        }
    }
    return h;
}

std::vector<std::string> hardware_dirs() {
    std::vector<std::string> d;
    if (const char *e = std::getenv("RTF_HARDWARE_DIR"); e && *e) d.emplace_back(e);
    d.push_back(std::string(RTF_SOURCE_DIR) + "/hardware");
    return d;
}

std::vector<std::string> list_hardware() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto &dir : hardware_dirs())
        for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
            if (it->path().extension() == ".json") {
                const std::string n = it->path().stem().string();
                if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
            }
    std::sort(names.begin(), names.end());
    return names;
}

Hardware load_hardware(const std::string &spec) {
    std::string path = spec;
    const bool is_file = spec.find('/') != std::string::npos || (spec.size() > 5 && spec.substr(spec.size() - 5) == ".json");
    if (!is_file) {
        path.clear();
        for (const auto &dir : hardware_dirs())
            if (fs::exists(dir + "/" + spec + ".json")) {
                path = dir + "/" + spec + ".json";
                break;
            }
        if (path.empty()) {
            std::string names;
            for (const auto &n : list_hardware()) names += (names.empty() ? "" : ", ") + n;
            throw_usage("--hardware: no description named '" + spec + "' (shipped: " + names + "; or give FILE.json)");
        }
    }
    std::ifstream in(path);
    if (!in) throw_usage("--hardware: cannot read '" + path + "'");
    json j;
    try {
        j = json::parse(in);
    } catch (const json::exception &e) {
        throw_usage("--hardware: " + path + ": not valid JSON (" + e.what() + ")");
    }
    Hardware h = parse_hardware(j, path);
    h.path = path;
    return h;
}

json hardware_from_limits(const MachineRates &rates, int threads, const std::string &cpu_model, const std::string &when) {
    const std::string src = "measured by `rtf limits` on this machine (" + cpu_model + "), " + when + ", " +
                            std::to_string(threads) + " threads";
    const double gb = 1024.0 * 1024.0 * 1024.0 / 1e9;
    const double bw = rates.read_gib_s(threads);
    if (!std::isfinite(bw)) throw_usage("--save-hardware: needs the bandwidth measurement (drop --no-bandwidth)");
    json flops = json::object();
    for (const char *t : {"f32", "f16", "bf16", "int8"}) {
        double best = 0;
        for (const auto &p : rates.peak)
            if (p.type == t && p.n_threads <= threads) best = std::max(best, p.gflops);
        if (best > 0) flops[t] = {{"value", best}, {"source", src + ", register-only multiply-add loop (peak-flops.h)"}};
    }
    if (flops.empty()) throw_usage("--save-hardware: needs the arithmetic peak measurement (drop --no-matmul)");
    json devices = json::array({{{"name", "cpu"},
                                 {"kind", "cpu"},
                                 {"model", cpu_model},
                                 {"cores", {{"value", threads}, {"source", src + ": the threads the rates below were measured on"}}},
                                 {"memory_gb_s", {{"value", bw * gb}, {"source", src + ", read bandwidth (GiB/s x 1.0737)"}}},
                                 {"gflops", flops}}});
    // Each other device measured (a GPU through ggml's CUDA or Vulkan backend): ggml's own
    // rates on it, as an accelerator `--placement` can name. A software device (lavapipe) is
    // said so: its rates are the CPU's, emulated.
    for (const auto &link : rates.host_link) {
        const BackendDevice &bd = find_backend_device(link.device);
        const std::string dsrc = "measured by `rtf limits` on " + link.device + " (" + bd.description +
                                 (bd.software ? ", a software device running on the CPU" : "") + "), " + when;
        json g = json::object();
        double gemv_gib_s = 0;
        for (const auto &m : rates.matmul) {
            if (m.device != link.device) continue;
            if (m.type == "gemv-f16") gemv_gib_s = m.gib_s;
            else g[m.type] = {{"value", m.gflops}, {"source", dsrc + ", ggml mul_mat " + std::to_string(m.m) + "^3"}};
        }
        if (g.empty() || !(gemv_gib_s > 0)) continue;  // needs both its matmul and GEMV rates
        std::string name = link.device;
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        devices.push_back({{"name", name},
                           {"kind", "accelerator"},
                           {"model", bd.description},
                           {"software", bd.software},
                           {"memory_gb_s", {{"value", gemv_gib_s * gb}, {"source", dsrc + ", F16 GEMV weight-read rate (a lower bound)"}}},
                           {"host_link_gb_s", {{"value", link.upload_gib_s * gb}, {"source", dsrc + ", host-to-device copy"}}},
                           {"gflops", g}});
    }
    return {{"schema", "rtfkit.hardware/1"},
            {"name", "this-machine"},
            {"title", cpu_model + " (measured by rtf limits)"},
            {"devices", devices},
            {"placement", {{"llm", "cpu"}, {"tts", "cpu"}, {"t2m", "cpu"}, {"voc", "cpu"}}}};
}

}  // namespace rtf::predict
