#pragma once
// A scratch directory for one test, removed with everything in it at scope exit. The
// prefix keeps the test files of different suites in one process apart.
#include <filesystem>
#include <string>

#include <unistd.h>

namespace rtf::test {

struct TmpDir {
    std::filesystem::path dir;
    explicit TmpDir(const std::string &prefix) {
        dir = std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
    }
    ~TmpDir() { std::filesystem::remove_all(dir); }
    TmpDir(const TmpDir &) = delete;
    TmpDir &operator=(const TmpDir &) = delete;
    std::string path(const std::string &name) const { return (dir / name).string(); }
};

}  // namespace rtf::test
