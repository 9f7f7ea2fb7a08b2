#include "serve/listen-page.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace rtf::serve {
namespace {
// kListenPage: page/listen.html as a raw string literal, generated at configure time
// (src/serve/CMakeLists.txt; editing the page re-runs the configure step).
#include "listen-page.inc"
}  // namespace

std::string listen_page() {
    if (const char *f = std::getenv("RTF_SERVE_PAGE"); f && *f) {
        std::ifstream in(f, std::ios::binary);
        if (!in) return std::string("<!doctype html><title>rtf serve</title><p>RTF_SERVE_PAGE: cannot read ") + f;
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    }
    return kListenPage;
}

}  // namespace rtf::serve
