// Reading a `url` member into a URL template, checking each placeholder against its scope.

#include "config_reader.hpp"
#include "gather/config/port.hpp"

#include <variant>

namespace gather::config_reader {

std::string placeholder_text(std::string_view name) { return "{" + std::string(name) + "}"; }

namespace {

/// Parses the inside of one `{...}`; the part, or the problem with it.
std::variant<url_part, std::string> parse_placeholder(std::string_view name,
                                                      const template_scope& scope) {
  using kind = url_part::kind;
  const std::string shown = placeholder_text(name);
  const std::optional<field_path> pieces = parse_dotted(name);
  if (!pieces)
    return shown + ": empty name";
  const std::string& head = pieces->front();
  const std::string rest(name.substr(std::min(name.size(), head.size() + 1)));
  if (head == "body") {
    if (!scope.body)
      return shown + ": {body...} needs a route whose \"method\" takes a body (POST, PUT, PATCH, DELETE)";
    return url_part{kind::body, head, field_path(pieces->begin() + 1, pieces->end()), 0};
  }
  if (pieces->size() == 1) {
    if (!scope.sections && head == "item")
      return url_part{kind::item, head, {}, 0};
    if (scope.route && !has_capture(*scope.route, head))
      return shown + ": the route path has no capture {" + head + "}";
    return url_part{kind::capture, head, {}, 0};
  }
  if (head == "query")
    return url_part{kind::query, rest, {}, 0};
  if (head == "header") {
    if (!is_token(rest))
      return shown + ": " + in_quotes(rest) + " is not a header name";
    return url_part{kind::header, lower_case(rest), {}, 0};
  }
  if (head == "claim") {
    if (!scope.auth)
      return shown + ": {claim.NAME} needs \"auth\" on the route (no token, no claims)";
    return url_part{kind::claim, rest, {}, 0};
  }
  if (head == "client") {
    if (rest != "ip")
      return shown + ": the client's only field is {client.ip}";
    return url_part{kind::client, rest, {}, 0};
  }
  if (!scope.sections)
    return shown + ": a batch url cannot refer to sections";
  if (scope.write)
    return shown + ": the write runs first, before any section: it cannot read a section's data";
  const auto section = scope.sections->find(head);
  if (section == scope.sections->end())
    return shown + ": this route has no section " + in_quotes(head);
  if (section->second == scope.self)
    return shown + ": a section cannot refer to its own data";
  return url_part{kind::section, head, field_path(pieces->begin() + 1, pieces->end()),
                  section->second};
}

/// Appends literal text, merging it into a literal part that ends the list.
void append_literal(std::vector<url_part>& parts, std::string_view text) {
  if (text.empty())
    return;
  if (parts.empty() || parts.back().what != url_part::kind::literal)
    parts.push_back({url_part::kind::literal, "", {}, 0});
  parts.back().text += text;
}

/// True when `authority` (host[:port], host possibly [v6]) has no port or one from 1 to 65535.
bool port_fits(std::string_view authority) {
  const auto bracket = authority.rfind(']');
  const auto colon = authority.rfind(':');
  if (colon == std::string_view::npos || (bracket != std::string_view::npos && colon < bracket))
    return true;
  const auto port = parse_port(authority.substr(colon + 1));
  return port && *port >= 1;
}

} // namespace

/// Problems with the fixed part of a URL: scheme, host and port never hold placeholders.
std::vector<std::string> url_prefix_problems(std::string_view url) {
  const bool has_control = std::any_of(url.begin(), url.end(), [](char c) {
    return static_cast<unsigned char>(c) <= ' ' || c == '\x7f';
  });
  std::vector<std::string> errors;
  if (has_control)
    errors.push_back("must not contain spaces or control characters");
  const std::size_t scheme_end = url.rfind("http://", 0) == 0    ? 7
                                 : url.rfind("https://", 0) == 0 ? 8
                                                                 : 0;
  if (scheme_end == 0) {
    errors.push_back("must start with http:// or https://");
    return errors;
  }
  const std::string_view authority =
      url.substr(scheme_end, url.find_first_of("/?", scheme_end) - scheme_end);
  if (authority.find_first_of("{}") != std::string_view::npos)
    errors.push_back(
        "placeholders are allowed only in the path and query, not in the host or port");
  else if (authority.empty())
    errors.push_back("needs a host after the scheme");
  else if (!port_fits(authority))
    errors.push_back("the port must be a number from 1 to 65535");
  return errors;
}

url_template parse_template_text(std::string_view source, const template_scope& scope,
                                 std::vector<std::string>& errors) {
  url_template tpl{std::string(source), {}};
  std::size_t at = 0;
  while (at < source.size()) {
    const std::size_t brace = source.find_first_of("{}", at);
    append_literal(tpl.parts, source.substr(at, brace - at));
    if (brace == std::string_view::npos)
      break;
    const std::size_t close = source.find_first_of("{}", brace + 1);
    if (source[brace] == '}' || close == std::string_view::npos || source[close] == '{') {
      errors.push_back("unbalanced " + in_quotes(source.substr(brace, 1)) + " at offset " +
                       std::to_string(brace));
      at = brace + 1;
      continue;
    }
    auto part = parse_placeholder(source.substr(brace + 1, close - brace - 1), scope);
    if (auto* error = std::get_if<std::string>(&part))
      errors.push_back(std::move(*error));
    else
      tpl.parts.push_back(std::move(std::get<url_part>(part)));
    at = close + 1;
  }
  return tpl;
}

namespace {

/// Parses `source` into parts; every problem with it is appended to `errors`.
url_template parse_url_template(std::string_view source, const template_scope& scope,
                                std::vector<std::string>& errors) {
  for (std::string& error : url_prefix_problems(source))
    errors.push_back(std::move(error));
  return parse_template_text(source, scope, errors);
}

} // namespace

url_template read_url(const object_reader& object, const template_scope& scope) {
  const std::string expected = "an http:// or https:// URL template";
  if (!object.require("url", expected))
    return {};
  const std::optional<std::string> source =
      object.read_string("url", "a string (" + expected + ")");
  if (!source)
    return {};
  std::vector<std::string> errors;
  url_template tpl = parse_url_template(*source, scope, errors);
  for (const std::string& error : errors)
    object.problem("url", error);
  return tpl;
}

} // namespace gather::config_reader
