#pragma once
// The page `GET /` serves: one self-contained HTML file (no network fetches: its script and
// style are inline, it talks only to the server that served it) to type a line, pick a voice
// and a format, hear it as it streams and watch first audio, RTF, gaps and the per-chunk
// arrival timeline. Its source is src/serve/page/listen.html, compiled into the binary.
//
// RTF_SERVE_PAGE=FILE serves FILE instead, read on every request: for working on the page
// without rebuilding. The server never reads any other file for it.
#include <string>

namespace rtf::serve {

// The built-in page, or RTF_SERVE_PAGE's file when set (an unreadable file is a message
// page naming it, never a crash).
std::string listen_page();

}  // namespace rtf::serve
