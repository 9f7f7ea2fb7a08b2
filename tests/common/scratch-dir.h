#pragma once
// A scratch folder for a test's files, removed with everything in it when the object goes
// out of scope. Every test that writes files uses this one helper:
//
//   rtf::test::ScratchDir t("gguf");
//   write_something(t.file("model.gguf"));    // <dir>/model.gguf
//   inspect(t.dir);                           // the folder itself
//
// Where: under $RTF_TEST_TMP when set (ctest sets it for the shell tests to build/test-tmp),
// else the system temp folder. Name: rtf-<tag>-<pid>-<n>, n counting the folders this
// process made, so test processes running in parallel (ctest -j) and two folders alive in
// one test never share a file. A folder left by an earlier process with the same pid is
// emptied first. Removal errors are ignored: cleanup must not fail a test. Constructing from
// several threads at once is safe (the counter is atomic).
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

namespace rtf::test {

class ScratchDir {
public:
    explicit ScratchDir(const std::string &tag) {
        static std::atomic<int> counter{0};
        const char *base = std::getenv("RTF_TEST_TMP");
        dir = std::filesystem::path(base && *base ? base : std::filesystem::temp_directory_path().string()) /
              ("rtf-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        std::filesystem::create_directories(dir);
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    ScratchDir(const ScratchDir &) = delete;
    ScratchDir &operator=(const ScratchDir &) = delete;

    // <dir>/<name> as a string (name may hold subfolders; they are not created).
    std::string file(const std::string &name) const { return (dir / name).string(); }

    std::filesystem::path dir;
};

}  // namespace rtf::test
