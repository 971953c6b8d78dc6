// Rendering URL templates safely: every substituted value is percent-encoded as one path segment or
// one query value, so no input can change the host, add a path segment or a query parameter, or
// remove a segment with "." / "..".
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "gather/config/config.hpp"

namespace gather {

/// Percent-encodes everything but RFC 3986 unreserved characters (A-Z a-z 0-9 - . _ ~).
/// A value made only of dots ("." or "..") is encoded entirely ("%2E", "%2E%2E").
std::string percent_encode(std::string_view value);

/// Decodes %XX escapes ("+" stays "+"); malformed escapes are kept as written.
std::string percent_decode(std::string_view value);

/// The value of one hex digit (either case), or -1.
constexpr int hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/// The raw (unencoded) value for a placeholder, or nullopt when the URL cannot be rendered
/// (a section field that is absent or not a scalar).
using placeholder_resolver = std::function<std::optional<std::string>(const url_part&)>;

/// Renders `tpl`, encoding each resolved value; nullopt when the resolver returned nullopt.
std::optional<std::string> render_url(const url_template& tpl, const placeholder_resolver& resolve);

/// A JSON scalar as it is substituted: strings as is, numbers as JSON writes them, booleans as
/// "true"/"false"; nullopt for null, objects, arrays.
std::optional<std::string> scalar_text(const nlohmann::json& value);

/// The value at `path` inside `value`, or nullptr when absent.
const nlohmann::json* find_field(const nlohmann::json& value, const field_path& path);

} // namespace gather
