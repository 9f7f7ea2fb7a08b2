#include "pipeline/synthetic.h"

#include <time.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/parse.h"
#include "core/topology.h"

namespace rtf::pipe {

const char *to_string(CostType t) noexcept { return t == CostType::busy ? "busy" : "wait"; }

namespace {
double thread_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

std::string known_names(const SimulateConfig &cfg) {
    std::string out;
    for (const auto &s : cfg.stages) out += (out.empty() ? "" : ", ") + s.name;
    return out;
}

SyntheticSpec &find_stage(SimulateConfig &cfg, const std::string &name, const std::string &what) {
    for (auto &s : cfg.stages)
        if (s.name == name) return s;
    throw_usage(what + ": unknown stage '" + name + "'; stages are " + known_names(cfg));
}

CostType parse_cost_type(const std::string &text, const std::string &what) {
    if (text == "wait") return CostType::wait;
    if (text == "busy") return CostType::busy;
    throw_usage(what + ": '" + text + "' is not a cost type; use wait or busy");
}
}  // namespace

void burn_cpu_ms(double ms) {
    const double end = thread_cpu_ms() + ms;
    volatile unsigned x = 1;
    while (thread_cpu_ms() < end) {
        for (int i = 0; i < 1000; ++i) x = x * 1664525u + 1013904223u;  // keep the core busy
    }
}

SyntheticStage::SyntheticStage(const SyntheticSpec &s) : Stage(StageSpec{s.name, 1, s.cpus, -1, "CPU"}), s_(s) {}

void SyntheticStage::work() {
    if (s_.cost_ms <= 0) return;
    if (s_.type == CostType::busy && !ctx_->clock().is_virtual()) {
        burn_cpu_ms(s_.cost_ms);
        if (ctx_->stopping()) throw Stopped{};
    } else {
        ctx_->sleep_ms(s_.cost_ms);
    }
}

void SyntheticStage::process(Item &&in, Emitter &out) {
    const int n = s_.n_items > 0 ? s_.n_items : 1;
    const bool source = s_.n_items > 0;
    for (int i = 0; i < n; ++i) {
        work();
        Item o = source ? Item{} : std::move(in);
        if (s_.audio_ms > 0) o.audio_ms = s_.audio_ms;
        out.emit(std::move(o));
    }
}

SimulateConfig SimulateConfig::defaults() {
    SimulateConfig c;
    c.stages = {{"llm", 100, CostType::wait, {}, 0, 0},
                {"tts", 300, CostType::wait, {}, 0, 0},
                {"t2w", 300, CostType::wait, {}, 0, 0}};
    return c;
}

void SimulateConfig::validate() const {
    if (stages.empty()) throw_usage("simulate: no stages");
    if (!(chunk_ms > 0)) throw_setting("chunk-ms", std::to_string(chunk_ms) + " must be > 0");
    if (n_chunks < 1) throw_setting("chunks", std::to_string(n_chunks) + " must be >= 1");
    for (const auto &s : stages)
        if (!(s.cost_ms >= 0)) throw_setting("cost", s.name + " cost must be >= 0 ms");
}

nlohmann::json SimulateConfig::to_json() const {
    nlohmann::json st = nlohmann::json::array();
    for (const auto &s : stages)
        st.push_back({{"name", s.name}, {"cost_ms", s.cost_ms}, {"cost_type", rtf::pipe::to_string(s.type)},
                      {"cpus", s.cpus}});
    return {{"stages", st}, {"chunk_ms", chunk_ms}, {"n_chunks", n_chunks}};
}

std::vector<std::unique_ptr<SyntheticStage>> SimulateConfig::make_stages() const {
    validate();
    std::vector<std::unique_ptr<SyntheticStage>> out;
    for (size_t i = 0; i < stages.size(); ++i) {
        SyntheticSpec s = stages[i];
        s.n_items = i == 0 ? n_chunks : 0;
        s.audio_ms = i + 1 == stages.size() ? chunk_ms : 0;
        out.push_back(std::make_unique<SyntheticStage>(s));
    }
    return out;
}

void apply_costs(SimulateConfig &cfg, const std::string &text, const std::string &what) {
    for (const auto &[name, value] : parse_key_values(text, what)) {
        SyntheticSpec &s = find_stage(cfg, name, what);
        s.cost_ms = parse_duration_ms(value, what + " " + name);
    }
}

void apply_cost_types(SimulateConfig &cfg, const std::string &text, const std::string &what) {
    if (text.find('=') == std::string::npos) {
        CostType t = parse_cost_type(trim(text), what);
        for (auto &s : cfg.stages) s.type = t;
        return;
    }
    for (const auto &[name, value] : parse_key_values(text, what))
        find_stage(cfg, name, what).type = parse_cost_type(value, what + " " + name);
}

void apply_cpus(SimulateConfig &cfg, const std::string &text, const std::string &what) {
    std::vector<std::pair<std::string, std::string>> lists;  // stage -> "0,2-3"
    for (const auto &item : split(text, ',')) {
        auto eq = item.find('=');
        if (eq == std::string::npos) {
            if (lists.empty() || item.empty())
                throw_usage(what + ": '" + text + "' is not STAGE=CPUS[,STAGE=CPUS...] (e.g. llm=0,t2w=1-3)");
            lists.back().second += "," + item;
        } else {
            lists.emplace_back(trim(item.substr(0, eq)), trim(item.substr(eq + 1)));
        }
    }
    for (const auto &[name, cpus] : lists) {
        SyntheticSpec &s = find_stage(cfg, name, what);
        if (cpus.empty()) throw_usage(what + ": no CPUs given for stage '" + name + "'");
        s.cpus = parse_int_list(cpus, what + " " + name);
    }
}

}  // namespace rtf::pipe
