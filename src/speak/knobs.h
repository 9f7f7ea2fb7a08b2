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

// Facts about a knob that its consumers derive their rules from (so none of them lists knobs
// by name): serve's per-request knobs are the ones not fixed at load; its per-slot thread share
// goes to the thread-count knobs; `rtf tune` tries `tune_values` in layer order. test-knobs
// checks every row has them and that `fixed_at_load` matches what the engines are built from.
struct KnobFacts {
    // The stage the knob acts on: llm, tts, t2w, pipeline (the queues and the scheduler), or
    // run (the utterance as a whole: input, work size, sampling seed).
    std::string stage;
    bool fixed_at_load = false;   // the engines are built with it (speak::engines_json): a
                                  // server's request cannot change it, a restart can
    bool thread_count = false;    // compute threads of `stage` (serve shares the CPUs among slots with these)
    int tune_layer = -1;          // rtf tune's layer: 0 placement, 1 types, 2 pipeline, 3 runtime; -1 = never tried
    // Values the tuner tries, in order. Symbolic, resolved on the machine: "cpus/2" (half the
    // usable CPUs, at least 1), "first-cpu" (CPU 0), "last-cpu" (the last usable CPU).
    std::vector<std::string> tune_values;
    // A value this build and CPU can run (e.g. a bf16 vocoder needs oneDNN); empty = all.
    std::function<bool(const std::string &value)> runnable;
    // Other knobs' values each tune candidate of this knob is tried with (one trial), for a
    // knob that means nothing alone: --t2w-ramp with a short --t2w-first-window.
    std::vector<std::pair<std::string, std::string>> tune_with;
};

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
    KnobFacts facts;
};

// The stages KnobFacts::stage may name, in the table's order.
const std::vector<std::string> &knob_stages();

// What the engines are built from (models, LLM, TTS and Token2Wav configs): two configs with
// equal engines_json can share loaded engines; a knob is fixed at load iff it changes this.
nlohmann::json engines_json(const SpeakConfig &cfg);

// Names of the knobs whose facts satisfy `pred`, in table order (e.g. the thread counts).
std::vector<std::string> knobs_where(const std::function<bool(const KnobDef &)> &pred);

// The knobs one utterance may set on loaded engines (serve's per-request knobs, the C API's
// run knobs): every knob but the input and those the engines are built with (fixed_at_load).
std::vector<std::string> run_knob_names();

// Every knob, in --help order.
const std::vector<KnobDef> &knob_table();
const KnobDef *find_knob(std::string_view name);
std::vector<std::string> knob_names();

// The defaults of `rtf speak` (the reference's settings; queue depths 16).
SpeakConfig default_config();

// Sets one knob. Unknown name: rtf::Error(Usage) listing the known names.
void apply_knob(SpeakConfig &cfg, const std::string &name, const std::string &value);
void apply_knobs(SpeakConfig &cfg, const std::vector<std::pair<std::string, std::string>> &knobs);
// A JSON value as knob text (string as is, bool true/false, number as knob_number);
// anything else: rtf::Error(Usage) "<what> must be a string, number or boolean".
std::string knob_value_text(const nlohmann::json &v, const std::string &what);
// A JSON object of knobs (keys = names; also `rtf tune`'s {"knobs": {...}}) as name/value
// pairs in the object's order; errors (an unknown name, a bad value type) start with `where`.
std::vector<std::pair<std::string, std::string>> knobs_from_json(nlohmann::json j, const std::string &where);
// The same from a file; errors name the file and the key.
std::vector<std::pair<std::string, std::string>> read_knob_file(const std::string &path);
void apply_knob_file(SpeakConfig &cfg, const std::string &path);

// Derived fields (n_batch clamped to the context, input text checks) and validate().
void finalize(SpeakConfig &cfg);

// {"name": "value", ...} for every knob (effective values, defaults included).
nlohmann::json knobs_json(const SpeakConfig &cfg);

// A number as knob text (10 significant digits, no trailing zeros): what `get` returns.
std::string knob_number(double v);
// `v` when it is one of `allowed`; else rtf::Error(Usage) naming --`name` and the allowed values.
std::string knob_one_of(const std::string &name, const std::string &v, const std::vector<std::string> &allowed);

// The text of a switch value: true for "1"/"true"/"on"/"yes"/"", false for
// "0"/"false"/"off"/"no"; Usage error naming `what` otherwise.
bool parse_switch(const std::string &value, const std::string &what);

}  // namespace rtf::speak
