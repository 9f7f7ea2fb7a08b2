// rtf load: load generator for `rtf serve` (serve/load-gen.h). Fixed concurrency or Poisson
// arrivals; per-stream first audio, RTF and starvation from the chunks' arrival times;
// --find-capacity searches the largest concurrency that meets the targets.
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "core/error.h"
#include "core/format.h"
#include "core/parse.h"
#include "report/report.h"
#include "serve/load-gen.h"

namespace rtf::cli {

namespace {

struct LoadCmd {
    serve::LoadConfig c;
    std::string duration = "30s";
    CLI::Option *duration_opt = nullptr;  // given? (--requests alone means "this many", not "30 s of them")
    std::string json_path, md_path, html_path;
    bool find_capacity = false;
    double target_first_audio_ms = 0;  // 0 = no target (capacity: 1000)
    double min_real_time = 0.99;
    int max_concurrency = 16;
    bool quiet = false;
};

void write_outputs(const nlohmann::json &doc, const LoadCmd &o) {
    if (!o.json_path.empty()) {
        std::ofstream f(o.json_path);
        f << doc.dump(2) << "\n";
        if (!f) throw_setup("--json: cannot write " + o.json_path);
    }
    if (!o.md_path.empty()) report::write_report(doc, o.md_path, report::Format::Markdown, "rtf load");
    if (!o.html_path.empty()) report::write_report(doc, o.html_path, report::Format::Html, "rtf load");
}

void print_summary(const serve::LoadResult &r, std::ostream &os) {
    os << "requests " << r.n << ": complete " << r.n_complete << ", refused (429/503) " << r.n_refused << ", errors "
       << r.n_errors << (r.not_sent ? ", not sent (max in flight) " + std::to_string(r.not_sent) : "") << "\n"
       << "first audio ms  p50 " << fmt(r.first_audio_ms.p50, 0) << "  p95 " << fmt(r.first_audio_ms.p95, 0) << "  p99 "
       << fmt(r.first_audio_ms.p99, 0) << "  max " << fmt(r.first_audio_ms.max, 0) << "\n"
       << "stream rtf      p50 " << fmt(r.rtf.p50, 3) << "  p95 " << fmt(r.rtf.p95, 3) << "\n"
       << "real time (no starvation after first audio): " << r.n_real_time << "/" << r.n_complete << " ("
       << fmt(100 * r.real_time_share, 1) << " %)\n"
       << "throughput: " << fmt(r.audio_s_per_wall_s, 3) << " audio-seconds per wall-second over " << fmt(r.wall_s, 1) << " s\n";
}

int run_load_cmd(LoadCmd &o) {
    o.c.duration_s = parse_duration_ms(o.duration, "--duration") / 1000.0;
    // --requests N without --duration: all N, however long they take (up to the 24 h bound).
    if (o.c.requests > 0 && o.duration_opt && o.duration_opt->count() == 0) o.c.duration_s = 86400;
    if (o.c.rate > 0) o.c.streams = 0;
    if (!(o.min_real_time >= 0 && o.min_real_time <= 1)) throw_usage("--min-real-time: must be in [0, 1]");
    serve::LoadProgress progress;
    if (!o.quiet) progress = [](const std::string &l) { std::cerr << "  " << l << "\n"; };
    if (o.find_capacity) {
        const double target = o.target_first_audio_ms > 0 ? o.target_first_audio_ms : 1000;
        auto cap = serve::find_capacity(o.c, target, o.max_concurrency, o.min_real_time, progress);
        const auto doc = cap.to_json();
        write_outputs(doc, o);
        std::cout << "capacity: " << cap.capacity << " concurrent stream(s) meet p95 first audio <= " << fmt(target, 0)
                  << " ms and >= " << fmt(100 * o.min_real_time, 1) << " % real time (" << cap.levels.size()
                  << " levels run; --max-concurrency " << o.max_concurrency << ")\n";
        return cap.capacity > 0 ? 0 : 2;
    }
    auto r = serve::run_load(o.c, progress);
    write_outputs(r.to_json(), o);
    print_summary(r, std::cout);
    if (r.n_complete == 0) {
        std::cout << "verdict: INCOMPLETE (no stream completed)\n";
        return 3;
    }
    if (o.target_first_audio_ms > 0) {
        const bool ok = serve::meets(r, o.target_first_audio_ms, o.min_real_time);
        std::cout << "verdict: " << (ok ? "PASS" : "FAIL") << " (p95 first audio <= " << fmt(o.target_first_audio_ms, 0)
                  << " ms, >= " << fmt(100 * o.min_real_time, 1) << " % real time, no refusals or errors)\n";
        return ok ? 0 : 2;
    }
    return 0;
}

void add_load_command(CLI::App &app, Action &action) {
    auto o = std::make_shared<LoadCmd>();
    auto *sub = app.add_subcommand(
        "load", "Load generator for rtf serve: --streams N clients back to back, or --rate R Poisson arrivals per "
                "second; per-stream first audio, RTF and starvation as a client sees them; --find-capacity. "
                "Exit 0 ok / 2 targets missed / 3 no stream completed");
    sub->add_option("--url", o->c.url, "Server, http://host:port")->default_str(o->c.url);
    sub->add_option("--path", o->c.path, "Endpoint: /v1/audio/speech or /v1/speak")->default_str(o->c.path);
    sub->add_option("--input", o->c.input, "Text of every request")->default_str(o->c.input);
    sub->add_option("--prompt", o->c.prompt,
                    "Prompt mode: the LLM answers this prompt in every request (with --path /v1/speak), so its "
                    "token-by-token decode is part of the load");
    sub->add_option("--streams", o->c.streams, "Concurrent clients (closed loop)")->default_val(o->c.streams);
    sub->add_option("--rate", o->c.rate, "Poisson arrivals per second (open loop; replaces --streams)");
    o->duration_opt = sub->add_option("--duration", o->duration,
                                      "No new request after this (e.g. 60s, 2m); with --requests and no --duration: "
                                      "until those requests are done")
                          ->default_str(o->duration);
    sub->add_option("--requests", o->c.requests, "Stop after this many requests in all (--find-capacity: per client); 0 = duration only")
        ->default_val(o->c.requests);
    sub->add_option("--startup-buffer-ms", o->c.startup_buffer_ms, "Playback starts this long after the first audio byte")
        ->default_val(o->c.startup_buffer_ms);
    sub->add_option("--timeout", o->c.timeout_s, "Per request, seconds")->default_val(o->c.timeout_s);
    sub->add_option("--seed", o->c.seed, "Seed of the Poisson arrivals")->default_val(o->c.seed);
    sub->add_option("--target-first-audio-ms", o->target_first_audio_ms,
                    "Verdict target for p95 first audio (with --find-capacity default 1000)");
    sub->add_option("--min-real-time", o->min_real_time, "Share of complete streams that must never starve")
        ->default_val(o->min_real_time);
    sub->add_flag("--find-capacity", o->find_capacity, "Search the largest concurrency meeting the targets (1, 2, 4, ... then bisection)");
    sub->add_option("--max-concurrency", o->max_concurrency, "Upper end of --find-capacity")->default_val(o->max_concurrency);
    sub->add_option("--json", o->json_path, "Write the result JSON (every stream) to FILE");
    sub->add_option("--md", o->md_path, "Write the Markdown report to FILE ('-' = stdout)");
    sub->add_option("--html", o->html_path, "Write the HTML report to FILE");
    sub->add_flag("-q,--quiet", o->quiet, "No per-stream lines");
    sub->callback([&action, o] { action = [o] { return run_load_cmd(*o); }; });
}

}  // namespace

RTF_COMMAND(26, add_load_command);

}  // namespace rtf::cli
