#pragma once
// Escaping of every string that comes from a result JSON. A report renders text the user
// controls (prompts, reply text, knob values, error messages, host names): none of it may
// become markup. Escape at the point of output, always; nothing is "known safe".
#include <string>
#include <string_view>

namespace rtf::report {

// HTML text and attribute values (double- or single-quoted): & < > " ' -> entities.
// Bytes below 0x20 other than \t \n \r become U+FFFD, so control characters cannot
// corrupt the document. Also safe inside SVG <text> and <title>.
std::string html_escape(std::string_view s);

// Text inside a Markdown table cell or paragraph: HTML-escaped (GitHub renders raw HTML),
// '|' escaped, newlines folded to spaces, and the Markdown punctuation that would start
// emphasis, code, links or headings (\ ` * _ [ ] #) backslash-escaped.
std::string md_escape(std::string_view s);

// Text inside a Markdown code span: backticks cannot be escaped there, so they are
// replaced by U+2018; '|' and newlines as in md_escape.
std::string md_code(std::string_view s);

}  // namespace rtf::report
