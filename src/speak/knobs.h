#pragma once
// The speak path's knobs: one table, the only owner of their names, units, defaults,
// help and parsing. Every front end reads it:
//   - the CLI flags of `rtf speak`, `rtf demo` and (group t2w) `rtf t2w`: `--NAME VALUE`;
//   - the bench speak workload: `rtf bench --set 'NAME=VALUE;...'` (no CLI parser);
//   - JSON config files: `--config FILE`, an object whose keys are these names;
//   - `rtf tune` / `rtf serve` (they enumerate the table, not CLI flags).
// A knob added here exists everywhere at once, spelt the same.
//
//   speak::SpeakConfig c = speak::default_config();
//   speak::apply_knob(c, "t2w-threads-voc", "1");     // Usage error names --t2w-threads-voc
//   speak::apply_knob_file(c, "tuned.json");         // {"d1": 4, "no-cfg": true, ...}
//   speak::finalize(c);                              // derived fields + validate()
//
// Values are text (a JSON number/bool is turned into text first); switches take
// true/false/1/0/on/off. Setters parse and range-check; cross-knob rules (prompt vs text,
// min <= max audio) are checked by finalize(). Not thread-safe to mutate one config from
// two threads; the table itself is immutable.
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "speak/speak-config.h"

namespace rtf::speak {

struct KnobDef {
    std::string name;           // long flag without "--"; the --set and --config key
    std::string short_name;     // one-letter CLI alias ("p" for prompt), "" = none
    std::string group;          // --help section: input, work size, pipeline, sampling, llm, tts, t2w
    std::string unit;           // "s", "tokens", "threads", "items", "ms", "" (none)
    std::string help;
    std::vector<std::string> allowed;  // enumerated values ("" = free text/number)
    bool is_switch = false;     // a flag without value on the command line
    bool input = false;         // models/prompt/text/text-file: commands may choose them themselves
    bool t2w_engine = false;    // also a knob of `rtf t2w` (the Token2Wav engine alone)
    bool changes_math = false;  // not a pure speed knob: output differs (the tuner needs an opt-in)
    // Parses `value` into the config; throws rtf::Error(Usage) naming "--name".
    std::function<void(SpeakConfig &, const std::string &value)> set;
    // The current value as text ("" for an unset input).
    std::function<std::string(const SpeakConfig &)> get;
};

// Every knob, in --help order.
const std::vector<KnobDef> &knob_table();
const KnobDef *find_knob(std::string_view name);
std::vector<std::string> knob_names();

// The defaults of `rtf speak` (the reference's settings; queue depths 16).
SpeakConfig default_config();

// Sets one knob. Unknown name: rtf::Error(Usage) listing the known names.
void apply_knob(SpeakConfig &cfg, const std::string &name, const std::string &value);
void apply_knobs(SpeakConfig &cfg, const std::vector<std::pair<std::string, std::string>> &knobs);
// A JSON object of knobs (keys = names; string, number or bool values) from a file;
// errors name the file and the key.
std::vector<std::pair<std::string, std::string>> read_knob_file(const std::string &path);
void apply_knob_file(SpeakConfig &cfg, const std::string &path);

// Derived fields (n_batch clamped to the context, input text checks) and validate().
void finalize(SpeakConfig &cfg);

// {"name": "value", ...} for every knob (effective values, defaults included).
nlohmann::json knobs_json(const SpeakConfig &cfg);

// The text of a switch value: true for "1"/"true"/"on"/"yes"/"", false for
// "0"/"false"/"off"/"no"; Usage error naming `what` otherwise.
bool parse_switch(const std::string &value, const std::string &what);

}  // namespace rtf::speak
