#include "cli/speak-options.h"

#include "core/error.h"

namespace rtf::cli {

void add_speak_options(CLI::App *sub, SpeakOptions &o, KnobSet set) {
    for (const auto &k : speak::knob_table()) {
        if (set == KnobSet::speak_no_input && k.input) continue;
        if (set == KnobSet::t2w_engine && !k.t2w_engine) continue;
        std::string names = (k.short_name.empty() ? "" : "-" + k.short_name + ",") + "--" + k.name;
        std::string help = k.help;
        if (!k.unit.empty()) help += " [" + k.unit + "]";
        if (!k.allowed.empty()) {
            help += " (";
            for (size_t i = 0; i < k.allowed.size(); ++i) help += (i ? ", " : "") + k.allowed[i];
            help += ")";
        }
        if (k.changes_math) help += " (changes the output, not only its speed)";
        const std::string name = k.name;
        CLI::Option *opt = nullptr;
        if (k.is_switch) {
            opt = sub->add_flag_callback(names, [&o, name] { o.given.emplace_back(name, "true"); }, help);
        } else {
            opt = sub->add_option_function<std::string>(
                names, [&o, name](const std::string &v) { o.given.emplace_back(name, v); }, help);
            const std::string def = k.get(o.base);
            if (!def.empty() && !k.input) opt->default_str(def);
            std::string type = k.unit.empty() ? "TEXT" : "NUM";
            if (!k.allowed.empty()) {
                type.clear();
                for (const auto &a : k.allowed) type += (type.empty() ? "" : "|") + a;
            }
            opt->type_name(type);
        }
        opt->group(k.group);
    }
    sub->add_option("--config", o.config_path,
                    "JSON file of knobs: an object keyed by these long flag names, e.g. {\"d1\": 4, \"no-cfg\": true} "
                    "(what `rtf tune` writes); flags given on the command line win")
        ->check(CLI::ExistingFile);
    if (set != KnobSet::t2w_engine) o.profile.add_to(sub);
}

speak::SpeakConfig make_speak_config(const SpeakOptions &o, bool finalize) {
    speak::SpeakConfig c = o.base;
    if (!o.config_path.empty()) speak::apply_knob_file(c, o.config_path);
    speak::apply_knobs(c, o.given);
    if (finalize) speak::finalize(c);
    return c;
}

std::set<std::string> user_set_knobs(const SpeakOptions &o) {
    std::set<std::string> s;
    for (const auto &[k, v] : o.given) s.insert(k);
    if (!o.config_path.empty())
        for (const auto &[k, v] : speak::read_knob_file(o.config_path)) s.insert(k);
    return s;
}

speak::MachineProfile apply_profile(const SpeakOptions &o, speak::SpeakConfig &cfg) {
    return apply_machine_profile(o.profile, cfg, user_set_knobs(o));
}

}  // namespace rtf::cli
