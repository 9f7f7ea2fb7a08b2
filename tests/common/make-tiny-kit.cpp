// make-tiny-kit <dir>: the default tiny twin kit into <dir>, replacing what is there. ctest's
// fixture test `tiny-kit` runs it once per test run (tests/common/tiny-kit.h says why). The kit
// is written beside <dir> and renamed into place, so a reader never sees half a kit.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "twin/twin.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make-tiny-kit <dir>\n");
        return 2;
    }
    namespace fs = std::filesystem;
    const fs::path dir = argv[1];
    const fs::path tmp = dir.string() + ".tmp";
    try {
        fs::remove_all(tmp);
        fs::create_directories(tmp);
        rtf::twin::KitOptions o;
        o.out_dir = tmp.string();
        const auto r = rtf::twin::make_kit(o);
        fs::remove_all(dir);
        fs::rename(tmp, dir);
        std::printf("tiny kit: %s (%zu files, %.1f s)\n", dir.c_str(), r.files.size(), r.seconds);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "make-tiny-kit: %s\n", e.what());
        return 1;
    }
    return 0;
}
