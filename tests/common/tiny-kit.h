#pragma once
// The default tiny twin kit (twin::KitOptions{}: MiniCPM-o 4.5, tiny, F16, seed 0) for the
// tests that load engines on it:
//
//   static std::unique_ptr<rtf::test::TinyKit> kit_;       // in SetUpTestSuite:
//   kit_ = std::make_unique<rtf::test::TinyKit>("speak");  // kit_->dir is the kit's folder
//
// Under ctest the kit is made once per run, by the fixture test `tiny-kit` (tests/CMakeLists.txt,
// rtf_add_test(... KIT tiny)), and its folder is in $RTF_TEST_TINY_KIT. Why: every gtest case is
// its own process under ctest, the kit is ~430 MB of seeded values, and making it takes most of
// a minute under ThreadSanitizer: seven speak/duplex cases made it seven times, most of CI's TSan
// suite. The shared kit is only read (the derived TTS file in its .rtf-cache is written once,
// atomically, by whichever process needs it first). A test binary run by hand (no variable) makes
// its own kit in a scratch folder, removed with the object.
#include <cstdlib>
#include <memory>
#include <string>

#include "common/scratch-dir.h"
#include "twin/twin.h"

namespace rtf::test {

class TinyKit {
public:
    explicit TinyKit(const std::string &tag) {
        if (const char *shared = std::getenv("RTF_TEST_TINY_KIT"); shared && *shared) {
            dir = shared;
            return;
        }
        own_ = std::make_unique<ScratchDir>(tag + "-kit");
        dir = own_->dir.string();
        twin::KitOptions o;
        o.out_dir = dir;
        twin::make_kit(o);
    }
    std::string dir;

private:
    std::unique_ptr<ScratchDir> own_;
};

}  // namespace rtf::test
