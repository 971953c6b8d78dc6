// Rendering URL templates safely: every substituted value is percent-encoded as one path segment or
// one query value, so no input can change the host, add a path segment or a query parameter, or
// remove a segment with "." / "..".
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

/// A placeholder's value in a JSON template (a gRPC message, an HTTP write's body): the JSON value
/// to put in; a discarded value (nlohmann's `value_t::discarded`) when it is absent and the member
/// is left out (`{body.x}` of a body without `x`); nullopt when the template cannot be rendered
/// (another section's field that is absent or not a scalar).
using json_value_resolver = std::function<std::optional<nlohmann::json>(const url_part&)>;

/// `tpl` with every placeholder of `placeholders` filled in. A string that is one whole placeholder
/// takes the value itself (as text where `as_text[i]` says its field is a string; any other
/// string takes each value as text, an absent one as ""); a whole placeholder whose value is
/// absent leaves its object member out (null in an array; `{}` for the whole template). nullopt
/// when a value is missing.
std::optional<nlohmann::json> render_json_template(const nlohmann::json& tpl,
                                                   const std::vector<message_placeholder>& placeholders,
                                                   const std::vector<bool>& as_text,
                                                   const json_value_resolver& resolve);

/// The value at `path` inside `value`, or nullptr when absent.
const nlohmann::json* find_field(const nlohmann::json& value, const field_path& path);

} // namespace gather
