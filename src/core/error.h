#pragma once
// rtf::Error — the one exception type rtfkit throws across layers.
//
// Every error carries a kind that maps to the CLI's documented exit codes
// (docs/method.md §8):
//   Usage   -> 1  bad flag, bad value, bad input file (the message names it)
//   Setup   -> 1  missing model file, missing dependency, unsupported machine
//   Runtime -> 3  a stage failed while running (the message names the stage)
// Messages are written for the user: name the file / setting / tensor / stage that is
// wrong and say what would be right.
//
// An engine speaks of its own settings, not of a front end's flags: throw_setting() names the
// setting by its knob name (speak/knobs.h; e.g. "flow-steps"), and each front end says it its
// way — the CLI as the flag (`--flow-steps`, error_text()), serve and the C API as the knob
// name — so no engine message is wrong in a request's reply or an embedding application.
#include <stdexcept>
#include <string>

namespace rtf {

enum class ErrorKind { Usage, Setup, Runtime };

class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string &message) : std::runtime_error(message), kind_(kind) {}
    // what() is "<setting>: <message>".
    Error(ErrorKind kind, const std::string &setting, const std::string &message)
        : std::runtime_error(setting + ": " + message), kind_(kind), setting_(setting) {}
    ErrorKind kind() const noexcept { return kind_; }
    // The setting the error is about (a knob name, no "--"); "" when it names none.
    const std::string &setting() const noexcept { return setting_; }
    // Process exit code for this error (1 usage/setup, 3 runtime).
    int exit_code() const noexcept { return kind_ == ErrorKind::Runtime ? 3 : 1; }

private:
    ErrorKind kind_;
    std::string setting_;
};

[[noreturn]] void throw_usage(const std::string &message);
[[noreturn]] void throw_setup(const std::string &message);
[[noreturn]] void throw_runtime(const std::string &message);
// A bad value of one setting (Usage): `setting` is its knob name, `message` what is wrong
// and what would be right, in the engine's terms.
[[noreturn]] void throw_setting(const std::string &setting, const std::string &message);

// The message as a command line says it: a setting's name as its flag ("--flow-steps: ...").
std::string error_text(const Error &e);

const char *to_string(ErrorKind kind) noexcept;

}  // namespace rtf
