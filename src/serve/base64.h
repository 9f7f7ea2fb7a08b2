#pragma once
// Base64 (RFC 4648, standard alphabet, '=' padding): SSE audio deltas carry PCM this way.
#include <optional>
#include <string>
#include <string_view>

namespace rtf::serve {

std::string base64_encode(std::string_view bytes);
// nullopt for text that is not canonical padded base64 (bad character, length, padding).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace rtf::serve
