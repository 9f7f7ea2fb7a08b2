#pragma once
// rtf::Error — the one exception type rtfkit throws across layers.
//
// Every error carries a kind that maps to the CLI's documented exit codes
// (DESIGN.md "Bench protocol and verdict"):
//   Usage   -> 1  bad flag, bad value, bad input file (the message names it)
//   Setup   -> 1  missing model file, missing dependency, unsupported machine
//   Runtime -> 3  a stage failed while running (the message names the stage)
// Messages are written for the user: name the file / flag / tensor / stage that is
// wrong and say what would be right.
#include <stdexcept>
#include <string>

namespace rtf {

enum class ErrorKind { Usage, Setup, Runtime };

class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string &message) : std::runtime_error(message), kind_(kind) {}
    ErrorKind kind() const noexcept { return kind_; }
    // Process exit code for this error (1 usage/setup, 3 runtime).
    int exit_code() const noexcept { return kind_ == ErrorKind::Runtime ? 3 : 1; }

private:
    ErrorKind kind_;
};

[[noreturn]] void throw_usage(const std::string &message);
[[noreturn]] void throw_setup(const std::string &message);
[[noreturn]] void throw_runtime(const std::string &message);

const char *to_string(ErrorKind kind) noexcept;

}  // namespace rtf
