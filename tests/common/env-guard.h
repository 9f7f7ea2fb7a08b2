#pragma once
// Sets (value) or unsets (nullptr) an environment variable for one scope and restores what
// it was: the tests' A/B switches (RTF_T2W_PACKED=avx2, RTF_T2W_ONEDNN=0, ...).
#include <cstdlib>
#include <string>

namespace rtf::test {

class EnvGuard {
public:
    EnvGuard(const char *name, const char *value) : name_(name) {
        const char *old = std::getenv(name);
        had_ = old != nullptr;
        if (had_) old_ = old;
        if (value) ::setenv(name, value, 1);
        else ::unsetenv(name);
    }
    ~EnvGuard() {
        if (had_) ::setenv(name_, old_.c_str(), 1);
        else ::unsetenv(name_);
    }
    EnvGuard(const EnvGuard &) = delete;
    EnvGuard &operator=(const EnvGuard &) = delete;

private:
    const char *name_;
    bool had_ = false;
    std::string old_;
};

}  // namespace rtf::test
