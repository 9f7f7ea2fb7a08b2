// rtf predict: each stage's floor RTF on a described machine with a given placement, the
// bottleneck, the serial and overlapped hard limits, what moves the bottleneck, and — from a
// run measured here (the history) — the efficiency this machine reached per stage and the
// likely figure it implies there (bench/predict.h; hardware descriptions: bench/hardware.h).
// Models: a kit folder (--models, costed from its GGUF headers) or a scale of the family's
// layout table (--scale full: the real shapes, never written here). Exit 0; 1 usage/setup.
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "predict/hardware.h"
#include "predict/model-floors.h"
#include "predict/predict.h"
#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/format.h"
#include "core/parse.h"
#include "history/history.h"
#include "models/gguf/layout.h"
#include "models/gguf/minicpmo45-layout.h"
#include "machine/provenance.h"
#include "report/report.h"

namespace rtf::cli {

namespace {

struct PredictOptions {
    std::string models, scale, type = "f16", hardware, placement;
    std::string text_tokens_per_s = "4", llm_kv_tokens = "512", tts_kv_tokens = "256";
    std::string calibrate = "auto", here = "auto", history_db;
    bool list = false;
    std::string json_path, md_path;
};

std::string knob(const nlohmann::json &knobs, const std::string &k) {
    auto it = knobs.find(k);
    return it != knobs.end() && it->is_string() ? it->get<std::string>() : "";
}

// The history row to calibrate with: `sel` = an id, "auto" (the newest on this machine with
// per-stage figures) or "none".
std::optional<history::Entry> calibration_row(const std::string &sel, const std::string &db, std::string &why) {
    if (sel == "none") return std::nullopt;
    history::History h(db.empty() ? history::History::default_path() : db);
    if (sel != "auto") {
        auto e = h.get(parse_int(sel, "--calibrate (a history id, auto or none)", 1, INT64_MAX));
        if (!e) throw_usage("--calibrate: no history row " + sel + " in " + h.path());
        return e;
    }
    history::Filter f;
    f.machine_id = history::machine_id(machine_json());
    f.metric = "rtf_stage.tts";
    auto rows = h.list(f);
    for (auto it = rows.rbegin(); it != rows.rend(); ++it)
        if (it->kit.is_object() && !predict::measured_stage_rtfs(it->metrics).empty()) return *it;
    why = "no measured run of this machine with per-stage figures in " + h.path() +
          " (run `rtf bench --workload speak --models KIT` or `rtf speak`; or --calibrate ID)";
    return std::nullopt;
}

// This machine's description for the calibration floors: --here, or with "auto" the shipped
// description whose CPU model is this machine's.
std::optional<predict::Hardware> here_hardware(const std::string &sel, const nlohmann::json &machine, std::string &why) {
    if (sel != "auto") return predict::load_hardware(sel);
    const auto c = machine.find("cpu");
    const std::string cpu = c != machine.end() && c->is_object() ? c->value("cpu_model", "") : "";
    for (const auto &n : predict::list_hardware()) {
        auto h = predict::load_hardware(n);
        if (h.devices.size() == 1 && h.devices[0].is_cpu() && !cpu.empty() && h.devices[0].model == cpu) return h;
    }
    why = "no shipped description of this CPU ('" + cpu + "'): write one with `rtf limits --save-hardware FILE` "
          "and pass --here FILE";
    return std::nullopt;
}

int run_predict(const PredictOptions &o) {
    if (o.list) {
        for (const auto &n : predict::list_hardware()) {
            auto h = predict::load_hardware(n);
            std::cout << n << "  " << h.title << "  (placement " << predict::placement_text(predict::parse_placement("", h)) << ")\n";
        }
        return 0;
    }
    if (o.hardware.empty()) throw_usage("--hardware: required (a shipped NAME, see --list, or FILE.json)");
    if (o.models.empty() == o.scale.empty()) throw_usage("--models KIT or --scale tiny|cpu|full: give exactly one");
    predict::FloorAssumptions fa;
    fa.text_tokens_per_s = parse_double(o.text_tokens_per_s, "--text-tokens-per-s", 1e-3, 1e4);
    fa.llm_kv_tokens = static_cast<int>(parse_int(o.llm_kv_tokens, "--llm-kv-tokens", 0, 1 << 22));
    fa.tts_kv_tokens = static_cast<int>(parse_int(o.tts_kv_tokens, "--tts-kv-tokens", 0, 1 << 22));
    const predict::Hardware hw = predict::load_hardware(o.hardware);
    const predict::Placement pl = predict::parse_placement(o.placement, hw);
    const predict::ModelCosts costs =
        o.models.empty() ? predict::model_costs_for_layout(gguf::minicpmo45::parse_scale(o.scale, "--scale"),
                                                          gguf::parse_weight_type(o.type, "--type"), fa)
                         : predict::model_costs(o.models, fa);
    predict::Prediction p = predict::predict(costs, hw, pl, fa);

    // Calibration: the same stages measured here, against their floors here.
    std::string why;
    nlohmann::json cal = nullptr;
    if (auto row = calibration_row(o.calibrate, o.history_db, why)) {
        const std::string kit_dir = row->kit.is_object() ? row->kit.value("dir", "") : "";
        auto here = here_hardware(o.here, row->machine, why);
        if (kit_dir.empty()) {
            why = "history row " + std::to_string(row->id) + " names no kit folder";
        } else if (here) {
            const int all = here->devices[0].max_threads();
            auto th = [&](const std::string &k) {
                const std::string v = knob(row->knobs, k);
                const int n = v.empty() ? 0 : static_cast<int>(parse_int(v, "history knob " + k, 0, 4096));
                return std::to_string(n <= 0 || n > all ? all : n);
            };
            const std::string cpu = here->devices[0].name;
            const auto here_pl = predict::parse_placement("llm=" + cpu + ":" + th("llm-threads") + ",tts=" + cpu + ":" +
                                                            th("tts-threads") + ",t2m=" + cpu + ":" + th("t2w-threads-t2m") +
                                                            ",voc=" + cpu + ":" + th("t2w-threads-voc"),
                                                        *here, "calibration placement");
            // The floors here at the text rate of the measured run (its reply's tokens per second of
            // audio), not the assumed one: the LLM's share depends on it.
            predict::FloorAssumptions fa_here = fa;
            history::History h(o.history_db.empty() ? history::History::default_path() : o.history_db);
            const nlohmann::json res = h.result(row->id);
            if (res.is_object() && res.contains("output") && res["output"].is_object()) {
                const auto &out = res["output"];
                const double n = out.value("n_text_tokens", 0.0), s = out.value("audio_s", 0.0);
                if (n > 0 && s > 0) fa_here.text_tokens_per_s = n / s;
            }
            const auto here_p = predict::predict(predict::model_costs(kit_dir, fa_here), *here, here_pl, fa_here);
            const std::string from = "history row " + std::to_string(row->id) + " (" + row->kind + ", " + row->created +
                                     ", kit " + kit_dir + ", " + fmt(fa_here.text_tokens_per_s, 2) +
                                     " text tokens per audio s) on " + here->name + " with " + predict::placement_text(here_pl);
            predict::calibrate(p, here_p, predict::measured_stage_rtfs(row->metrics), from);
            cal = {{"history_id", row->id}, {"kit", kit_dir}, {"here", here->path}, {"placement", predict::placement_text(here_pl)}};
            why.clear();
        }
    }
    if (!why.empty()) p.notes.push_back("no calibration: " + why);
    for (const auto &d : hw.devices)
        if (d.software)
            p.notes.push_back(d.name + " (" + d.model + ") is a software device: an accelerator API emulated on the CPU; its "
                              "figures say what that emulation does, not what a GPU would");

    nlohmann::json hwj = {{"name", hw.name}, {"title", hw.title}, {"path", hw.path}};
    nlohmann::json doc = {{"schema", "rtfkit.predict/1"},
                          {"command", "predict"},
                          {"hardware", hwj},
                          {"assumptions", fa.to_json()},
                          {"prediction", predict::to_json(p)},
                          {"calibration", cal},
                          {"versions", versions_json()}};
    if (o.json_path != "-" && o.md_path != "-") std::cout << report::predict_markdown(doc);
    if (!o.json_path.empty()) write_json(doc, o.json_path);
    if (!o.md_path.empty()) report::write_report(doc, o.md_path, report::Format::Markdown);
    return 0;
}

}  // namespace

static void add_predict_command(CLI::App &app, Action &action) {
    auto *sub = app.add_subcommand(
        "predict", "Predict each stage's floor RTF on another machine from a hardware description (peak FLOP/s per "
                   "type, memory and host-link bandwidth, cores; every figure with its source) and a placement: the "
                   "bottleneck, serial and overlapped hard limits, what moves the bottleneck, and with a run measured "
                   "here the efficiency per stage and a likely figure (floor / efficiency: an extrapolation)");
    auto o = std::make_shared<PredictOptions>();
    sub->add_option("--models", o->models, "Kit folder: costs from its GGUF headers (as rtf limits)");
    sub->add_option("--scale", o->scale,
                    "Instead of a kit: cost the family's layout table at this scale (tiny, cpu, full = Qwen3-8B LLM, "
                    "real token2wav), no files needed");
    sub->add_option("--type", o->type, "With --scale: LLM/TTS weight type f16, q8_0, q4_k_m")->default_str(o->type);
    sub->add_option("--hardware", o->hardware,
                    "A shipped description NAME (see --list: this dev VM, rtx-4090, h200, ascend-910b, apple-m2-ultra) "
                    "or FILE.json (schema rtfkit.hardware/1, see bench/hardware.h)");
    sub->add_option("--placement", o->placement,
                    "Stages onto devices over the file's default: llm|tts|t2m|voc|t2w=DEVICE[:THREADS], e.g. "
                    "'llm=cpu:64,voc=cpu:8' (THREADS: CPU only; default all cores)");
    sub->add_option("--text-tokens-per-s", o->text_tokens_per_s, "Assumed speech rate: LLM text tokens per second of audio")
        ->default_str(o->text_tokens_per_s);
    sub->add_option("--llm-kv-tokens", o->llm_kv_tokens,
                    "LLM context position the KV read is costed at, and the prompt length of the prefill floor, tokens")
        ->default_str(o->llm_kv_tokens);
    sub->add_option("--tts-kv-tokens", o->tts_kv_tokens, "TTS context position the KV read is costed at, tokens")
        ->default_str(o->tts_kv_tokens);
    sub->add_option("--calibrate", o->calibrate,
                    "History row measured on this machine to take per-stage efficiencies from: an id (rtf history "
                    "list), auto (the newest with per-stage figures) or none")
        ->default_str(o->calibrate);
    sub->add_option("--here", o->here,
                    "This machine's description for the calibration floors (NAME or FILE from rtf limits "
                    "--save-hardware); auto = the shipped one whose CPU model matches")
        ->default_str(o->here);
    sub->add_option("--history-db", o->history_db, "Result history file (default $RTF_HISTORY_DB, else ~/.local/share/rtfkit/history.db)");
    sub->add_flag("--list", o->list, "List the shipped hardware descriptions and exit");
    sub->add_option("--json", o->json_path, "Write the prediction as JSON to FILE ('-' = stdout)");
    sub->add_option("--md", o->md_path, "Write the Markdown report to FILE ('-' = stdout)");
    for (auto *opt : sub->get_options())
        if (opt->get_items_expected_max() == 1 && opt->get_type_size_max() == 1) opt->take_last();
    sub->callback([&action, o] { action = [o] { return run_predict(*o); }; });
}

RTF_COMMAND(62, add_predict_command);

}  // namespace rtf::cli
