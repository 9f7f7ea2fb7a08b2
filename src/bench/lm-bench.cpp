#include "bench/lm-bench.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>

#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "predict/limits.h"
#include "predict/model-floors.h"
#include "core/robust-stats.h"
#include "core/elapsed.h"
#include "core/error.h"
#include "models/lm/llama-runtime.h"
#include "models/lm/llm-engine.h"
#include "models/lm/tts-engine.h"

namespace rtf::bench {

namespace {

using Clock = std::chrono::steady_clock;

std::string shell_quote(const std::string &s) {
    std::string q = "'";
    for (char c : s) {
        if (c == '\'') q += "'\\''";
        else q += c;
    }
    return q + "'";
}

std::string join_args(const std::vector<std::string> &args) {
    std::string s;
    for (const auto &a : args) s += (s.empty() ? "" : " ") + shell_quote(a);
    return s;
}

// One measured side of the comparison: a loaded engine that can decode n tokens again.
class Side {
public:
    virtual ~Side() = default;
    virtual LmBenchRun run(int n) = 0;
};

class LlmSide : public Side {
public:
    LlmSide(const LmBenchConfig &c, int n) : prompt_(c.prompt) {
        lm::LlmConfig lc;
        lc.max_tokens = n;
        lc.model_path = c.model_path;
        lc.placement = c.placement;
        lc.seed = c.seed;
        lc.llm_step = 10;
        engine_ = std::make_unique<lm::LlmEngine>(lc);
        load_ms = engine_->timings().load_ms;
    }
    LmBenchRun run(int /*n: max_tokens*/) override {
        // A twin's random EOS may end a run early: the rate is still the rate, and
        // LmBenchRun.n says how many tokens it covers.
        engine_->start(prompt_);
        const lm::LlmTimings before = engine_->timings();
        const auto t0 = Clock::now();
        engine_->generate([](const lm::LlmStep &) { return true; });
        const double wall = ms_since(t0);
        const lm::LlmTimings after = engine_->timings();
        LmBenchRun r;
        r.n = after.n_decoded - before.n_decoded;
        r.stage_tps = r.n / (wall / 1000.0);
        r.decode_tps = r.n / ((after.decode_ms - before.decode_ms) / 1000.0);
        return r;
    }
    double load_ms = 0;
    std::unique_ptr<lm::LlmEngine> engine_;

private:
    std::string prompt_;
};

class TtsSide : public Side {
public:
    TtsSide(const LmBenchConfig &c, int n) : seed_(c.seed) {
        lm::TtsConfig tc;
        tc.model_path = c.model_path;
        tc.projector_path = c.projector_path;
        tc.placement = c.placement;
        tc.seed = c.seed;
        tc.min_codes_per_turn = n;    // EOS masked: every run decodes exactly n codes
        tc.max_codes_per_phase = n;
        engine_ = std::make_unique<lm::TtsEngine>(tc);
        load_ms = engine_->timings().load_ms;
        // One synthetic LLM step: ordinary text ids, hidden rows ~ N(0, 1) like a
        // final-norm output. Seeded, so every run conditions on the same rows.
        const int n_llm = engine_->dims().n_llm;
        std::mt19937 rng(seed_);
        std::normal_distribution<float> nd(0.f, 1.f);
        for (int i = 0; i < 10; ++i) ids_.push_back(1000 + 37 * i);
        hidden_.resize(ids_.size() * static_cast<size_t>(n_llm));
        for (float &v : hidden_) v = nd(rng);
    }
    LmBenchRun run(int /*n*/) override {
        engine_->begin_utterance();
        const lm::TtsTimings before = engine_->timings();
        lm::TtsInput in;
        in.ids = ids_;
        in.hidden = hidden_;
        in.is_last = false;
        const auto t0 = Clock::now();
        auto chunks = engine_->feed(in);
        const double wall = ms_since(t0);
        const lm::TtsTimings after = engine_->timings();
        engine_->finish();
        LmBenchRun r;
        r.n = static_cast<int>(after.n_decode - before.n_decode);
        const double prefill = after.prefill_ms - before.prefill_ms;
        r.stage_tps = r.n / ((wall - prefill) / 1000.0);
        r.decode_tps = r.n / ((after.decode_ms - before.decode_ms) / 1000.0);
        return r;
    }
    double load_ms = 0;
    std::unique_ptr<lm::TtsEngine> engine_;

private:
    uint32_t seed_;
    std::vector<int32_t> ids_;
    std::vector<float> hidden_;
};

double run_llama_bench_once(const std::string &exe, const std::vector<std::string> &args) {
    const std::string cmd = shell_quote(exe) + " " + join_args(args) + " 2>&1";
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) throw_setup("llama-bench: cannot start: " + cmd);
    std::string out;
    std::array<char, 4096> buf{};
    size_t got;
    while ((got = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), got);
    const int status = pclose(p);
    auto tail = [&] { return out.size() > 1500 ? out.substr(out.size() - 1500) : out; };
    if (status != 0) {
        const std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                                  : "status " + std::to_string(status);
        throw_setup("llama-bench failed (" + how + "): " + cmd + "\n" + tail());
    }
    // stderr is merged (its log lines); the JSON array is the part from the first '['
    // that starts a line.
    size_t at = out.find("\n[");
    at = (out.rfind('[', 0) == 0) ? 0 : (at == std::string::npos ? at : at + 1);
    if (at == std::string::npos) throw_setup("llama-bench printed no JSON: " + cmd + "\n" + tail());
    return parse_llama_bench_tps(out.substr(at));
}

}  // namespace

void LmBenchConfig::validate() const {
    if (stage != "llm" && stage != "tts") throw_usage("--stage: '" + stage + "' is not one of llm, tts");
    if (model_path.empty()) throw_usage("lm-bench: no model file (--models KIT or --model FILE)");
    if (n_gen < 1 || n_gen > 100000) throw_usage("-n: must be 1..100000, got " + std::to_string(n_gen));
    if (runs < 1 || runs > 1000) throw_usage("--runs: must be 1..1000, got " + std::to_string(runs));
    placement.validate(stage);
}

nlohmann::json LmBenchConfig::to_json() const {
    return {{"stage", stage},     {"model", model_path}, {"projector", projector_path},
            {"placement", placement.to_json()}, {"n_gen", n_gen}, {"runs", runs},
            {"seed", seed},       {"prompt", prompt},    {"llama_bench", llama_bench}};
}

nlohmann::json LmBenchResult::to_json() const {
    nlohmann::json rs = nlohmann::json::array();
    for (const auto &r : runs)
        rs.push_back({{"n", r.n}, {"stage_tps", r.stage_tps}, {"decode_tps", r.decode_tps}, {"llama_bench_tps", r.llama_bench_tps}});
    nlohmann::json j = {{"schema", "rtfkit.lm-bench/1"},
                        {"config", config.to_json()},
                        {"measured_file", measured_file},
                        {"load_ms", load_ms},
                        {"runs", rs},
                        {"median", {{"stage_tps", median_stage_tps}, {"decode_tps", median_decode_tps}}}};
    if (config.memory_floor)
        j["memory_floor"] = {{"bytes_per_token", floor_bytes_per_token}, {"read_gib_s", bandwidth_gib_s},
                             {"tps", floor_tps}, {"stage_of_floor", of_floor}};
    if (!config.llama_bench.empty()) {
        j["llama_bench_args"] = llama_bench_args;
        j["median"]["llama_bench_tps"] = median_llama_bench_tps;
        j["ratio"] = ratio;
    }
    return j;
}

std::vector<std::string> llama_bench_args(const std::string &model, const lm::ModelPlacement &pl, int n_gen) {
    std::vector<std::string> a = {"-m", model, "-p", "0", "-n", std::to_string(n_gen), "-r", "1", "-o", "json"};
    a.insert(a.end(), {"-t", std::to_string(pl.threads())});
    a.insert(a.end(), {"-fa", pl.flash_attn});
    a.insert(a.end(), {"-ctk", pl.kv_type, "-ctv", pl.kv_type});
    a.insert(a.end(), {"-lm", pl.mmap ? "mmap" : "none"});
    if (pl.device == "CPU") {
        a.insert(a.end(), {"-ngl", "0"});
    } else {
        if (pl.device != "auto") a.insert(a.end(), {"-dev", pl.device});
        a.insert(a.end(), {"-ngl", std::to_string(pl.n_gpu_layers < 0 ? 999 : pl.n_gpu_layers)});
    }
    if (pl.poll != 50) a.insert(a.end(), {"--poll", std::to_string(pl.poll)});
    if (!pl.cpus.empty()) {
        // ggml's cpumask: hex, lowest CPU in the last digit (llama-bench parses it like that).
        int max_cpu = *std::max_element(pl.cpus.begin(), pl.cpus.end());
        std::string hex((max_cpu / 4) + 1, '0');
        for (int c : pl.cpus) {
            char &d = hex[hex.size() - 1 - static_cast<size_t>(c / 4)];
            int v = (d <= '9' ? d - '0' : d - 'a' + 10) | (1 << (c % 4));
            d = static_cast<char>(v < 10 ? '0' + v : 'a' + v - 10);
        }
        a.insert(a.end(), {"-C", "0x" + hex, "--cpu-strict", "1"});
    }
    return a;
}

double parse_llama_bench_tps(const std::string &json_text) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(json_text);
    } catch (const std::exception &e) {
        throw_setup(std::string("llama-bench: output is not JSON: ") + e.what());
    }
    if (!j.is_array()) throw_setup("llama-bench: expected a JSON array of tests");
    for (const auto &t : j) {
        if (!t.is_object() || !t.contains("n_gen") || !t.contains("avg_ts")) continue;
        if (t["n_gen"].is_number_integer() && t["n_gen"].get<int>() > 0 && t["avg_ts"].is_number())
            return t["avg_ts"].get<double>();
    }
    throw_setup("llama-bench: no tg result (n_gen > 0 with avg_ts) in its JSON");
}

LmBenchResult run_lm_bench(const LmBenchConfig &cfg, const std::function<void(const std::string &)> &progress) {
    cfg.validate();
    LmBenchResult res;
    res.config = cfg;
    std::unique_ptr<Side> side;
    if (cfg.stage == "llm") {
        auto s = std::make_unique<LlmSide>(cfg, cfg.n_gen);
        res.load_ms = s->load_ms;
        res.measured_file = lm::ensure_weight_type(cfg.model_path, cfg.placement.weight_type, "llm");
        side = std::move(s);
    } else {
        auto s = std::make_unique<TtsSide>(cfg, cfg.n_gen);
        res.load_ms = s->load_ms;
        res.measured_file = lm::ensure_weight_type(s->engine_->derived_model_path(), cfg.placement.weight_type, "tts");
        side = std::move(s);
    }
    const bool with_lb = !cfg.llama_bench.empty();
    if (with_lb) res.llama_bench_args = llama_bench_args(res.measured_file, cfg.placement, cfg.n_gen);

    side->run(cfg.n_gen);  // warm-up (llama-bench runs its own)
    for (int i = 0; i < cfg.runs; ++i) {
        LmBenchRun r;
        auto ours = [&] {
            LmBenchRun o = side->run(cfg.n_gen);
            r.n = o.n;
            r.stage_tps = o.stage_tps;
            r.decode_tps = o.decode_tps;
        };
        auto theirs = [&] { r.llama_bench_tps = run_llama_bench_once(cfg.llama_bench, res.llama_bench_args); };
        if (with_lb && i % 2 == 1) {
            theirs();
            ours();
        } else {
            ours();
            if (with_lb) theirs();
        }
        res.runs.push_back(r);
        if (progress) {
            std::ostringstream os;
            os.setf(std::ios::fixed);
            os.precision(2);
            os << cfg.stage << " run " << (i + 1) << "/" << cfg.runs << ": " << r.n << " tokens, stage " << r.stage_tps
               << " tok/s, llama_decode " << r.decode_tps << " tok/s";
            if (with_lb) os << ", llama-bench " << r.llama_bench_tps << " tok/s";
            progress(os.str());
        }
    }
    std::vector<double> st, dt, lb;
    for (const auto &r : res.runs) {
        st.push_back(r.stage_tps);
        dt.push_back(r.decode_tps);
        lb.push_back(r.llama_bench_tps);
    }
    res.median_stage_tps = median_of(st);
    res.median_decode_tps = median_of(dt);
    if (with_lb) {
        res.median_llama_bench_tps = median_of(lb);
        res.ratio = res.median_llama_bench_tps > 0 ? res.median_stage_tps / res.median_llama_bench_tps : 0;
    }
    if (cfg.memory_floor) {
        // KV costed at the middle of a run: the prompt (LLM) or the condition rows, plus n/2.
        const auto c = predict::decoder_file_cost(res.measured_file, cfg.stage, cfg.n_gen / 2 + 16);
        const auto bw = predict::measure_bandwidth(size_t{256} << 20, std::max(1, cfg.placement.threads()), 3);
        res.floor_bytes_per_token = c.bytes_per_unit;
        res.bandwidth_gib_s = bw.read_gib_s;
        res.floor_tps = c.bytes_per_unit > 0 ? bw.read_gib_s * 1073741824.0 / c.bytes_per_unit : 0;
        res.of_floor = res.floor_tps > 0 ? res.median_stage_tps / res.floor_tps : 0;
    }
    return res;
}

}  // namespace rtf::bench
