#include "models/t2w/t2w-config.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/t2w/t2w-model.h"

namespace rtf::t2w {

const std::vector<std::string> &t2m_types() {
    static const std::vector<std::string> t = {"f32", "f16", "bf16", "q8_0"};
    return t;
}

const std::vector<std::string> &voc_types() {
    static const std::vector<std::string> t = {"f32", "f16", "bf16"};
    return t;
}

namespace {
void check_one_of(const std::string &field, const std::string &what, const std::string &v,
                  const std::vector<std::string> &allowed) {
    if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return;
    std::string list;
    for (const auto &a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw_setting(field, "'" + v + "' is not a " + what + " compute type; use " + list);
}
}  // namespace

void T2wConfig::validate() const {
    if (threads_t2m < 1 || threads_t2m > 1024) {
        throw_usage("t2w: threads for token2mel must be 1..1024, got " + std::to_string(threads_t2m));
    }
    if (threads_voc < 1 || threads_voc > 1024) {
        throw_usage("t2w: threads for the vocoder must be 1..1024, got " + std::to_string(threads_voc));
    }
    if (device_t2m.empty() || device_voc.empty()) {
        throw_usage("t2w: device names must not be empty (use CPU or a name from `rtf devices`)");
    }
    if (flow_steps < 0 || flow_steps > 100) {
        throw_usage("t2w: flow steps must be 0 (from the prompt cache) or 1..100, got " +
                    std::to_string(flow_steps));
    }
    check_one_of("t2w-type-t2m", "token2mel", type_t2m, t2m_types());
    check_one_of("t2w-type-voc", "vocoder", type_voc, voc_types());
    if (first_window < kMinFirstWindow || first_window > kWindowTokens) {
        throw_setting("t2w-first-window", std::to_string(first_window) +
                    " tokens; use 8..28 (28 = the reference's 25 + 3 look-ahead; below 8 the first window's audio "
                    "would be trimmed away)");
    }
    if (ramp.size() > kMaxRampWindows) {
        throw_setting("t2w-ramp", std::to_string(ramp.size()) + " windows; use at most " + std::to_string(kMaxRampWindows));
    }
    for (int w : ramp) {
        if (w < kMinFirstWindow || w > kWindowTokens) {
            throw_setting("t2w-ramp", "a window of " + std::to_string(w) +
                                          " tokens; use 8..28 each (the tokens of a window after the first, its last 3 "
                                          "look-ahead)");
        }
    }
    if (leading_silence < 0 || leading_silence > 3) {
        throw_usage("t2w: leading silence tokens must be 0..3, got " + std::to_string(leading_silence));
    }
}

int T2wConfig::window_tokens(size_t index) const {
    if (index == 0) return first_window;
    return index <= ramp.size() ? ramp[index - 1] : kWindowTokens;
}

bool T2wConfig::reference_windows() const { return first_window == kWindowTokens && ramp.empty(); }

nlohmann::json T2wConfig::to_json() const {
    return {{"threads_t2m", threads_t2m}, {"threads_voc", threads_voc}, {"device_t2m", device_t2m},
            {"device_voc", device_voc},   {"flow_steps", flow_steps},   {"cfg", cfg},
            {"leading_silence", leading_silence}, {"type_t2m", type_t2m}, {"type_voc", type_voc},
            {"first_window", first_window}, {"ramp", ramp}};
}

}  // namespace rtf::t2w
