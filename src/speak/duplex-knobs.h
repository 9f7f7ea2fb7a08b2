#pragma once
// The duplex session's knobs: one table, as knobs.h is for simplex speech, read by `rtf duplex`
// (CLI flags `--NAME VALUE`) and by the bench duplex workload (`rtf bench --workload duplex
// --set 'NAME=VALUE;...'`). A concept the two modes share has speak's name: `llm-ctx`,
// `d1` (LLM -> TTS queue), `d2` (TTS -> Token2Wav queue), `seed`, `twin-text-rate`, the
// per-stage thread knobs (`llm-threads`, `tts-threads`, `t2w-threads-t2m`, `t2w-threads-voc`)
// and the weight / compute types (`llm-weight-type`, `tts-weight-type`, `t2w-type-t2m`,
// `t2w-type-voc`, with speak's allowed values). Older spellings stay accepted as aliases
// (`ctx-size`, `tts-queue-cap`, `t2w-queue-cap`).
//
//   speak::DuplexConfig c;
//   speak::apply_duplex_knob(c, "d1", "4");       // Usage error names --d1 and the allowed values
//   c.validate(); c.finalize();                   // threads 0 -> from `threads`
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "speak/duplex.h"

namespace rtf::speak {

struct DuplexKnobDef {
    std::string name;                  // long flag without "--"; the bench --set key
    std::vector<std::string> aliases;  // older spellings, accepted everywhere
    std::string unit;                  // "ms", "frames", "threads", "items", "tokens", ...
    std::string help;
    std::vector<std::string> allowed;  // enumerated values ("" = free text/number)
    bool required = false;             // the CLI requires it (models, input)
    bool changes_math = false;         // not a pure speed knob
    std::function<void(DuplexConfig &, const std::string &value)> set;  // throws Usage naming --name
    std::function<std::string(const DuplexConfig &)> get;
};

// Every duplex knob, in --help order.
const std::vector<DuplexKnobDef> &duplex_knob_table();
// By name or alias; nullptr when unknown.
const DuplexKnobDef *find_duplex_knob(std::string_view name);
// Names (no aliases) in table order.
std::vector<std::string> duplex_knob_names();
// Sets one knob; an unknown name is a Usage error listing the known ones.
void apply_duplex_knob(DuplexConfig &cfg, const std::string &name, const std::string &value);

}  // namespace rtf::speak
