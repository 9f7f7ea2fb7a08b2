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

// Text inside a Markdown table cell or paragraph. Markdown is read on terminals and in .md
// files as well as rendered, so nothing is HTML-escaped ("a < b", "the reference's" stay as
// they are); what a renderer would take as markup is backslash-escaped instead (CommonMark
// shows an escaped character literally): '<' where it could open a tag, comment or autolink
// (followed by a letter, '/', '!' or '?'), '&' where it would start an entity reference
// (&name; &#NN; &#xHH;), '|', and the punctuation that would start emphasis, code, links or
// headings (\ ` * _ [ ] #). Newlines fold to spaces; control bytes other than \t become
// U+FFFD (no terminal escape sequences).
std::string md_escape(std::string_view s);

// Text inside a Markdown code span: backticks cannot be escaped there, so they are
// replaced by U+2018; '|' and newlines as in md_escape.
std::string md_code(std::string_view s);

}  // namespace rtf::report
