#include "machine/provenance.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <ctime>
#include <exception>

#include <nlohmann/json.hpp>

#include "core/cpu-features.h"
#include "core/topology.h"
#include "machine/backend-devices.h"
#include "rtf/build-info.h"

namespace rtf {

nlohmann::json machine_json() {
    nlohmann::json j;
    j["cpu"] = to_json(cpu_topology());
    try {
        j["backend"] = to_json(backend_info());
    } catch (const std::exception &e) {
        // A result without backend facts is still worth keeping; say why they are missing.
        j["backend"] = {{"error", e.what()}};
    }
    struct utsname u {};
    if (uname(&u) == 0) {
        j["kernel"] = std::string(u.sysname) + " " + u.release;
        j["arch"] = u.machine;
        j["hostname"] = u.nodename;
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) j["memory_bytes"] = static_cast<double>(pages) * static_cast<double>(page);
    return j;
}

nlohmann::json versions_json() {
    return {{"rtfkit", RTF_VERSION}, {"llama_cpp", RTF_LLAMA_CPP_VERSION}, {"build_type", RTF_BUILD_TYPE}};
}

nlohmann::json build_json() {
    const auto &b = backend_info();
    nlohmann::json j = versions_json();
    j["ggml_backends"] = b.backends;
    j["cpu_features"] = b.cpu_features;  // ggml's (compiled for the host)
    j["cpu"] = cpu_features().to_json();   // rtfkit's kernels' view: capped by RTF_ISA
    j["kernel_level"] = {{"active", isa_level_name(isa_level())}, {"host", isa_level_name(host_isa_level())}};
    return j;
}

std::string utc_timestamp() {
    char created[32] = "";
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    if (gmtime_r(&now, &tm)) std::strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return created;
}

}  // namespace rtf
