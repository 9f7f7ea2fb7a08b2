// The C API (include/rtf/rtf.h) over the speak layer: a handle is one loaded engine set and
// its open config; every entry point turns C++ failures into a status and a per-thread
// message, so no exception crosses the C boundary.
#include "rtf/rtf.h"

#include <atomic>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/cpu-features.h"
#include "core/error.h"
#include "pipeline/cancel.h"
#include "rtf/build-info.h"
#include "speak/knobs.h"
#include "speak/machine-profile.h"
#include "speak/speak.h"

struct rtf_engine {
    rtf::speak::SpeakConfig cfg;  // the open config, finalized: every run starts from it
    std::unique_ptr<rtf::speak::Engines> engines;
    std::string config_json;
    std::string result_json = "{}";
    std::atomic<bool> busy{false};
    rtf::pipe::CancelToken cancel;
};

namespace {

using rtf::speak::KnobDef;

thread_local std::string t_error;

rtf_status fail(rtf_status s, std::string message) {
    t_error = std::move(message);
    return s;
}

rtf_status status_of(rtf::ErrorKind k) {
    switch (k) {
    case rtf::ErrorKind::Usage: return RTF_ERR_USAGE;
    case rtf::ErrorKind::Setup: return RTF_ERR_SETUP;
    case rtf::ErrorKind::Runtime: return RTF_ERR_RUNTIME;
    }
    return RTF_ERR_RUNTIME;
}

// Runs `f` (which returns an rtf_status) with every exception mapped to a status.
template <class F>
rtf_status guarded(F &&f) noexcept {
    try {
        return f();
    } catch (const rtf::Error &e) {
        return fail(status_of(e.kind()), e.what());
    } catch (const std::bad_alloc &) {
        return fail(RTF_ERR_RUNTIME, "out of memory");
    } catch (const std::exception &e) {
        return fail(RTF_ERR_RUNTIME, e.what());
    } catch (...) {
        return fail(RTF_ERR_RUNTIME, "unknown error");
    }
}

// NULL or "" -> {}; otherwise a JSON object, or a Usage error naming the argument.
nlohmann::json parse_object(const char *text, const std::string &arg) {
    if (!text || !*text) return nlohmann::json::object();
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) rtf::throw_usage(arg + ": not valid JSON");
    if (!j.is_object()) rtf::throw_usage(arg + ": want a JSON object of knobs, e.g. {\"max-audio-s\": 5}");
    return j;
}

// The knob's definition, or a Usage error; the input knobs are the API's own arguments.
const KnobDef &settable_knob(const std::string &name, const std::string &arg) {
    const KnobDef *def = rtf::speak::find_knob(name);
    if (!def) rtf::throw_usage(arg + ": '" + name + "' is not a speak knob (rtf speak --help lists them)");
    if (def->input) {
        rtf::throw_usage(arg + ": '" + name + "' is an input: the kit is rtf_open's kit_dir, the text or prompt "
                               "is rtf_speak's input");
    }
    return *def;
}

void set_knob(rtf::speak::SpeakConfig &cfg, const std::string &name, const std::string &value, const std::string &arg) {
    try {
        rtf::speak::apply_knob(cfg, name, value);
    } catch (const rtf::Error &e) {
        rtf::throw_usage(arg + ": '" + name + "': " + e.what());
    }
}

}  // namespace

extern "C" {

const char *rtf_version(void) {
    static const std::string v = std::string(RTF_VERSION) + " (llama.cpp " + RTF_LLAMA_CPP_VERSION + ")";
    return v.c_str();
}

int rtf_api_version(void) { return RTF_API_VERSION; }

const char *rtf_last_error(void) { return t_error.c_str(); }

rtf_status rtf_open(const char *kit_dir, const char *config_json, rtf_engine **out) {
    return guarded([&] {
        if (!out) return fail(RTF_ERR_USAGE, "rtf_open: out is NULL");
        *out = nullptr;
        if (!kit_dir || !*kit_dir) return fail(RTF_ERR_USAGE, "rtf_open: kit_dir is empty (give a kit folder)");
        auto j = parse_object(config_json, "config_json");
        std::string mode = rtf::speak::default_profile_mode();
        if (auto it = j.find("profile"); it != j.end()) {
            if (!it->is_string()) rtf::throw_usage("config_json: 'profile' must be \"auto\", \"exact\" or \"none\"");
            mode = it->get<std::string>();
            j.erase(it);
        }
        auto e = std::make_unique<rtf_engine>();
        e->cfg = rtf::speak::default_config();
        set_knob(e->cfg, "models", kit_dir, "kit_dir");
        std::set<std::string> user_set;
        for (const auto &[k, v] : rtf::speak::knobs_from_json(j, "config_json")) {
            settable_knob(k, "config_json");
            set_knob(e->cfg, k, v, "config_json");
            user_set.insert(k);
        }
        auto profile = rtf::speak::select_profile(rtf::speak::parse_profile_mode(mode, "config_json: 'profile'"),
                                                  rtf::cpu_features(), std::nullopt);
        rtf::speak::apply_profile(e->cfg, profile, user_set);
        e->cfg.text = "Hello.";  // as serve does: each run's input replaces it; the engines need a valid config
        rtf::speak::finalize(e->cfg);
        e->engines = rtf::speak::load_engines(e->cfg);
        rtf::speak::require_minicpmo45(e->engines->kit, "the C API");
        e->cfg = e->engines->config;
        const auto &en = *e->engines;
        auto knobs = rtf::speak::knobs_json(e->cfg);
        for (const auto &k : rtf::speak::knob_table())
            if (k.input && k.name != "models") knobs.erase(k.name);
        e->config_json = nlohmann::json{{"kit", en.kit.to_json()},
                                        {"knobs", knobs},
                                        {"run_knobs", rtf::speak::run_knob_names()},
                                        {"profile", profile.to_json()},
                                        {"profile_line", profile.line()},
                                        {"engines", {{"load_ms", {{"llm", en.load_ms_llm},
                                                                  {"tts", en.load_ms_tts},
                                                                  {"t2w", en.load_ms_t2w}}},
                                                     {"warm_ms_t2w", en.warm_ms_t2w}}},
                                        {"version", rtf_version()}}
                             .dump();
        *out = e.release();
        return RTF_OK;
    });
}

rtf_status rtf_speak(rtf_engine *e, int kind, const char *input, const char *run_knobs_json,
                     rtf_pcm_callback on_pcm, void *user) {
    if (!e) return fail(RTF_ERR_USAGE, "rtf_speak: the engine is NULL");
    if (kind != RTF_INPUT_TEXT && kind != RTF_INPUT_PROMPT) {
        return fail(RTF_ERR_USAGE, "rtf_speak: kind must be RTF_INPUT_TEXT or RTF_INPUT_PROMPT");
    }
    if (!input || !*input) return fail(RTF_ERR_USAGE, "rtf_speak: input is empty (give the text or prompt to speak)");
    if (e->busy.exchange(true)) return fail(RTF_ERR_BUSY, "rtf_speak: this engine is already speaking (one utterance per handle)");
    struct Idle {
        rtf_engine *e;
        ~Idle() { e->busy.store(false); }
    } idle{e};
    return guarded([&] {
        rtf::speak::SpeakConfig run = e->cfg;
        for (const auto &[k, v] : rtf::speak::knobs_from_json(parse_object(run_knobs_json, "run_knobs_json"),
                                                              "run_knobs_json")) {
            const KnobDef &def = settable_knob(k, "run_knobs_json");
            set_knob(run, k, v, "run_knobs_json");
            if (def.facts.fixed_at_load && def.get(run) != def.get(e->cfg)) {
                rtf::throw_usage("run_knobs_json: '" + k + "' is fixed when the engines load (it is " + def.get(e->cfg) +
                                 " there): give it to rtf_open");
            }
        }
        (kind == RTF_INPUT_TEXT ? run.text : run.prompt) = input;
        (kind == RTF_INPUT_TEXT ? run.prompt : run.text).clear();
        run.text_file.clear();
        rtf::speak::finalize(run);
        e->result_json = "{}";
        e->cancel.reset();
        run.pipeline.cancel = &e->cancel;
        rtf::speak::SpeakResult r;
        try {
            r = rtf::speak::speak(*e->engines, run, [&](const rtf::pipe::Item &c) {
                if (!on_pcm || c.pcm.empty() || e->cancel.cancelled()) return;
                if (on_pcm(user, c.pcm.data(), c.pcm.size(), c.sample_rate) != 0) e->cancel.cancel();
            });
        } catch (const rtf::Error &err) {
            e->result_json = nlohmann::json{{"error", err.what()}}.dump();
            throw;
        }
        e->result_json = rtf::speak::to_json(r).dump();
        return r.run.cancelled ? fail(RTF_CANCELLED, "cancelled") : RTF_OK;
    });
}

void rtf_cancel(rtf_engine *e) {
    if (e && e->busy.load()) e->cancel.cancel();
}

const char *rtf_result_json(rtf_engine *e) { return e ? e->result_json.c_str() : "{}"; }

const char *rtf_config_json(rtf_engine *e) { return e ? e->config_json.c_str() : "{}"; }

void rtf_close(rtf_engine *e) { delete e; }

}  // extern "C"
