// rtf sample: device utilisation on its own (docs/method.md §3, "is the device really used?").
// Samples CPU (per core, /proc/stat), NVIDIA GPUs (NVML) and Ascend NPUs (npu-smi) every
// --sample-ms for --duration, or while a command given after `--` runs, then prints each
// device's mean, duty cycle, burst level and peak; --json keeps the full series, --trace
// writes them as Perfetto/Chrome counter tracks.
//
// Decisions (documented in --help):
//   * With a command, rtf's exit code is the command's (128 + N when signal N ended it;
//     127 / 126 when it cannot be started), so `rtf sample -- X` can stand in for `X` in
//     scripts; rtf's own usage/setup errors are still 1, before anything runs.
//   * --duration and a command are exclusive: sampling lasts as long as the command.
//   * Ctrl-C (SIGINT) or SIGTERM stops sampling and still writes the summary and the files.
//     A signal sent to rtf alone (kill PID) is passed on to the command; one from the
//     terminal already reached the command (same process group) and is not sent twice.
//     A second signal, or 10 s without the command ending, kills it (SIGKILL); a third
//     signal ends rtf at once. Without a command an interrupted run exits 0 ("interrupted"
//     in the JSON).
//   * The summary goes to stdout without a command, to stderr with one (the command owns
//     stdout), as time(1) does. The live progress line is on stderr when it is a terminal.
#include <signal.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/cli-util.h"
#include "cli/commands.h"
#include "core/elapsed.h"
#include "core/error.h"
#include "core/format.h"
#include "core/parse.h"
#include "machine/provenance.h"
#include "monitor/child-process.h"
#include "monitor/monitor.h"
#include "monitor/trace-counters.h"
#include "profile/trace.h"

namespace rtf::cli {

namespace {

constexpr const char *kSchema = "rtfkit.sample/1";
constexpr double kDefaultDurationMs = 10000;
constexpr double kKillGraceMs = 10000;

struct SampleOptions {
    std::string sample_ms = "500";
    std::string duration;  // empty: 10 s without a command, the command's run time with one
    std::string devices = "auto";
    std::string compute_threshold = "5", memory_threshold = "5";
    std::string json_path, trace_path;
    std::vector<std::string> command;
};

// ---- stop signals ---------------------------------------------------------------------
// The handler only stores numbers in lock-free atomics (async-signal-safe, and seen by the
// main thread whichever thread the signal lands on); the main loop acts on them.
std::atomic<int> g_signal{0};         // the first stop signal
std::atomic<int> g_signal_count{0};
std::atomic<bool> g_from_terminal{false};  // the first came from the tty driver (SI_KERNEL)
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

extern "C" void on_stop_signal(int sig, siginfo_t *info, void *) {
    const int n = g_signal_count.fetch_add(1) + 1;
    if (n == 1) {
        g_from_terminal.store(info && info->si_code == SI_KERNEL);
        g_signal.store(sig);
    }
    if (n >= 3) {  // stuck: let the default action end rtf
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

class StopSignals {
public:
    StopSignals() {
        g_signal.store(0);
        g_signal_count.store(0);
        g_from_terminal.store(false);
        struct sigaction sa {};
        sa.sa_sigaction = on_stop_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old_int_);
        sigaction(SIGTERM, &sa, &old_term_);
    }
    ~StopSignals() {
        sigaction(SIGINT, &old_int_, nullptr);
        sigaction(SIGTERM, &old_term_, nullptr);
    }
    StopSignals(const StopSignals &) = delete;
    StopSignals &operator=(const StopSignals &) = delete;

private:
    struct sigaction old_int_ {}, old_term_ {};
};

// ---- helpers --------------------------------------------------------------------------
std::string shell_quote(const std::vector<std::string> &argv) {
    std::string out;
    for (const auto &a : argv) {
        if (!out.empty()) out += ' ';
        bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                       "0123456789-_./=:,+@%") == std::string::npos;
        if (plain) {
            out += a;
        } else {
            out += '\'';
            for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
            out += '\'';
        }
    }
    return out;
}

// Fails now rather than after a long run when an output file cannot be created.
void check_writable(const std::string &path, const char *flag) {
    namespace fs = std::filesystem;
    fs::path p(path);
    fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw_usage(std::string(flag) + ": cannot write '" + path + "': folder '" + dir.string() + "' does not exist");
    if (fs::is_directory(p, ec)) throw_usage(std::string(flag) + ": '" + path + "' is a folder; give a file name");
    if (::access(dir.c_str(), W_OK) != 0)
        throw_usage(std::string(flag) + ": cannot write '" + path + "': folder '" + dir.string() + "' is not writable");
}

struct DeviceChoice {
    bool cpu = false, nvidia = false, npu = false;
    std::vector<std::string> names;  // as asked, for the JSON
};

DeviceChoice parse_devices(const std::string &text) {
    DeviceChoice d;
    for (auto name : split(text, ',')) {
        name = trim(name);
        if (name == "auto" || name == "all") {
            d.cpu = d.nvidia = d.npu = true;
        } else if (name == "cpu") {
            d.cpu = true;
        } else if (name == "nvidia" || name == "gpu" || name == "nvml") {
            d.nvidia = true;
        } else if (name == "npu" || name == "ascend" || name == "npu-smi") {
            d.npu = true;
        } else {
            throw_usage("--devices: '" + name + "' is not a device kind; allowed: auto, or a list of cpu, nvidia, npu");
        }
        d.names.push_back(name);
    }
    if (!d.cpu && !d.nvidia && !d.npu)
        throw_usage("--devices: empty; allowed: auto, or a list of cpu, nvidia, npu");
    return d;
}

// What the live line shows: the latest figure of each device that is not one CPU core.
struct LiveState {
    std::mutex mu;
    long ticks = 0;
    std::string figures;
};

void print_summary(std::ostream &out, const mon::MonitorReport &rep, const mon::DutyCycleConfig &duty) {
    char line[200];
    std::snprintf(line, sizeof line, "%-10s %8s %8s %8s %11s %13s %9s\n", "device", "samples", "mean %", "peak %",
                  "duty cycle", "burst mean %", "memory %");
    out << line;
    bool any_memory = false, any_compute_only = false;
    for (const auto &d : rep.devices) {
        const auto &c = d.duty;
        const bool core = mon::is_cpu_core_device(d.device);
        std::string name = (core ? "  " : "") + d.device;
        std::string duty_s = std::isfinite(c.duty_cycle) ? fmt(100.0 * c.duty_cycle, 0) + " %" : "-";
        std::snprintf(line, sizeof line, "%-10s %8d %8s %8s %11s %13s %9s\n", name.c_str(), c.n,
                      fmt(c.mean_compute, 1, "-").c_str(), fmt(c.max_compute, 1, "-").c_str(), duty_s.c_str(),
                      fmt(c.active_mean_compute, 1, "-").c_str(), fmt(c.mean_memory, 1, "-").c_str());
        out << line;
        if (c.memory_reported)
            any_memory = true;
        else
            any_compute_only = true;
        if (c.n_missing > 0 && !core)
            out << "  (" << d.device << ": " << c.n_missing << " samples without a figure, not counted)\n";
    }
    out << "duty cycle = share of samples with compute > " << fmt(duty.compute_threshold_pct, 1) << " %";
    if (any_memory) out << " and memory traffic > " << fmt(duty.memory_threshold_pct, 1) << " %";
    if (any_compute_only) out << (any_memory ? " (compute only where memory % is '-')" : " (no memory-traffic figure: compute only)");
    out << "; burst mean = mean compute over those samples\n";
}

// Every flag checked before anything starts: the sampling plan.
struct SamplePlan {
    double sample_ms = 0;
    double duration_ms = 0;  // 0 = until the command ends or Ctrl-C
    bool with_command = false;
    DeviceChoice dev;
    mon::MonitorConfig mc;
};

SamplePlan plan_sample(const SampleOptions &o) {
    SamplePlan p;
    p.sample_ms = parse_double(o.sample_ms, "--sample-ms", -1e300, 1e300);
    if (!(p.sample_ms >= 1 && p.sample_ms <= 500))
        throw_usage("--sample-ms: '" + o.sample_ms +
                    "' is outside 1 .. 500 ms (sample at 0.5 s or faster)");
    p.with_command = !o.command.empty();
    p.duration_ms = p.with_command ? 0 : kDefaultDurationMs;
    if (!o.duration.empty()) {
        if (p.with_command)
            throw_usage("--duration: not with a command; sampling lasts as long as the command (stop it early with "
                        "Ctrl-C)");
        p.duration_ms = parse_duration_ms(o.duration, "--duration");
        if (!(p.duration_ms >= 0 && p.duration_ms <= 7 * 24 * 3600e3))
            throw_usage("--duration: '" + o.duration + "' is outside 0 .. 7 days (0 = until Ctrl-C)");
    }
    p.dev = parse_devices(o.devices);
    p.mc.interval_ms = p.sample_ms;
    p.mc.cpu = p.dev.cpu;
    p.mc.per_core = true;
    p.mc.nvml = p.dev.nvidia;
    p.mc.npu_smi = p.dev.npu;
    auto threshold = [](const std::string &text, const char *flag) {
        double v = parse_double(text, flag, -1e300, 1e300);
        if (!(v >= 0 && v < 100)) throw_usage(std::string(flag) + ": '" + text + "' is outside 0 .. 100 % (100 excluded)");
        return v;
    };
    p.mc.duty.compute_threshold_pct = threshold(o.compute_threshold, "--compute-threshold");
    p.mc.duty.memory_threshold_pct = threshold(o.memory_threshold, "--memory-threshold");
    if (p.with_command && o.json_path == "-")
        throw_usage("--json -: not with a command (the command writes to stdout); give a file name");
    if (!o.json_path.empty() && o.json_path != "-") check_writable(o.json_path, "--json");
    if (!o.trace_path.empty()) {
        if (o.trace_path == "-") throw_usage("--trace: give a file name ('-' is not supported)");
        check_writable(o.trace_path, "--trace");
    }
    return p;
}

// Says which samplers are not running (and why), and when /proc/stat's tick is coarser than
// the interval; none running is a setup error.
void note_samplers(mon::Monitor &monitor, const SamplePlan &p, const SampleOptions &o) {
    int n_active = 0;
    const std::map<std::string, const char *> kind_of = {{"cpu", "cpu"}, {"nvml", "nvidia"}, {"npu-smi", "npu"}};
    for (const auto &[name, state] : monitor.sampler_status()) {
        if (state == "active") {
            ++n_active;
        } else {
            auto k = kind_of.find(name);
            std::cerr << "rtf sample: note: " << (k != kind_of.end() ? k->second : name.c_str()) << " (" << name
                      << "): " << state << "; not sampled\n";
        }
    }
    if (n_active == 0) throw_setup("--devices " + o.devices + ": none of these devices is available on this machine");
    const long clk_tck = sysconf(_SC_CLK_TCK);
    if (p.dev.cpu && clk_tck > 0 && p.sample_ms < 2000.0 / static_cast<double>(clk_tck))
        std::cerr << "rtf sample: note: /proc/stat counts CPU time in " << fmt(1000.0 / static_cast<double>(clk_tck), 0)
                  << " ms ticks; at --sample-ms " << o.sample_ms
                  << " many CPU samples hold no tick (not counted) and the rest are coarse\n";
}

// The Chrome trace: the command's span and the devices' counters.
void write_sample_trace(const SampleOptions &o, const mon::MonitorReport &rep, const mon::ChildProcess *child,
                        double child_start_ms, double child_end_ms, int exit_code) {
    auto ev = nlohmann::json::array();
    ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0}, {"args", {{"name", "rtf sample"}}}});
    if (child) {
        ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "command"}}}});
        ev.push_back({{"name", shell_quote(o.command)},
                      {"cat", "command"},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", 1},
                      {"ts", child_start_ms * 1000.0},
                      {"dur", (child_end_ms - child_start_ms) * 1000.0},
                      {"args", {{"exit_code", exit_code}, {"status", child->status()->describe()}}}});
    }
    auto counters = mon::trace_counter_events(rep, 0.0, 1, true);
    ev.insert(ev.end(), counters.begin(), counters.end());
    prof::write_trace_file({{"traceEvents", ev}, {"displayTimeUnit", "ms"}}, o.trace_path);
}

// How a sampling run ended (the JSON's top-level facts).
struct SampleOutcome {
    std::string stop_reason;
    double elapsed_ms = 0, child_start_ms = 0, child_end_ms = -1;
    int exit_code = 0;
    long n_ticks = 0;
};

// The result document (schema rtfkit.sample/1): config, machine, the command's outcome and
// the devices' duty-cycle summaries and series, shaped as a bench run's "devices".
nlohmann::json sample_json(const SampleOptions &o, const SamplePlan &p, const mon::MonitorReport &rep,
                           const mon::ChildProcess *child, const SampleOutcome &r) {
    nlohmann::json j = {{"schema", kSchema}, {"command", "sample"}, {"created", utc_timestamp()}};
    j["config"] = {{"sample_ms", p.sample_ms},
                   {"duration_ms", p.duration_ms > 0 ? nlohmann::json(p.duration_ms) : nlohmann::json(nullptr)},
                   {"devices", p.dev.names},
                   {"compute_threshold_pct", p.mc.duty.compute_threshold_pct},
                   {"memory_threshold_pct", p.mc.duty.memory_threshold_pct}};
    j["machine"] = machine_json();
    j["versions"] = versions_json();
    j["elapsed_ms"] = r.elapsed_ms;
    j["stop_reason"] = r.stop_reason;
    j["interrupted"] = g_signal != 0 && r.stop_reason.rfind("interrupted", 0) == 0;
    if (child) {
        const auto &s = *child->status();
        j["child"] = {{"argv", o.command},
                      {"exit_code", r.exit_code},
                      {"status", s.describe()},
                      {"exited", s.exited},
                      {"code", s.exited ? nlohmann::json(s.code) : nlohmann::json(nullptr)},
                      {"signal", s.exited ? nlohmann::json(nullptr) : nlohmann::json(s.signal)},
                      {"start_ms", r.child_start_ms},
                      {"end_ms", r.child_end_ms}};
    } else {
        j["child"] = nullptr;
    }
    j["n_ticks"] = r.n_ticks;
    // interval_ms, samplers, devices (each: the duty-cycle summary and the series) — the
    // same shape as a bench run's "devices".
    const nlohmann::json series = mon::to_json(rep, true);
    for (auto it = series.begin(); it != series.end(); ++it) j[it.key()] = it.value();
    j["exit_code"] = r.exit_code;
    return j;
}

int run_sample(const SampleOptions &o) {
    using Clock = std::chrono::steady_clock;
    const SamplePlan plan = plan_sample(o);
    const double sample_ms = plan.sample_ms, duration_ms = plan.duration_ms;
    const bool with_command = plan.with_command;
    const mon::MonitorConfig &mc = plan.mc;

    // ---- samplers ----
    const auto t0 = Clock::now();
    auto now_ms = [t0] { return ms_since(t0); };
    mon::Monitor monitor(mc, now_ms);
    note_samplers(monitor, plan, o);

    auto live = std::make_shared<LiveState>();
    monitor.on_tick([live](double, const std::vector<mon::DeviceReading> &readings) {
        std::string f;
        for (const auto &r : readings) {
            if (mon::is_cpu_core_device(r.device)) continue;
            f += "  " + r.device + " " + fmt(r.sample.compute_pct, 1, "-") + " %";
        }
        std::lock_guard lock(live->mu);
        ++live->ticks;
        live->figures = f;
    });
    const bool tty = ::isatty(STDERR_FILENO) != 0;

    // ---- run ----
    StopSignals signals;
    monitor.start();
    std::unique_ptr<mon::ChildProcess> child;
    double child_start_ms = 0, child_end_ms = -1;
    if (with_command) {
        mon::SpawnFailure why;
        child_start_ms = now_ms();
        child = mon::ChildProcess::spawn(o.command, &why);
        if (!child) {
            monitor.stop();
            std::cerr << "rtf sample: " << why.message << " (exit " << why.shell_code << ", as a shell would)\n";
            return why.shell_code;
        }
    }
    std::string stop_reason;
    auto last_progress = Clock::now() - std::chrono::seconds(1);
    auto clear_progress = [&] {
        if (tty) std::cerr << "\r\033[K" << std::flush;
    };
    while (true) {
        if (child && child->poll()) {
            child_end_ms = now_ms();
            stop_reason = "command ended";
            break;
        }
        if (g_signal != 0) {
            stop_reason = std::string("interrupted (") + (g_signal == SIGINT ? "SIGINT" : "SIGTERM") + ")";
            break;
        }
        const double t = now_ms();
        if (duration_ms > 0 && t >= duration_ms) {
            stop_reason = "duration reached";
            break;
        }
        if (tty && Clock::now() - last_progress >= std::chrono::milliseconds(250)) {
            last_progress = Clock::now();
            long ticks;
            std::string figures;
            {
                std::lock_guard lock(live->mu);
                ticks = live->ticks;
                figures = live->figures;
            }
            std::cerr << "\r\033[Krtf sample: " << fmt(t / 1000.0, 1) << " s, " << ticks << " samples" << figures
                      << std::flush;
        }
        double left = duration_ms > 0 ? duration_ms - t : 1e9;
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(std::clamp(left, 0.0, 10.0)));
    }
    // Sampling ends at the stopping event; the command (if any) is then brought to an end.
    mon::MonitorReport rep = monitor.stop();
    const double elapsed_ms = now_ms();
    clear_progress();
    if (child && !child->status()) {
        const int sig = g_signal;
        if (!g_from_terminal) child->send(sig);
        std::cerr << "rtf sample: " << stop_reason << "; sampling stopped, waiting for the command to end "
                  << "(again to kill it)\n";
        const auto grace_end = Clock::now() + std::chrono::duration<double, std::milli>(kKillGraceMs);
        while (!child->wait_for(20)) {
            if (g_signal_count >= 2 || Clock::now() >= grace_end) {
                std::cerr << "rtf sample: killing the command (SIGKILL)\n";
                child->send(SIGKILL);
                child->wait();
                break;
            }
        }
        child_end_ms = now_ms();
    }

    // ---- outputs ----
    const int exit_code = child ? child->status()->shell_code() : 0;
    std::ostringstream text;
    text << "rtf sample: " << fmt(elapsed_ms / 1000.0, 2) << " s, sampled every " << fmt(sample_ms, 0) << " ms; "
         << stop_reason << "\n";
    if (child)
        text << "command: " << shell_quote(o.command) << " -> " << child->status()->describe() << " after "
             << fmt((child_end_ms - child_start_ms) / 1000.0, 2) << " s\n";
    print_summary(text, rep, mc.duty);

    if (!o.trace_path.empty()) write_sample_trace(o, rep, child.get(), child_start_ms, child_end_ms, exit_code);
    if (!o.json_path.empty()) {
        SampleOutcome r{stop_reason, elapsed_ms, child_start_ms, child_end_ms, exit_code, 0};
        {
            std::lock_guard lock(live->mu);
            r.n_ticks = live->ticks;
        }
        write_json(sample_json(o, plan, rep, child.get(), r), o.json_path);
    }
    if (with_command)
        std::cerr << text.str();
    else if (o.json_path != "-")
        std::cout << text.str();
    return exit_code;
}

}  // namespace

static void add_sample_command(CLI::App &app, Action &action) {
    auto *sub = app.add_subcommand(
        "sample",
        "Sample device utilisation (CPU per core from /proc/stat, NVIDIA via NVML, Ascend via npu-smi) for "
        "--duration or while a command runs (rtf sample [flags] -- COMMAND ARGS...), then print each device's mean, "
        "duty cycle (share of samples with compute AND memory traffic over the thresholds) and peak. With a "
        "command, the exit code is the command's (128+N for signal N, 127/126 when it cannot be started) and the "
        "summary goes to stderr; Ctrl-C stops sampling and still writes the outputs");
    auto o = std::make_shared<SampleOptions>();
    sub->add_option("--sample-ms", o->sample_ms, "Sampling interval, ms, 1 .. 500 (docs/method.md §3)")
        ->default_str(o->sample_ms);
    sub->add_option("--duration", o->duration,
                    "How long to sample without a command: e.g. 10s, 1.5s, 500ms (a bare number is ms); 0 = until "
                    "Ctrl-C. Default 10s. Not with a command (sampling lasts as long as it runs)");
    sub->add_option("--devices", o->devices,
                    "What to sample: auto (every kind present), or a list of cpu, nvidia, npu; an absent one is "
                    "noted and skipped")
        ->default_str(o->devices);
    sub->add_option("--compute-threshold,--duty-compute-pct", o->compute_threshold,
                    "Duty cycle: a sample is active when compute > this, %")
        ->default_str(o->compute_threshold);
    sub->add_option("--memory-threshold,--duty-memory-pct", o->memory_threshold,
                    "Duty cycle: ... and memory traffic > this, % (devices without a memory figure: compute only)")
        ->default_str(o->memory_threshold);
    sub->add_option("--json", o->json_path,
                    std::string("Write the summary and every series (schema ") + kSchema +
                        ") to FILE ('-' = stdout, without a command only)");
    sub->add_option("--trace", o->trace_path,
                    "Write a Chrome/Perfetto trace (ui.perfetto.dev) with one counter track per device (and the "
                    "command's run) to FILE");
    sub->add_option("command", o->command, "The command to run and sample, after '--' (e.g. -- sh -c 'make -j2')");
    // A repeated scalar flag takes its last value (scripts append overrides), as in getopt.
    for (auto *opt : sub->get_options())
        if (opt->get_items_expected_max() == 1 && opt->get_type_size_max() == 1) opt->take_last();
    sub->callback([&action, o] { action = [o] { return run_sample(*o); }; });
}

RTF_COMMAND(65, add_sample_command);

}  // namespace rtf::cli
