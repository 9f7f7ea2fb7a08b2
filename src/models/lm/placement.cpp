#include "models/lm/placement.h"

#include <algorithm>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "machine/backend-devices.h"

namespace rtf::lm {

const std::vector<std::string> &kv_types() {
    static const std::vector<std::string> t = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"};
    return t;
}

const std::vector<std::string> &flash_attn_modes() {
    static const std::vector<std::string> t = {"auto", "on", "off"};
    return t;
}

const std::vector<std::string> &weight_types() {
    static const std::vector<std::string> t = {"file", "f16", "bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0"};
    return t;
}

void ModelPlacement::validate(const std::string &prefix) const {
    {
        const auto &wt = weight_types();
        if (std::find(wt.begin(), wt.end(), weight_type) == wt.end()) {
            std::string all;
            for (const auto &t : wt) all += (all.empty() ? "" : ", ") + t;
            throw_usage(prefix + ".weight_type = '" + weight_type + "': use one of " + all);
        }
    }
    if (device != "auto") find_backend_device(device);  // throws Usage listing the devices
    if (n_gpu_layers < -1) throw_usage(prefix + ".n_gpu_layers = " + std::to_string(n_gpu_layers) + ": use -1 (all) or >= 0");
    if (flash_attn != "auto" && flash_attn != "on" && flash_attn != "off")
        throw_usage(prefix + ".flash_attn = '" + flash_attn + "': use auto, on or off");
    const auto &kt = kv_types();
    if (std::find(kt.begin(), kt.end(), kv_type) == kt.end()) {
        std::string all;
        for (const auto &t : kt) {
            if (!all.empty()) all += ", ";
            all += t;
        }
        throw_usage(prefix + ".kv_type = '" + kv_type + "': use one of " + all);
    }
    if (kv_type != "f32" && kv_type != "f16" && kv_type != "bf16" && flash_attn == "off")
        throw_usage(prefix + ".kv_type = " + kv_type + " needs flash attention (a quantised V cache); set flash_attn to auto or on");
    if (n_threads < 0 || n_threads > 512) throw_usage(prefix + ".n_threads = " + std::to_string(n_threads) + ": use 0 (auto) .. 512");
    if (n_threads_batch < 0 || n_threads_batch > 512)
        throw_usage(prefix + ".n_threads_batch = " + std::to_string(n_threads_batch) + ": use 0 (auto) .. 512");
    for (int c : cpus) {
        if (c < 0 || c >= 512) throw_usage(prefix + ".cpus: CPU id " + std::to_string(c) + " is out of range 0..511");
    }
    if (poll < 0 || poll > 100) throw_usage(prefix + ".poll = " + std::to_string(poll) + ": use 0 (sleep) .. 100 (busy poll)");
    if (n_ctx < 16 || n_ctx > (1u << 20)) throw_usage(prefix + ".n_ctx = " + std::to_string(n_ctx) + ": use 16 .. 1048576");
    if (n_batch < 1 || n_batch > n_ctx)
        throw_usage(prefix + ".n_batch = " + std::to_string(n_batch) + ": use 1 .. n_ctx (" + std::to_string(n_ctx) + ")");
}

int ModelPlacement::threads() const {
    if (n_threads > 0) return n_threads;
    if (!cpus.empty()) return static_cast<int>(cpus.size());
    return std::max(1u, std::thread::hardware_concurrency());
}

int ModelPlacement::threads_batch() const { return n_threads_batch > 0 ? n_threads_batch : threads(); }

nlohmann::json ModelPlacement::to_json() const {
    return {{"device", device},           {"n_gpu_layers", n_gpu_layers}, {"mmap", mmap},
            {"host_buffer", host_buffer}, {"extra_bufts", extra_bufts},   {"flash_attn", flash_attn},
            {"kv_type", kv_type},         {"weight_type", weight_type},         {"n_threads", threads()},      {"n_threads_batch", threads_batch()},
            {"n_threads_requested", n_threads}, {"n_threads_batch_requested", n_threads_batch},
            {"cpus", cpus},               {"poll", poll},                {"n_ctx", n_ctx},              {"n_batch", n_batch}};
}

}  // namespace rtf::lm
