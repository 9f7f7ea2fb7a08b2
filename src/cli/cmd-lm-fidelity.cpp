// rtf lm-fidelity: what an LM weight type (--llm-weight-type / --tts-weight-type) costs in
// fidelity against the file's own weights, teacher-forced, priced as llama.cpp's perplexity
// tool prices a quantization (models/lm/weight-fidelity.h says exactly what is compared);
// with --text-turn fixed, what text mode's fixed user turn costs against echo.
// Exit 2 when a type misses the machine profile's lines (--check).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/format.h"
#include "core/parse.h"
#include "models/lm/weight-fidelity.h"
#include "speak/kit.h"

namespace rtf::cli {

namespace {

struct LmFidelityOptions {
    std::string models, model, stages = "llm,tts", types = "q8_0", text, json_path;
    std::string text_turn;         // "" = price weight types; "fixed" = price text mode's fixed turn
    bool types_given = false;      // --weight-type on the command line
    int n = 0;  // 0 = the stage's default
    int threads = 0;
    bool check = false;
};

std::string g(double v, int digits) {
    char b[32];
    std::snprintf(b, sizeof b, "%.*g", digits, v);
    return b;
}

std::vector<std::string> parse_types(const std::string &list) {
    std::vector<std::string> out;
    std::string allowed;
    for (const auto &w : lm::weight_types())
        if (w != "file") allowed += (allowed.empty() ? "" : ", ") + w;
    for (auto t : split(list, ',')) {
        t = trim(t);
        bool ok = false;
        for (const auto &w : lm::weight_types()) ok = ok || (w == t && w != "file");
        if (!ok) throw_usage("--weight-type: '" + t + "' is not one of " + allowed);
        out.push_back(t);
    }
    if (out.empty()) throw_usage("--weight-type: empty list (allowed: " + allowed + ")");
    return out;
}

// One result line (and --check's verdict).
bool print_result(const std::string &what, const lm::WeightFidelity &f) {
    const bool ok = f.passes();
    std::cout << what << ": KL mean " << g(f.kl_mean, 3) << " nats, p99 " << g(f.kl_p99, 3) << ", max " << g(f.kl_max, 3)
              << "; top-1 agreement " << fmt(f.top1_pct, 1) << " %; hidden SNR "
              << (std::isfinite(f.hidden_snr_db) ? fmt(f.hidden_snr_db, 1) + " dB" : std::string("inf (identical)")) << "  ("
              << f.positions << " teacher-forced positions, T " << fmt(f.temperature, 2) << ")  " << (ok ? "passes" : "MISSES")
              << " the profile's lines (mean KL <= " << g(lm::WeightFidelity::kMaxMeanKl, 2)
              << ", top-1 >= " << fmt(lm::WeightFidelity::kMinTop1Pct, 0) << " %)\n";
    return ok;
}

// --text-turn fixed: text mode's fixed user turn against echo, the LLM only.
int run_text_turn(const LmFidelityOptions &o) {
    if (o.stages != "llm" && o.stages != "llm,tts")
        throw_usage("--text-turn prices the LLM's text-mode turn: use --stage llm (not '" + o.stages + "')");
    const std::vector<std::string> stages = lm_stages("lm-fidelity", "llm", o.models, o.model);
    std::string path = o.model;
    if (!o.models.empty()) {
        const speak::Kit kit = speak::resolve_kit(o.models);
        speak::require_minicpmo45(kit, "rtf lm-fidelity");
        path = kit.llm;
    }
    const std::string type = o.types_given ? o.types : "file";
    if (type.find(',') != std::string::npos) throw_usage("--text-turn: one --weight-type (both sides run it), not a list");
    if (type != "file") parse_types(type);
    lm::LlmTurnFidelityConfig c;
    c.model_path = path;
    c.placement.weight_type = type;
    c.placement.n_threads = c.placement.n_threads_batch = o.threads;
    c.turn = o.text_turn;
    c.text = o.text;
    if (o.n > 0) c.max_tokens = o.n;
    std::cerr << "lm-fidelity llm text-turn " << o.text_turn << " vs echo (both at weight type " << type << "): " << path
              << "\n";
    const lm::WeightFidelity f = lm::llm_text_turn_fidelity(c);
    const bool ok = print_result("llm text-turn " + o.text_turn, f);
    nlohmann::json out = {{"schema", "rtfkit.lm-fidelity/1"}, {"results", nlohmann::json::array({f.to_json()})}};
    if (!o.json_path.empty()) write_json(out, o.json_path);
    return o.check && !ok ? 2 : 0;
}

int run_lm_fidelity(const LmFidelityOptions &o) {
    if (!o.text_turn.empty()) return run_text_turn(o);
    const std::vector<std::string> stages = lm_stages("lm-fidelity", o.stages, o.models, o.model);
    const auto types = parse_types(o.types);
    speak::Kit kit;
    if (!o.models.empty()) kit = speak::resolve_kit(o.models);
    if (!o.models.empty()) speak::require_minicpmo45(kit, "rtf lm-fidelity");

    nlohmann::json out = {{"schema", "rtfkit.lm-fidelity/1"}, {"results", nlohmann::json::array()}};
    bool missed = false;
    for (const auto &s : stages) {
        const std::string path = !o.model.empty() ? o.model : s == "llm" ? kit.llm : kit.tts;
        for (const auto &t : types) {
            std::cerr << "lm-fidelity " << s << " " << t << " vs the file's own weights: " << path << "\n";
            lm::WeightFidelity f;
            if (s == "llm") {
                lm::LlmFidelityConfig c;
                c.model_path = path;
                c.placement.weight_type = t;
                c.placement.n_threads = c.placement.n_threads_batch = o.threads;
                c.text = o.text;
                if (o.n > 0) c.max_tokens = o.n;
                f = lm::llm_weight_fidelity(c);
            } else {
                lm::TtsFidelityConfig c;
                c.model_path = path;
                c.placement.weight_type = t;
                c.placement.n_threads = c.placement.n_threads_batch = o.threads;
                if (o.n > 0) c.n_codes = o.n;
                f = lm::tts_weight_fidelity(c);
            }
            missed = !print_result(s + " " + t, f) || missed;
            out["results"].push_back(f.to_json());
        }
    }
    if (!o.json_path.empty()) write_json(out, o.json_path);
    return o.check && missed ? 2 : 0;
}

void add_lm_fidelity_command(CLI::App &app, std::function<int()> &action) {
    auto o = std::make_shared<LmFidelityOptions>();
    auto *sub = app.add_subcommand(
        "lm-fidelity",
        "What an LM weight type costs: KL divergence (mean, p99) and top-1 agreement of the sampler's distribution, "
        "and the hidden rows' SNR, vs the file's own weights, teacher-forced (as llama-perplexity --kl-divergence)");
    sub->add_option("--models", o->models, "Kit directory (real or twin); the stage picks its file");
    sub->add_option("--model", o->model, "A GGUF file instead of a kit (exactly one --stage)");
    sub->add_option("--stage", o->stages, "Stages, comma-separated: llm, tts")->default_str(o->stages);
    auto *wt = sub->add_option("--weight-type", o->types,
                               "Types to price, comma-separated (q8_0, q4_k_m, ...; see --llm-weight-type); with --text-turn "
                               "one type both sides run (default there: the file's own)")
                   ->default_str(o->types);
    sub->add_option("--text-turn", o->text_turn,
                    "Price text mode's user turn instead (--text-turn of speak): fixed, the reply after the fixed "
                    "instruction, against echo, the reply after the text itself (the reference); the LLM only")
        ->check(CLI::IsMember({"fixed"}));
    sub->add_option("-n", o->n, "Positions compared: LLM tokens of the text (default 256 at most), TTS codes (default 200)")
        ->check(CLI::Range(0, 4000));
    sub->add_option("--text", o->text, "LLM: the text teacher-forced (default: a built-in English passage)");
    sub->add_option("-t,--threads", o->threads, "Threads (0 = all CPUs)")->default_str("0")->check(CLI::Range(0, 4096));
    sub->add_flag("--check", o->check, "Exit 2 when a type misses the profile's lines (mean KL <= 0.01, top-1 >= 98 %)");
    sub->add_option("--json", o->json_path, "Write the results as JSON ('-' = stdout)");
    sub->callback([&action, o, wt] {
        o->types_given = wt->count() > 0;
        action = [o] { return run_lm_fidelity(*o); };
    });
}

}  // namespace

RTF_COMMAND(33, add_lm_fidelity_command);

}  // namespace rtf::cli
