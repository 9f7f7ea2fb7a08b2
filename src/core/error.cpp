#include "core/error.h"

namespace rtf {

void throw_usage(const std::string &message) { throw Error(ErrorKind::Usage, message); }
void throw_setup(const std::string &message) { throw Error(ErrorKind::Setup, message); }
void throw_runtime(const std::string &message) { throw Error(ErrorKind::Runtime, message); }
void throw_setting(const std::string &setting, const std::string &message) {
    throw Error(ErrorKind::Usage, setting, message);
}

std::string error_text(const Error &e) { return e.setting().empty() ? e.what() : "--" + std::string(e.what()); }

const char *to_string(ErrorKind kind) noexcept {
    switch (kind) {
        case ErrorKind::Usage: return "usage";
        case ErrorKind::Setup: return "setup";
        case ErrorKind::Runtime: return "runtime";
    }
    return "unknown";
}

}  // namespace rtf
