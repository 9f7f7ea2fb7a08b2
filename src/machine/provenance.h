#pragma once
// Where, with what and when a result was made: the facts every result JSON carries
// (`rtf bench`, `rtf limits`, `rtf sample`) and `rtf version` prints. One definition, so a
// bench result and a sample log of the same machine can be matched key for key.
//
//   nlohmann::json j = {{"created", utc_timestamp()}, {"machine", machine_json()},
//                       {"versions", versions_json()}};
//
// It lives in src/machine, the lowest layer that knows both the CPU topology
// (core/topology.h) and the ggml backends (backend-devices.h).
// Thread-safety: all functions may be called from any thread (backend_info() initialises
// ggml's backends once).
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace rtf {

// {"cpu": CPU model, cores, NUMA (core/topology.h to_json), "backend": ggml backends,
//  their devices and CPU features ({"error": ...} when ggml cannot list them), "kernel",
//  "arch", "hostname" (uname; absent if it fails), "memory_bytes" (physical memory)}.
nlohmann::json machine_json();

// {"rtfkit": version, "llama_cpp": the pinned llama.cpp release or commit, "build_type"}.
nlohmann::json versions_json();

// versions_json() plus "ggml_backends" and "cpu_features" as compiled into this binary:
// the body of `rtf version --json`.
nlohmann::json build_json();

// The current time as UTC ISO 8601 ("2025-01-31T12:00:00Z"), the "created" field of a
// result; "" if the clock cannot be converted.
std::string utc_timestamp();

}  // namespace rtf
