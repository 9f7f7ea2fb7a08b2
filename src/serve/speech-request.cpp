#include "serve/speech-request.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "speak/knobs.h"

namespace rtf::serve {

namespace {

using nlohmann::json;

json parse_body(const std::string &body) {
    if (body.empty()) throw RequestError("body", "empty; send a JSON object (Content-Type: application/json)");
    json j;
    try {
        j = json::parse(body);
    } catch (const json::parse_error &e) {
        // nlohmann names the byte and the reason, invalid UTF-8 included
        throw RequestError("body", std::string("not valid JSON: ") + e.what());
    }
    if (!j.is_object()) throw RequestError("body", "must be a JSON object");
    return j;
}

std::string get_string(const json &j, const std::string &key, const std::string &dflt, bool required = false) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
        if (required) throw RequestError(key, "required (a string)");
        return dflt;
    }
    if (!it->is_string()) throw RequestError(key, std::string("must be a string, got ") + it->type_name());
    return it->get<std::string>();
}

std::string one_of(const std::string &field, const std::string &v, const std::vector<std::string> &allowed) {
    if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return v;
    std::string list;
    for (const auto &a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw RequestError(field, "'" + v + "' is not supported; allowed: " + list);
}

void check_keys(const json &j, const std::vector<std::string> &allowed) {
    for (const auto &[k, v] : j.items()) {
        if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
            std::string list;
            for (const auto &a : allowed) list += (list.empty() ? "" : ", ") + a;
            throw RequestError(k, "unknown field; allowed: " + list);
        }
    }
}

void check_input(const std::string &field, const std::string &text, int max_chars) {
    if (text.empty()) throw RequestError(field, "must not be empty");
    // characters, not bytes: count UTF-8 lead bytes (the JSON parser has validated UTF-8)
    const auto chars = std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
    if (chars > max_chars)
        throw RequestError(field, std::to_string(chars) + " characters; the server takes at most " + std::to_string(max_chars));
}

void set_formats(SpeechRequest &r, const json &j, const std::string &dflt_format, const std::string &dflt_stream) {
    const std::string f = one_of("response_format", get_string(j, "response_format", dflt_format), audio_format_names());
    const std::string s = one_of("stream_format", get_string(j, "stream_format", dflt_stream), {"audio", "sse"});
    r.format = parse_audio_format(f, "response_format");
    r.stream = s == "sse" ? StreamFormat::Sse : StreamFormat::Audio;
    if (r.stream == StreamFormat::Sse && r.format != AudioFormat::Pcm)
        throw RequestError("response_format", "stream_format sse carries raw PCM deltas; use response_format pcm");
}

void finalize_input(SpeechRequest &r, const std::string &field) {
    try {
        speak::finalize(r.cfg);
    } catch (const Error &e) {
        throw RequestError(field, e.what());
    }
}

std::string list_of(const std::vector<std::string> &v) {
    std::string s;
    for (const auto &x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

// The kit's voice `name`, or "" when it has none of that name.
bool kit_has(const std::vector<std::string> &voices, const std::string &name) {
    return std::find(voices.begin(), voices.end(), name) != voices.end();
}

}  // namespace

const char *to_string(StreamFormat f) { return f == StreamFormat::Sse ? "sse" : "audio"; }

SpeechRequest parse_openai_speech(const std::string &body, const speak::SpeakConfig &base, int max_input_chars,
                                  const std::vector<std::string> &voices) {
    const json j = parse_body(body);
    check_keys(j, {"model", "input", "voice", "response_format", "stream_format", "speed", "instructions"});
    SpeechRequest r;
    r.endpoint = "speech";
    r.cfg = base;
    r.model = get_string(j, "model", "");
    // A kit's voice by its name; OpenAI's names (clients send one) speak with the default.
    r.voice = get_string(j, "voice", "default");
    if (kit_has(voices, r.voice)) {
        r.cfg.voice = r.voice == "default" ? "" : r.voice;
    } else if (std::find(kOpenAiVoices.begin(), kOpenAiVoices.end(), r.voice) != kOpenAiVoices.end()) {
        r.cfg.voice.clear();
    } else {
        throw RequestError("voice", "unknown voice '" + r.voice + "': this kit has " + list_of(voices) +
                                        " (GET /v1/audio/voices); OpenAI's names (" + list_of(kOpenAiVoices) +
                                        ") speak with the default");
    }
    get_string(j, "instructions", "");  // type-checked, then ignored (documented)
    if (auto it = j.find("speed"); it != j.end() && !it->is_null()) {
        if (!it->is_number()) throw RequestError("speed", "must be a number");
        const double v = it->get<double>();
        if (!(v >= 0.25 && v <= 4.0)) throw RequestError("speed", "must be in 0.25..4 (OpenAI's range), got " + it->dump());
        r.cfg.speed = v;
    }
    const std::string input = get_string(j, "input", "", /*required=*/true);
    check_input("input", input, max_input_chars);
    set_formats(r, j, "wav", "audio");
    r.cfg.prompt.clear();
    r.cfg.text_file.clear();
    r.cfg.text = input;
    finalize_input(r, "input");
    return r;
}

SpeechRequest parse_speak_request(const std::string &body, const speak::SpeakConfig &base, int max_input_chars,
                                  const std::vector<std::string> &voices) {
    const json j = parse_body(body);
    check_keys(j, {"prompt", "text", "knobs", "response_format", "stream_format"});
    SpeechRequest r;
    r.endpoint = "speak";
    r.cfg = base;
    const std::string prompt = get_string(j, "prompt", ""), text = get_string(j, "text", "");
    if (j.contains("prompt") == j.contains("text"))
        throw RequestError(j.contains("prompt") ? "text" : "prompt", "give exactly one of prompt (the LLM answers it) or text (spoken as given)");
    check_input(prompt.empty() ? "text" : "prompt", prompt.empty() ? text : prompt, max_input_chars);
    set_formats(r, j, "pcm", "sse");
    r.cfg.prompt = prompt;
    r.cfg.text = text;
    r.cfg.text_file.clear();
    if (auto it = j.find("knobs"); it != j.end() && !it->is_null()) {
        if (!it->is_object()) throw RequestError("knobs", "must be an object of speak knobs {\"name\": value}");
        for (const auto &[k, v] : it->items()) {
            const std::string field = "knobs." + k;
            const auto *def = speak::find_knob(k);
            if (!def) throw RequestError(field, "unknown knob (rtf speak --help lists them)");
            if (def->input) throw RequestError(field, "the input is the request's prompt or text; the kit is the server's");
            if (!v.is_string() && !v.is_boolean() && !v.is_number()) {
                throw RequestError(field, "must be a string, number or boolean");
            }
            const std::string value = speak::knob_value_text(v, field);
            try {
                speak::apply_knob(r.cfg, k, value);
            } catch (const Error &e) {
                throw RequestError(field, e.what());
            }
            if (def->facts.fixed_at_load && def->get(r.cfg) != def->get(base)) {
                throw RequestError(field, "the engines fix this knob when the server loads (it is " + def->get(base) +
                                              " there); restart rtf serve with --" + k + " " + value);
            }
            r.knobs.emplace_back(k, value);
        }
    }
    if (!r.cfg.voice.empty() && !kit_has(voices, r.cfg.voice))
        throw RequestError("knobs.voice", "unknown voice '" + r.cfg.voice + "': this kit has " + list_of(voices) +
                                              " (GET /v1/audio/voices)");
    r.voice = r.cfg.voice.empty() ? "default" : r.cfg.voice;
    finalize_input(r, prompt.empty() ? "text" : "prompt");
    return r;
}

}  // namespace rtf::serve
