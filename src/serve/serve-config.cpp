#include "serve/serve-config.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "speak/knobs.h"

namespace rtf::serve {

void ServeConfig::validate() const {
    if (host.empty()) throw_usage("--host: give an address to bind (e.g. 127.0.0.1)");
    if (port < 0 || port > 65535) throw_usage("--port: must be in [0, 65535] (0 = any free port)");
    if (agent_port < 0 || agent_port > 65535) throw_usage("--agent-port: must be in [1, 65535] (0 = no agent check)");
    if (agent_port != 0 && agent_port == port) throw_usage("--agent-port: must differ from --port");
    if (max_streams < 1 || max_streams > 64) throw_usage("--max-streams: must be in [1, 64] (each is an engine set)");
    if (max_queue < 0 || max_queue > 1024) throw_usage("--max-queue: must be in [0, 1024]");
    if (!(queue_timeout_ms >= 0 && queue_timeout_ms <= 600000))
        throw_usage("--queue-timeout: must be in [0, 600000] ms");
    if (max_input_chars < 1 || max_input_chars > 1000000) throw_usage("--max-input-chars: must be in [1, 1000000]");
    if (max_body_bytes < 1024 || max_body_bytes > (64u << 20)) throw_usage("--max-body: must be in [1 KiB, 64 MiB]");
    if (!(read_timeout_s > 0 && read_timeout_s <= 600)) throw_usage("--read-timeout: must be in (0, 600] s");
    if (!(write_timeout_s > 0 && write_timeout_s <= 600)) throw_usage("--write-timeout: must be in (0, 600] s");
    if (send_buffer_kb != 0 && (send_buffer_kb < 4 || send_buffer_kb > 65536))
        throw_usage("--send-buffer-kb: must be 0 (the kernel's default) or in [4, 65536] KiB");
    if (keep_alive_s < 1 || keep_alive_s > 60) throw_usage("--keep-alive: must be in [1, 60] s");
    if (spare_threads < 1 || spare_threads > 64) throw_usage("spare_threads: must be in [1, 64]");
    if (runs_kept < 1 || runs_kept > 100000) throw_usage("--runs-kept: must be in [1, 100000]");
    if (!(batch_gather_ms >= 0 && batch_gather_ms <= 100)) throw_usage("--batch-gather-ms: must be in [0, 100] ms");
    if (slot_threads < -1 || slot_threads > 512) throw_usage("--slot-threads: must be auto, knobs or a count in [1, 512]");
    realtime.validate();
    if (realtime.port > 0 && (realtime.port == port || realtime.port == agent_port))
        throw_usage("--realtime-port: must differ from --port and --agent-port");
}

void RealtimeConfig::validate() const {
    if (sessions < -1 || sessions > 64) throw_usage("--realtime-sessions " + std::to_string(sessions) + ": use 0 (off) .. 64, or auto");
    if (port < -1 || port > 65535) throw_usage("--realtime-port: must be in [0, 65535] (0 = any free port)");
    if (!(max_session_s >= 1 && max_session_s <= 86400))
        throw_usage("--realtime-max-s: use 1 .. 86400 seconds of input per session");
    if (!(idle_timeout_s >= 0.1 && idle_timeout_s <= 3600)) throw_usage("--realtime-idle-s: use 0.1 .. 3600 seconds");
    if (max_message_bytes < 1024) throw_usage("realtime: max message size below 1 KiB");
}

int ServeConfig::resolved_slot_threads(int cpus) const {
    if (slot_threads == -1) return std::max(1, cpus / max_streams);
    return slot_threads;
}

const std::vector<std::string> &slot_thread_knobs() {
    static const std::vector<std::string> k = speak::knobs_where([](const speak::KnobDef &d) { return d.facts.thread_count; });
    return k;
}

std::vector<std::string> apply_slot_threads(speak::SpeakConfig &cfg, int threads, const std::vector<std::string> &given,
                                            const std::vector<std::string> &capped) {
    std::vector<std::string> set;
    if (threads <= 0) return set;
    const nlohmann::json now = speak::knobs_json(cfg);
    for (const auto &k : slot_thread_knobs()) {
        if (std::find(given.begin(), given.end(), k) != given.end()) continue;
        if (std::find(capped.begin(), capped.end(), k) != capped.end() && now.contains(k)) {
            const long have = std::strtol(now[k].get<std::string>().c_str(), nullptr, 10);  // 0 = all CPUs: above any share
            if (have > 0 && have <= threads) continue;
        }
        speak::apply_knob(cfg, k, std::to_string(threads));
        set.push_back(k);
    }
    return set;
}

int usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
    return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

nlohmann::json ServeConfig::to_json() const {
    return {{"host", host},
            {"port", port},
            {"max_streams", max_streams},
            {"max_queue", max_queue},
            {"queue_timeout_ms", queue_timeout_ms},
            {"max_input_chars", max_input_chars},
            {"max_body_bytes", max_body_bytes},
            {"read_timeout_s", read_timeout_s},
            {"write_timeout_s", write_timeout_s},
            {"send_buffer_kb", send_buffer_kb},
            {"keep_alive_s", keep_alive_s},
            {"worker_threads", worker_threads()},
            {"runs_kept", runs_kept},
            {"batch", batch},
            {"batch_gather_ms", batch_gather_ms},
            {"slot_threads", slot_threads == -1 ? nlohmann::json("auto") : slot_threads == 0 ? nlohmann::json("knobs") : nlohmann::json(slot_threads)}};
}

}  // namespace rtf::serve
