#include "bench/workload.h"

#include <mutex>

#include "bench/duplex-workload.h"
#include "bench/mock-workload.h"
#include "bench/simulate-workload.h"
#include "bench/speak-workload.h"
#include "core/error.h"

namespace rtf::bench {

void set_knob(Knobs &knobs, const std::string &key, const std::string &value) {
    for (auto &k : knobs) {
        if (k.first == key) {
            k.second = value;
            return;
        }
    }
    knobs.emplace_back(key, value);
}

const std::string *knob_value(const Knobs &knobs, const std::string &key) {
    for (const auto &k : knobs)
        if (k.first == key) return &k.second;
    return nullptr;
}

std::string knobs_label(const Knobs &knobs) {
    std::string s;
    for (const auto &[k, v] : knobs) s += (s.empty() ? "" : " ") + k + "=" + v;
    return s.empty() ? "default" : s;
}

nlohmann::json knobs_json(const Knobs &knobs) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto &[k, v] : knobs) j[k] = v;
    return j;
}

namespace {
std::mutex &registry_mutex() {
    static std::mutex m;
    return m;
}
std::vector<WorkloadInfo> &registry() {
    static std::vector<WorkloadInfo> r = [] {
        std::vector<WorkloadInfo> v;
        v.push_back(simulate_workload_info());
        v.push_back(mock_workload_info());
        v.push_back(speak_workload_info());
        v.push_back(duplex_workload_info());
        return v;
    }();
    return r;
}
}  // namespace

void register_workload(WorkloadInfo info) {
    std::lock_guard lock(registry_mutex());
    for (auto &w : registry()) {
        if (w.name == info.name) {
            w = std::move(info);
            return;
        }
    }
    registry().push_back(std::move(info));
}

const WorkloadInfo &find_workload(const std::string &name) {
    std::lock_guard lock(registry_mutex());
    std::string names;
    for (const auto &w : registry()) {
        if (w.name == name) return w;
        names += (names.empty() ? "" : ", ") + w.name;
    }
    throw_usage("--workload: '" + name + "' is not a workload; available: " + names);
}

std::vector<std::string> workload_names() {
    std::lock_guard lock(registry_mutex());
    std::vector<std::string> v;
    for (const auto &w : registry()) v.push_back(w.name);
    return v;
}

void check_knobs(const std::string &workload, const Knobs &knobs, const std::vector<std::string> &known) {
    for (const auto &[k, v] : knobs) {
        bool ok = false;
        for (const auto &n : known) ok = ok || n == k;
        if (!ok) {
            std::string list;
            for (const auto &n : known) list += (list.empty() ? "" : ", ") + n;
            throw_usage("knob '" + k + "' (value '" + v + "') is not a knob of workload " + workload +
                        "; its knobs: " + list);
        }
    }
}

}  // namespace rtf::bench
