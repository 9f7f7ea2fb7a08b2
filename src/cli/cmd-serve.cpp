// rtf serve: the speak path as a streaming HTTP server (serve/server.h), models loaded
// once, up to --max-streams utterances at a time. Ctrl-C / SIGTERM stop it cleanly:
// running streams are cancelled, their clients see an incomplete body.
#include <chrono>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

#include "bench/protocol.h"
#include "cli/commands.h"
#include "cli/speak-options.h"
#include "core/error.h"
#include "core/parse.h"
#include "pipeline/cancel.h"
#include "serve/server.h"
#include "speak/duplex-knobs.h"
#include "speak/kit.h"
#include "speak/machine-profile.h"

namespace rtf::cli {

namespace {

struct ServeCmd {
    SpeakOptions opts;
    serve::ServeConfig sc;
    std::string models;
    std::string queue_timeout = "30s";
    std::string batch = "off";  // ServeConfig::batch has why
    std::string slot_threads = "auto";
    std::string realtime_sessions = "auto";
    std::string realtime_set;  // duplex knobs of the sessions, 'NAME=VALUE;...'
    bool quiet = false;
};

int run_serve(ServeCmd &o) {
    if (o.models.empty()) throw_usage("--models: give the kit directory to serve");
    o.sc.queue_timeout_ms = parse_duration_ms(o.queue_timeout, "--queue-timeout");
    o.sc.batch = o.batch == "on";
    if (o.slot_threads == "auto") {
        o.sc.slot_threads = -1;
    } else if (o.slot_threads == "knobs") {
        o.sc.slot_threads = 0;
    } else {
        try {
            o.sc.slot_threads = static_cast<int>(parse_int(o.slot_threads, "--slot-threads", 1, 512));
        } catch (const Error &) {
            throw_usage("--slot-threads: give auto, knobs or a thread count in [1, 512], not '" + o.slot_threads + "'");
        }
    }
    // A thread knob the user set (flag or --config) is kept: --slot-threads fills in the rest.
    for (const auto &[k, v] : o.opts.given) o.sc.thread_knobs_given.push_back(k);
    if (!o.opts.config_path.empty())
        for (const auto &[k, v] : speak::read_knob_file(o.opts.config_path)) o.sc.thread_knobs_given.push_back(k);
    if (o.realtime_sessions == "auto") {
        o.sc.realtime.sessions = -1;
    } else {
        o.sc.realtime.sessions = static_cast<int>(parse_int(o.realtime_sessions, "--realtime-sessions", 0, 64));
    }
    std::set<std::string> duplex_given;
    if (!o.realtime_set.empty())
        for (const auto &[k, v] : bench::parse_knob_list(o.realtime_set, "--realtime-set")) {
            speak::apply_duplex_knob(o.sc.realtime.duplex, k, v);
            duplex_given.insert(k);
        }
    o.sc.validate();
    speak::SpeakConfig cfg = make_speak_config(o.opts, /*finalize=*/false);
    cfg.models_dir = o.models;
    // The machine profile under the user's knobs; --slot-threads still shares the cores among
    // the slots (a single-stream tuned thread count does not fit several streams), keeping a
    // profile's thread count that fits within the share.
    auto profile = apply_profile(o.opts, cfg);
    for (const auto &k : profile.applied) {
        const auto *d = speak::find_knob(k);
        if (d && d->facts.thread_count) o.sc.thread_knobs_profile.push_back(k);
    }
    {  // the same machine profile for the duplex sessions, under --realtime-set
        speak::MachineProfile dp = profile;
        speak::apply_profile(o.sc.realtime.duplex, dp, duplex_given);
    }
    const speak::Kit kit = speak::resolve_kit(o.models);
    // A twin never ends its turn on its own: give its utterances a fixed length unless the
    // user chose one (as rtf demo does).
    if (kit.is_twin && cfg.max_audio_s == 0) speak::apply_knobs(cfg, {{"max-audio-s", "6"}, {"min-audio-s", "6"}});
    std::cerr << "profile: " << profile.line() << "\n";
    std::cerr << "loading " << o.sc.max_streams << " engine set(s) from " << o.models << " ...\n";
    serve::Server srv(o.sc, cfg, [](const std::string &line) { std::cerr << "  " << line << "\n"; });
    srv.quiet = o.quiet;
    const int port = srv.bind();
    std::cerr << "rtf serve: listening on http://" << o.sc.host << ":" << port << "  (" << o.sc.max_streams
              << " stream(s), batch " << (o.sc.batch ? "on" : "off")
              << (srv.slot_threads() > 0 ? ", " + std::to_string(srv.slot_threads()) + " thread(s) per stage per stream" : std::string())
              << ", queue " << o.sc.max_queue << (kit.is_twin ? ", twin kit: noise audio" : "")
              << (o.sc.agent_port > 0 ? ", agent check on :" + std::to_string(o.sc.agent_port) : std::string())
              << ")\n  GET / (listen)  POST /v1/audio/speech  POST /v1/speak  GET /v1/audio/voices  GET /v1/runs/ID  POST /v1/runs/ID/cancel  GET /v1/knobs  GET /health  GET /metrics\n";
    if (srv.realtime_port() > 0)
        std::cerr << "  duplex: ws://" << o.sc.host << ":" << srv.realtime_port() << "/v1/realtime  (" << srv.realtime_sessions()
                  << " session(s); docs/serve.md \"Realtime\")\n";
    else
        std::cerr << "  duplex: off (" << (o.sc.realtime.sessions == 0 ? "--realtime-sessions 0" : "the kit has no audio encoder: rtf twin --only apm adds one to a twin")
                  << ")\n";
    pipe::CancelToken stop;
    pipe::SigintGuard guard(stop);
    std::thread server([&] { srv.run(); });
    while (!stop.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::cerr << "rtf serve: stopping (running streams are cancelled)\n";
    srv.stop();
    server.join();
    return 0;
}

void add_serve_command(CLI::App &app, Action &action) {
    auto o = std::make_shared<ServeCmd>();
    auto *sub = app.add_subcommand(
        "serve", "Serve the speak path over HTTP: POST /v1/audio/speech (OpenAI-compatible; chunked WAV/PCM/FLAC/Ogg-Opus/MP3 "
                 "or SSE), "
                 "POST /v1/speak (prompt or text + per-utterance knobs; SSE with the run's metrics), "
                 "POST /v1/runs/ID/cancel, GET /v1/audio/voices (the kit's voices; `voice` and `speed` 0.25-4 per "
                 "request; SSE carries text timing), GET / (a page to listen in), GET /health, "
                 "GET /metrics (Prometheus). Models load once; --max-streams engine sets speak at once, their LLM and TTS "
                 "decode steps batched into one decode per stage with --batch on. "
                 "Binds 127.0.0.1 unless --host says otherwise. docs/serve.md has the contract");
    sub->add_option("--models", o->models, "Kit directory (real GGUF files or a twin)")->required()->group("serve");
    sub->add_option("--host", o->sc.host, "Address to bind")->default_str(o->sc.host)->group("serve");
    sub->add_option("--port", o->sc.port, "Port (0 = any free port; see --port-file)")->default_val(o->sc.port)->group("serve");
    sub->add_option("--port-file", o->sc.port_file, "Write the bound port to FILE once listening")->group("serve");
    sub->add_option("--agent-port", o->sc.agent_port,
                    "Answer HAProxy's agent check on this port with the free-slot share (\"ready up 50%\", 0% when "
                    "every slot is busy; \"drain\" when stopping), so a balancer sends new streams where a slot is free; 0 = off. "
                    "examples/haproxy/haproxy.cfg uses it")
        ->default_val(o->sc.agent_port)->group("serve");
    sub->add_option("--max-streams", o->sc.max_streams,
                    "Utterances spoken at once; each is an engine set (LLM + TTS: sequences of the shared batched "
                    "contexts, or with --batch off contexts of their own; a Token2Wav stream; the Token2Wav weights are "
                    "shared)")
        ->default_val(o->sc.max_streams)->group("serve");
    sub->add_option("--max-queue", o->sc.max_queue, "Requests that may wait for a stream; beyond: 429 + Retry-After")
        ->default_val(o->sc.max_queue)->group("serve");
    sub->add_option("--queue-timeout", o->queue_timeout, "Longest wait in the queue; then 503 + Retry-After (e.g. 30s, 500ms)")
        ->default_str(o->queue_timeout)->group("serve");
    sub->add_option("--max-input-chars", o->sc.max_input_chars, "Longest input/prompt/text accepted (characters)")
        ->default_val(o->sc.max_input_chars)->group("serve");
    sub->add_option("--write-timeout", o->sc.write_timeout_s, "A client that reads nothing for this many seconds is dropped "
                                                              "and its stream cancelled")
        ->default_val(o->sc.write_timeout_s)->group("serve");
    sub->add_option("--send-buffer-kb", o->sc.send_buffer_kb,
                    "Kernel send buffer per connection in KiB (0 = the kernel's, which grows to MBs): a reader that "
                    "stops reading is noticed once this much is queued, then after --write-timeout")
        ->default_val(o->sc.send_buffer_kb)->group("serve");
    sub->add_option("--batch", o->batch,
                    "on: the streams' LLM and TTS decode steps run as one batched decode per stage (one shared "
                    "context each, a sequence per stream; the Token2Wav stream stays per slot); off: each slot has its "
                    "own LLM and TTS contexts (independent streams; the default, see docs/serve.md \"Batching\")")
        ->check(CLI::IsMember({"on", "off"}))->default_str(o->batch)->group("serve");
    sub->add_option("--slot-threads", o->slot_threads,
                    "Compute threads of every stage in every stream slot: auto = max(1, CPUs / --max-streams), so "
                    "the streams share the cores instead of each taking all of them; knobs = the thread knobs as given; "
                    "or a count. A thread knob given as a flag or in --config is kept, and so is a machine profile's "
                    "smaller one (`profile:` line)")
        ->default_str(o->slot_threads)->group("serve");
    sub->add_option("--batch-gather-ms", o->sc.batch_gather_ms,
                    "With --batch on: the longest a decode waits for the other running streams' steps (also never "
                    "longer than a recent decode took)")
        ->default_val(o->sc.batch_gather_ms)->group("serve");
    sub->add_option("--realtime-sessions", o->realtime_sessions,
                    "Duplex sessions at once on ws://HOST:PORT/v1/realtime (each an engine set: audio encoder, duplex "
                    "LLM and TTS, Token2Wav); auto = 1 when the kit has an audio encoder, else off; 0 = off")
        ->default_str(o->realtime_sessions)->group("realtime");
    sub->add_option("--realtime-port", o->sc.realtime.port,
                    "Port of the realtime WebSocket (-1 = --port + 1, or any free port with --port 0; 0 = any free); "
                    "GET /health says which")
        ->default_val(o->sc.realtime.port)->group("realtime");
    sub->add_option("--realtime-max-s", o->sc.realtime.max_session_s, "Seconds of input audio one session may stream")
        ->default_val(o->sc.realtime.max_session_s)->group("realtime");
    sub->add_option("--realtime-idle-s", o->sc.realtime.idle_timeout_s,
                    "A session whose client sends nothing this long (before session.finish) is closed and its slot freed")
        ->default_val(o->sc.realtime.idle_timeout_s)->group("realtime");
    sub->add_option("--realtime-set", o->realtime_set,
                    "Duplex knobs of the sessions, 'NAME=VALUE;...' with rtf duplex's names (e.g. 'apm-threads=1;d1=4'); "
                    "the machine profile fills in the rest")
        ->group("realtime");
    sub->add_flag("-q,--quiet", o->quiet, "No per-request log lines")->group("serve");
    // The speak knobs are the server's defaults; /v1/speak may change the per-utterance ones.
    add_speak_options(sub, o->opts, KnobSet::speak_no_input);
    sub->callback([&action, o] { action = [o] { return run_serve(*o); }; });
}

}  // namespace

RTF_COMMAND(25, add_serve_command);

}  // namespace rtf::cli
