#include "models/t2w/t2w-config.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/t2w/t2w-model.h"

namespace rtf::t2w {

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
    if (type_t2m != "f32" && type_t2m != "f16" && type_t2m != "bf16" && type_t2m != "q8_0") {
        throw_usage("--t2w-type-t2m: '" + type_t2m + "' is not a token2mel compute type; use f32, f16, bf16 or q8_0");
    }
    if (type_voc != "f32" && type_voc != "f16" && type_voc != "bf16") {
        throw_usage("--t2w-type-voc: '" + type_voc + "' is not a vocoder compute type; use f32, f16 or bf16");
    }
    if (first_window < kMinFirstWindow || first_window > kWindowTokens) {
        throw_usage("--t2w-first-window: " + std::to_string(first_window) +
                    " tokens; use 8..28 (28 = the reference's 25 + 3 look-ahead; below 8 the first window's audio "
                    "would be trimmed away)");
    }
    if (leading_silence < 0 || leading_silence > 3) {
        throw_usage("t2w: leading silence tokens must be 0..3, got " + std::to_string(leading_silence));
    }
}

nlohmann::json T2wConfig::to_json() const {
    return {{"threads_t2m", threads_t2m}, {"threads_voc", threads_voc}, {"device_t2m", device_t2m},
            {"device_voc", device_voc},   {"flow_steps", flow_steps},   {"cfg", cfg},
            {"leading_silence", leading_silence}, {"type_t2m", type_t2m}, {"type_voc", type_voc},
            {"first_window", first_window}};
}

}  // namespace rtf::t2w
