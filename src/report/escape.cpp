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

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// `s` at `i` (just after a '&') reads as the rest of an entity reference: name; #digits; #xhex;
bool entity_follows(std::string_view s, size_t i) {
    size_t j = i;
    if (j < s.size() && s[j] == '#') {
        ++j;
        const bool hex = j < s.size() && (s[j] == 'x' || s[j] == 'X');
        if (hex) ++j;
        const size_t k = j;
        while (j < s.size() && (hex ? is_hex(s[j]) : is_digit(s[j]))) ++j;
        return j > k && j < s.size() && s[j] == ';';
    }
    if (j >= s.size() || !is_alpha(s[j])) return false;
    while (j < s.size() && (is_alpha(s[j]) || is_digit(s[j]))) ++j;
    return j < s.size() && s[j] == ';';
}
}  // namespace

std::string md_escape(std::string_view in) {
    const std::string s = fold_newlines(in);
    std::string o;
    o.reserve(s.size() + s.size() / 8);
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        const char next = i + 1 < s.size() ? s[i + 1] : '\0';
        switch (c) {
            case '|': case '\\': case '`': case '*': case '_': case '[': case ']': case '#':
                o += '\\';
                o += c;
                break;
            case '<':
                if (is_alpha(next) || next == '/' || next == '!' || next == '?') o += '\\';
                o += c;
                break;
            case '&':
                if (entity_follows(s, i + 1)) o += '\\';
                o += c;
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20 && c != '\t') o += "\xEF\xBF\xBD";
                else o += c;
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
