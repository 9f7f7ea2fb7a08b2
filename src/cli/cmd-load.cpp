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
#include "bench/duplex-analysis.h"
#include "profile/stats.h"
#include "serve/load-duplex.h"
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
    // --duplex: sessions against /v1/realtime (serve/load-duplex.h)
    bool duplex = false;
    serve::DuplexLoadConfig d;
    double max_gap_ms = 0;
    CLI::Option *input_opt = nullptr;
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

// One run of N duplex sessions, each judged by the duplex analyzer on its own timeline:
// {"sessions": [...], "analysis": [...], "summary": {...}, "pass": all sessions passed}.
nlohmann::json duplex_level(const LoadCmd &o, int n, const serve::LoadProgress &progress) {
    serve::DuplexLoadConfig d = o.d;
    d.sessions = n;
    serve::DuplexLoadResult r = serve::run_duplex_load(d, progress);
    bench::DuplexOptions opt;
    opt.startup_buffer_ms = o.c.startup_buffer_ms;
    opt.max_gap_ms = o.max_gap_ms;
    nlohmann::json analyses = nlohmann::json::array();
    std::vector<double> dec, first, tts_rtf, gap, client_first;
    int n_pass = 0;
    for (const auto &s : r.sessions) {
        if (!s.ended) {
            analyses.push_back(nullptr);
            continue;
        }
        bench::DuplexAnalysis a = bench::analyze_duplex(s.timeline, opt);
        if (a.verdict == bench::DuplexVerdict::Pass) ++n_pass;
        dec.push_back(a.decision_p95_ms);
        first.push_back(a.first_audio_e2e_p95_ms);
        tts_rtf.push_back(a.tts_rtf_max);
        double g = 0;
        for (const auto &p : a.pairs) g = std::max(g, p.max_gap_ms);
        gap.push_back(g);
        for (double x : s.first_audio_ms) client_first.push_back(x);
        analyses.push_back(bench::to_json(a));
    }
    nlohmann::json doc = r.to_json();
    doc["analysis"] = analyses;
    doc["summary"] = {{"sessions", n},
                      {"passed", n_pass},
                      {"refused", r.n_refused},
                      {"ended", r.n_ended},
                      {"decision_p95_ms", prof::to_json(prof::summarize(dec))},
                      {"first_audio_e2e_p95_ms", prof::to_json(prof::summarize(first))},
                      {"tts_rtf_max", prof::to_json(prof::summarize(tts_rtf))},
                      {"worst_gap_ms", prof::to_json(prof::summarize(gap))},
                      {"client_first_audio_ms", prof::to_json(prof::summarize(client_first))}};
    doc["pass"] = n_pass == n;
    return doc;
}

void print_duplex_level(const nlohmann::json &doc, std::ostream &os) {
    const auto &a = doc["analysis"];
    for (size_t i = 0; i < a.size(); ++i) {
        os << "session " << i << ": ";
        if (a[i].is_null()) {
            const auto &s = doc["sessions"][i];
            os << "NOT ENDED (" << s["status"].get<int>() << ") " << s.value("error", nlohmann::json("")).dump() << "\n";
            continue;
        }
        os << a[i]["verdict"].get<std::string>();
        for (const auto &c : a[i]["checks"]) os << "  [" << c["state"].get<std::string>() << "] " << c["rule"].get<std::string>();
        os << "\n";
    }
    const auto &s = doc["summary"];
    auto pp = [](const nlohmann::json &x, int d) {
        return "p50 " + (x["p50"].is_null() ? std::string("n/a") : fmt(x["p50"].get<double>(), d)) + "  p95 " +
               (x["p95"].is_null() ? std::string("n/a") : fmt(x["p95"].get<double>(), d));
    };
    os << "over sessions: decision P95 ms " << pp(s["decision_p95_ms"], 0) << " | first audio e2e P95 ms "
       << pp(s["first_audio_e2e_p95_ms"], 0) << " | TTS RTF max " << pp(s["tts_rtf_max"], 2) << " | worst gap ms "
       << pp(s["worst_gap_ms"], 0) << "\n"
       << "sessions passing all five checks: " << s["passed"].get<int>() << "/" << s["sessions"].get<int>()
       << (s["refused"].get<int>() ? " (" + std::to_string(s["refused"].get<int>()) + " refused at the handshake)" : std::string()) << "\n";
}

int run_duplex_load_cmd(LoadCmd &o) {
    if (!o.input_opt || o.input_opt->count() == 0) throw_usage("--duplex: give --input, the recording each session streams");
    o.d.url = o.c.url;
    o.d.input = o.c.input;
    o.d.timeout_s = o.c.timeout_s;
    o.d.validate();
    serve::LoadProgress progress;
    if (!o.quiet) progress = [](const std::string &l) { std::cerr << "  " << l << "\n"; };
    if (o.find_capacity) {
        // Sessions are long and each level costs a whole session: 1, 2, 3, ... until one fails.
        nlohmann::json levels = nlohmann::json::array();
        int capacity = 0;
        for (int n = 1; n <= o.max_concurrency; ++n) {
            if (!o.quiet) std::cerr << "level " << n << " session(s) ...\n";
            nlohmann::json lv = duplex_level(o, n, progress);
            print_duplex_level(lv, std::cout);
            const bool pass = lv["pass"].get<bool>();
            levels.push_back(std::move(lv));
            if (!pass) break;
            capacity = n;
        }
        nlohmann::json doc = {{"schema", "rtfkit.load-duplex-capacity/1"}, {"capacity", capacity}, {"levels", levels}};
        write_outputs(doc, o);
        std::cout << "capacity: " << capacity << " concurrent duplex session(s) all pass the five checks (--max-concurrency "
                  << o.max_concurrency << ")\n";
        return capacity > 0 ? 0 : 2;
    }
    nlohmann::json doc = duplex_level(o, o.d.sessions, progress);
    write_outputs(doc, o);
    print_duplex_level(doc, std::cout);
    if (doc["summary"]["ended"].get<int>() == 0) {
        std::cout << "verdict: INCOMPLETE (no session ended)\n";
        return 3;
    }
    const bool pass = doc["pass"].get<bool>();
    std::cout << "verdict: " << (pass ? "PASS" : "FAIL") << "\n";
    return pass ? 0 : 2;
}

int run_load_cmd(LoadCmd &o) {
    if (o.duplex) return run_duplex_load_cmd(o);
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
    o->input_opt = sub->add_option("--input", o->c.input, "Text of every request (--duplex: the recording each session streams)")
                       ->default_str(o->c.input);
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
    sub->add_flag("--duplex", o->duplex,
                  "Duplex sessions against the server's /v1/realtime WebSocket instead of speech requests: --sessions "
                  "at once, each streaming --input (a recording) in real time; every session judged by the five checks "
                  "of rtf duplex-report; --find-capacity: 1, 2, 3, ... sessions until one fails")
        ->group("duplex");
    sub->add_option("--sessions", o->d.sessions, "--duplex: concurrent sessions")->default_val(o->d.sessions)->group("duplex");
    sub->add_option("--frames", o->d.frames, "--duplex: frames per session (0 = the recording's; more = silence after it)")
        ->default_val(o->d.frames)->group("duplex");
    sub->add_option("--speak-frames", o->d.speak_frames, "--duplex: forced speak schedule, e.g. 4-12,20-28 (twins: a random "
                                                         "model's decision is noise)")
        ->group("duplex");
    sub->add_option("--chunk-ms", o->d.chunk_ms, "--duplex: audio per message, sent at real-time pace")->default_val(o->d.chunk_ms)->group("duplex");
    sub->add_option("--stagger-ms", o->d.stagger_ms, "--duplex: session i starts i x this after the first")
        ->default_val(o->d.stagger_ms)->group("duplex");
    sub->add_option("--realtime-port", o->d.realtime_port, "--duplex: the WebSocket's port (0 = ask the server's /health)")
        ->default_val(o->d.realtime_port)->group("duplex");
    sub->add_option("--max-gap-ms", o->max_gap_ms, "--duplex: largest tolerated playback gap (check [5])")->default_val(o->max_gap_ms)->group("duplex");
    sub->callback([&action, o] { action = [o] { return run_load_cmd(*o); }; });
}

}  // namespace

RTF_COMMAND(26, add_load_command);

}  // namespace rtf::cli
