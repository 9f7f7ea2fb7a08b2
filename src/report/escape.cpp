#include "report/escape.h"

namespace rtf::report {

std::string html_escape(std::string_view s) {
    std::string o;
    o.reserve(s.size() + s.size() / 8);
    for (char c : s) {
        switch (c) {
            case '&': o += "&amp;"; break;
            case '<': o += "&lt;"; break;
            case '>': o += "&gt;"; break;
            case '"': o += "&quot;"; break;
            case '\'': o += "&#39;"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') o += "\xEF\xBF\xBD";
                else o += c;
        }
    }
    return o;
}

namespace {
std::string fold_newlines(std::string_view s) {
    std::string o;
    for (char c : s) o += (c == '\n' || c == '\r') ? ' ' : c;
    return o;
}
}  // namespace

std::string md_escape(std::string_view s) {
    std::string o;
    for (char c : html_escape(fold_newlines(s))) {
        switch (c) {
            case '|': case '\\': case '`': case '*': case '_': case '[': case ']': case '#':
                o += '\\';
                o += c;
                break;
            default: o += c;
        }
    }
    return o;
}

std::string md_code(std::string_view s) {
    std::string o;
    for (char c : fold_newlines(s)) {
        if (c == '`') o += "\xE2\x80\x98";
        else if (c == '|') o += "\\|";
        else o += c;
    }
    return o;
}

}  // namespace rtf::report
