// rtf limits: what this machine can do (memory bandwidth, matmul FLOP rate per backend
// device and thread count) and, with --models DIR, each stage's floor and the path's
// hard-limit RTF for serial and overlapped schedules (docs/method.md §4).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "predict/hardware.h"
#include "predict/limits.h"
#include "predict/model-floors.h"
#include "predict/peak-flops.h"
#include "predict/roofline.h"
#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/format.h"
#include "core/parse.h"
#include "core/topology.h"
#include "machine/backend-devices.h"
#include "machine/provenance.h"
#include "models/t2w/packed-gemm.h"

namespace rtf::cli {

namespace {

// The peak a matmul row is read against: our packed GEMM's is the f32 FMA peak.
std::string peak_type(const std::string &matmul_type) { return matmul_type == "packed-f32" ? "f32" : matmul_type; }

struct LimitsOptions {
    std::string threads;  // default: 1 .. allowed PUs
    std::string bw_mib = "128";
    std::string reps = "5";
    std::string matmul_size = "1024";
    std::string types = "f32,f16";
    std::string gemv = "8192x8192";
    std::string devices = "all";
    bool no_bandwidth = false, no_matmul = false;
    std::string models;
    std::string text_tokens_per_s = "4", llm_kv_tokens = "512", tts_kv_tokens = "256";
    std::string stage_threads;
    std::string json_path;
    std::string save_hardware;
};

int run_limits(const LimitsOptions &o) {
    const auto &topo = cpu_topology();
    int n_pus = static_cast<int>(topo.allowed_pus.empty() ? 1 : topo.allowed_pus.size());
    std::vector<int> threads;
    if (o.threads.empty()) {
        for (int t = 1; t <= n_pus; t *= 2) threads.push_back(t);
        if (threads.back() != n_pus) threads.push_back(n_pus);
    } else {
        threads = parse_int_list(o.threads, "--threads");
        for (int t : threads)
            if (t < 1) throw_usage("--threads: thread counts must be >= 1");
    }
    const int max_threads = threads.back();
    const size_t bw_bytes = static_cast<size_t>(parse_int(o.bw_mib, "--bw-mib", 1, 1 << 20)) << 20;
    const int reps = static_cast<int>(parse_int(o.reps, "--reps", 1, 1000));
    const int mm = static_cast<int>(parse_int(o.matmul_size, "--matmul-size", 16, 16384));
    auto types = split(o.types, ',');
    for (auto &t : types) {
        t = trim(t);
        if (t != "f32" && t != "f16") throw_usage("--types: '" + t + "' is not f32 or f16");
    }
    auto gx = o.gemv.find('x');
    if (gx == std::string::npos) throw_usage("--gemv: '" + o.gemv + "' is not ROWSxCOLS (e.g. 8192x8192; 0x0 = off)");
    const int gm = static_cast<int>(parse_int(o.gemv.substr(0, gx), "--gemv", 0, 1 << 20));
    const int gk = static_cast<int>(parse_int(o.gemv.substr(gx + 1), "--gemv", 0, 1 << 20));
    std::vector<std::string> devices;
    for (const auto &d : backend_info().devices)
        if (o.devices == "all" || ("," + o.devices + ",").find("," + d.name + ",") != std::string::npos) devices.push_back(d.name);
    if (o.devices != "all")
        for (const auto &d : split(o.devices, ',')) find_backend_device(trim(d));  // Usage error names it

    predict::FloorAssumptions fa;
    fa.text_tokens_per_s = parse_double(o.text_tokens_per_s, "--text-tokens-per-s", 1e-3, 1e4);
    fa.llm_kv_tokens = static_cast<int>(parse_int(o.llm_kv_tokens, "--llm-kv-tokens", 0, 1 << 22));
    fa.tts_kv_tokens = static_cast<int>(parse_int(o.tts_kv_tokens, "--tts-kv-tokens", 0, 1 << 22));
    std::map<std::string, int> stage_threads;
    if (!o.stage_threads.empty())
        for (const auto &[s, v] : parse_key_values(o.stage_threads, "--stage-threads"))
            stage_threads[s] = static_cast<int>(parse_int(v, "--stage-threads " + s, 1, 4096));
    // Check the model folder before spending a minute measuring.
    std::unique_ptr<predict::ModelCosts> costs;
    if (!o.models.empty()) costs = std::make_unique<predict::ModelCosts>(predict::model_costs(o.models, fa));

    predict::MachineRates rates;
    std::ostringstream out;
    out << "rtf limits: " << (topo.cpu_model.empty() ? "unknown CPU" : topo.cpu_model) << ", " << topo.n_cores
        << " cores, " << n_pus << " PUs allowed\n\n";
    if (!o.no_bandwidth) {
        out << "memory bandwidth (CPU, " << (bw_bytes >> 20) << " MiB arrays, best of " << reps << "):\n"
            << "  threads   read GiB/s   triad GiB/s (STREAM)   copy GiB/s (as mbw memcpy)\n";
        for (int t : threads) {
            auto b = predict::measure_bandwidth(bw_bytes, t, reps);
            rates.bandwidth.push_back(b);
            out << "  " << t << "         " << fmt(b.read_gib_s, 2) << "        " << fmt(b.triad_gib_s, 2) << "                  "
                << fmt(b.copy_gib_s, 2) << "\n";
        }
        out << "\n";
    }
    if (!o.no_matmul) {
        // The CPU's own ceiling first, so each ggml rate can be printed against it.
        out << "arithmetic peak (CPU, register-only multiply-add loops, " << "all threads at once):\n"
            << "  type   isa          threads   GFLOP/s (int8: GOP/s)\n";
        for (int t : threads)
            for (const auto &ty : predict::peak_types()) {
                auto pr = predict::measure_peak(ty, t);
                rates.peak.push_back(pr);
                char line[160];
                std::snprintf(line, sizeof line, "  %-6s %-12s %-9d %.1f\n", pr.type.c_str(), pr.isa.c_str(), pr.n_threads,
                              pr.gflops);
                out << line;
            }
        out << "\n";
        out << "matrix multiply (ggml mul_mat, " << mm << "^3; GEMV " << gm << "x" << gk
            << " F16; packed-f32 = our token2mel GEMM, " << t2w::gemm::isa_name(t2w::gemm::kernel_isa())
            << " kernel, blocked for a window's <= ~100 rows, not for " << mm << "):\n"
            << "  device   type      threads   ms        GFLOP/s   weight GiB/s   of peak\n";
        for (const auto &d : devices) {
            bool cpu = find_backend_device(d).type == "cpu";
            if (!cpu) rates.host_link.push_back(predict::measure_host_link(d, bw_bytes, reps));
            std::vector<int> ts = cpu ? threads : std::vector<int>{0};
            for (int t : ts) {
                std::vector<predict::MatmulResult> rs;
                for (const auto &ty : types) rs.push_back(predict::measure_matmul(d, ty, t, mm, reps));
                // our packed F32 GEMM beside ggml's f32 (what Token2Wav's products run on here)
                if (cpu && predict::packed_gemm_available()) rs.push_back(predict::measure_packed_gemm(t, mm, reps));
                if (gm > 0 && gk > 0) rs.push_back(predict::measure_gemv(d, t, gm, gk, reps));
                for (const auto &r : rs) {
                    rates.matmul.push_back(r);
                    const double pk = cpu && r.type != "gemv-f16" ? rates.peak_gflops(peak_type(r.type), r.n_threads) : NAN;
                    char line[200];
                    std::snprintf(line, sizeof line, "  %-8s %-9s %-9d %-9.2f %-9.1f %-14.2f %s\n",
                                  (r.device + (find_backend_device(r.device).software ? "*" : "")).c_str(),
                                  r.type.c_str(), r.n_threads, r.ms, r.gflops, r.gib_s,
                                  std::isfinite(pk) ? (fmt(100.0 * r.gflops / pk, 0) + " %").c_str() : "-");
                    out << line;
                }
            }
        }
        for (const auto &l : rates.host_link) {
            const auto &bd = find_backend_device(l.device);
            out << "  " << l.device << ": " << bd.description << ", host -> device " << fmt(l.upload_gib_s, 2)
                << " GiB/s, device -> host " << fmt(l.download_gib_s, 2) << " GiB/s ("
                << (l.bytes >> 20) << " MiB)" << (bd.software ? "; * software: a Vulkan device emulated on the CPU, its rates are not a GPU's" : "")
                << "\n";
        }
        out << "\n";
    }
    nlohmann::json j = {{"schema", "rtfkit.limits/1"},
                        {"command", "limits"},
                        {"machine", machine_json()},
                        {"versions", versions_json()}};
    auto bw = nlohmann::json::array();
    for (const auto &b : rates.bandwidth) bw.push_back(predict::to_json(b));
    auto mmj = nlohmann::json::array();
    for (const auto &m : rates.matmul) {
        auto mj = predict::to_json(m);
        // the machine's ceiling beside ggml's achieved rate: their ratio is the operator headroom
        // (a packed-f32 row is our kernel's rate: "kernel_isa" and "of_peak" instead of ggml's fields)
        const bool ours = m.type == "packed-f32";
        if (!ours) mj["ggml_gflops"] = m.gflops;
        mj["software"] = find_backend_device(m.device).software;
        const double pk = m.device == "CPU" && m.type != "gemv-f16" ? rates.peak_gflops(peak_type(m.type), m.n_threads) : NAN;
        mj["peak_gflops"] = std::isfinite(pk) ? nlohmann::json(pk) : nlohmann::json(nullptr);
        mj[ours ? "of_peak" : "ggml_of_peak"] = std::isfinite(pk) && pk > 0 ? nlohmann::json(m.gflops / pk) : nlohmann::json(nullptr);
        if (ours) mj["kernel_isa"] = t2w::gemm::isa_name(t2w::gemm::kernel_isa());
        mmj.push_back(mj);
    }
    auto pkj = nlohmann::json::array();
    for (const auto &p : rates.peak) {
        auto pj = predict::to_json(p);
        pj["peak_gflops"] = p.gflops;
        pkj.push_back(pj);
    }
    j["bandwidth"] = bw;
    j["peak"] = pkj;
    j["matmul"] = mmj;
    auto hl = nlohmann::json::array();
    for (const auto &l : rates.host_link) {
        auto lj = predict::to_json(l);
        lj["software"] = find_backend_device(l.device).software;
        lj["description"] = find_backend_device(l.device).description;
        hl.push_back(lj);
    }
    j["host_link"] = hl;
    if (costs) {
        if (rates.bandwidth.empty() || rates.matmul.empty())
            throw_usage("--models needs both measurements (drop --no-bandwidth / --no-matmul)");
        auto p = predict::path_limits(*costs, rates, stage_threads, max_threads);
        auto cj = nlohmann::json::array();
        for (const auto &c : costs->stages) cj.push_back(predict::to_json(c));
        j["models"] = {{"dir", costs->dir},   {"family", costs->family}, {"assumptions", fa.to_json()},
                       {"stages", cj},        {"notes", costs->notes}};
        j["path"] = predict::to_json(p);
        out << "stage floors (" << costs->dir << "; RTF = seconds of work per second of audio):\n"
            << "  stage  threads  unit         units/s   MB/unit     GFLOP/unit  memory RTF  compute RTF  floor RTF  bound     "
               "compute RTF at ggml's rate\n";
        for (size_t i = 0; i < p.stages.size(); ++i) {
            const auto &f = p.stages[i];
            const auto &c = costs->stages[i];
            char line[240];
            std::snprintf(line, sizeof line, "  %-6s %-8d %-12s %-9.1f %-11.1f %-11.2f %-11.4f %-12.4f %-10.4f %-9s %.4f%s\n",
                          f.stage.c_str(), f.n_threads, c.unit.c_str(), c.units_per_audio_s, c.bytes_per_unit / 1e6,
                          c.flops_per_unit / 1e9, f.memory_rtf, f.compute_rtf, f.floor_rtf, f.bound.c_str(),
                          f.compute_rtf_ggml, f.compute_rate == "peak" ? "" : "  (no peak measured: compute RTF uses ggml's rate)");
            out << line;
        }
        out << "\n  hard limit, serial schedule      RTF " << fmt(p.serial_rtf, 4) << "\n"
            << "  hard limit, overlapped schedule  RTF " << fmt(p.overlapped_rtf, 4) << "  (set by "
            << p.overlapped_binding << ")\n";
        for (const auto &n : costs->notes) out << "  note: " << n << "\n";
        for (const auto &c : costs->stages)
            for (const auto &n : c.notes) out << "  " << c.stage << ": " << n << "\n";
    }
    if (!o.save_hardware.empty()) {
        // This CPU as an `rtf predict` hardware description: the rates at the most threads measured.
        write_json(predict::hardware_from_limits(rates, max_threads, topo.cpu_model.empty() ? "unknown CPU" : topo.cpu_model,
                                               utc_timestamp()),
                   o.save_hardware);
        out << "hardware description (rtf predict --hardware / --here): " << o.save_hardware << "\n";
    }
    if (o.json_path != "-") std::cout << out.str();
    if (!o.json_path.empty()) write_json(j, o.json_path);
    return 0;
}

}  // namespace

static void add_limits_command(CLI::App &app, Action &action) {
    auto *sub = app.add_subcommand(
        "limits", "Measure memory bandwidth, the CPU's arithmetic peak per ISA (f32/f16 FMA, AVX512-BF16, VNNI int8; "
                  "skipped with --no-matmul) and ggml's matmul FLOP rate per device and thread count (beside it our packed F32 GEMM's, the kernel Token2Wav's products run on where the CPU has AVX-512F or AVX2 + FMA); with --models, "
                  "each stage's floor and the path's hard-limit RTF (serial and overlapped)");
    auto o = std::make_shared<LimitsOptions>();
    sub->add_option("--threads", o->threads, "Thread counts to measure, e.g. 1,2 or 1-4 (default: 1, 2, 4, ... up to the allowed PUs)");
    sub->add_option("--bw-mib", o->bw_mib, "Size of each bandwidth array, MiB (>= 4x the last-level cache)")->default_str(o->bw_mib);
    sub->add_option("--reps", o->reps, "Repetitions per measurement (bandwidth: best; matmul: median)")->default_str(o->reps);
    sub->add_option("--matmul-size", o->matmul_size, "M = N = K of the matmul")->default_str(o->matmul_size);
    sub->add_option("--types", o->types, "Weight types of the matmul: f32, f16")->default_str(o->types);
    sub->add_option("--gemv", o->gemv, "F16 GEMV shape ROWSxCOLS (decode-like weight read); 0x0 = off")->default_str(o->gemv);
    sub->add_option("--devices", o->devices, "Backend devices for the matmul: all, or a list of names (rtf devices)")
        ->default_str(o->devices);
    sub->add_flag("--no-bandwidth", o->no_bandwidth, "Skip the bandwidth measurement");
    sub->add_flag("--no-matmul", o->no_matmul, "Skip the matmul measurement");
    sub->add_option("--models", o->models,
                    "Folder with the speak path's GGUF files (LLM, TTS, projector, token2wav): compute stage floors");
    sub->add_option("--text-tokens-per-s", o->text_tokens_per_s,
                    "Assumed speech rate: LLM text tokens per second of audio")->default_str(o->text_tokens_per_s);
    sub->add_option("--llm-kv-tokens", o->llm_kv_tokens, "LLM context position the KV read is costed at, tokens")
        ->default_str(o->llm_kv_tokens);
    sub->add_option("--tts-kv-tokens", o->tts_kv_tokens, "TTS context position the KV read is costed at, tokens")
        ->default_str(o->tts_kv_tokens);
    sub->add_option("--stage-threads", o->stage_threads,
                    "Threads per stage for its floor, e.g. llm=1,t2w=2 (default: all measured threads)");
    sub->add_option("--json", o->json_path, "Write the result as JSON to FILE ('-' = stdout)");
    sub->add_option("--save-hardware", o->save_hardware,
                    "Also write this CPU as a hardware description for `rtf predict` (read bandwidth and arithmetic "
                    "peaks at the most threads measured, each with its source) to FILE");
    // A repeated scalar flag takes its last value (scripts append overrides), as in getopt.
    for (auto *opt : sub->get_options())
        if (opt->get_items_expected_max() == 1 && opt->get_type_size_max() == 1) opt->take_last();
    sub->callback([&action, o] { action = [o] { return run_limits(*o); }; });
}

RTF_COMMAND(60, add_limits_command);

}  // namespace rtf::cli
