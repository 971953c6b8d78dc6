// Reading a route's path into segments, and whether two route paths overlap.

#include "config_reader.hpp"

#include <set>

namespace gather::config_reader {

namespace {

/// Built-in endpoints: they take precedence, so a route on one of these paths could never be hit.
constexpr std::string_view builtin_paths[] = {"/healthz", "/readyz", "/metrics", "/debug/actors",
                                              "/debug/upstreams", "/dashboard"};

/// Characters a literal route segment may hold: RFC 3986 pchar without percent-escapes.
bool is_path_literal_char(char c) {
  return is_alpha(c) || is_digit(c) ||
         std::string_view("._~!$&'()*+,;=:@-").find(c) != std::string_view::npos;
}

/// [A-Za-z_][A-Za-z0-9_]*: a path capture's name.
bool is_capture_name(std::string_view name) {
  return !name.empty() && (is_alpha(name[0]) || name[0] == '_') &&
         std::all_of(name.begin(), name.end(),
                     [](char c) { return is_alpha(c) || is_digit(c) || c == '_'; });
}

} // namespace

bool is_builtin_path(std::string_view path) { return contains(builtin_paths, path); }

namespace {

/// Parses one segment of a route path; the problem with it, if any.
std::optional<std::string> parse_path_segment(std::string_view raw, path_segment& out) {
  if (raw.empty())
    return "empty segment (\"//\" or a trailing \"/\")";
  if (raw.front() == '{') {
    const std::string_view name = raw.substr(1, raw.size() - 1 - (raw.back() == '}'));
    if (raw.back() != '}' || !is_capture_name(name))
      return "segment " + in_quotes(raw) +
             ": a capture is a whole segment {name} with name [A-Za-z_][A-Za-z0-9_]*";
    out = {true, std::string(name)};
    return std::nullopt;
  }
  if (!std::all_of(raw.begin(), raw.end(), is_path_literal_char))
    return "segment " + in_quotes(raw) +
           ": a literal segment may hold only A-Z a-z 0-9 . _ ~ ! $ & ' ( ) * + , ; = : @ - "
           "(a capture is a whole segment {name})";
  if (raw == "." || raw == "..")
    return "segment " + in_quotes(raw) +
           ": dot segments are removed by clients and proxies, so they never arrive";
  out = {false, std::string(raw)};
  return std::nullopt;
}

/// Parses a route path into `segments`; every problem with it ("/" has no segments).
std::vector<std::string> parse_route_path(std::string_view path,
                                          std::vector<path_segment>& segments) {
  std::vector<std::string> errors;
  if (path == "/healthz" || path == "/readyz") // the others: once `admin` is known (read_top_level.cpp)
    errors.push_back(in_quotes(path) +
                     " is a built-in endpoint, which takes precedence over routes");
  if (path == "/")
    return errors;
  std::set<std::string> capture_names;
  for (const std::string_view raw : split(path.substr(1), '/')) {
    path_segment segment;
    if (auto error = parse_path_segment(raw, segment)) {
      errors.push_back(*error);
      continue;
    }
    if (segment.capture && !capture_names.insert(segment.text).second)
      errors.push_back("capture {" + segment.text + "} appears twice");
    segments.push_back(std::move(segment));
  }
  return errors;
}

} // namespace

bool read_route_path(const object_reader& route, route_config& out) {
  const std::string expected = "a string starting with \"/\"";
  if (!route.require("path", expected))
    return false;
  const std::optional<std::string> path = route.read_string("path", expected);
  if (!path)
    return false;
  if (path->empty() || path->front() != '/') {
    route.problem("path", "must be " + expected);
    return false;
  }
  out.path = *path;
  const std::vector<std::string> errors = parse_route_path(*path, out.segments);
  for (const std::string& error : errors)
    route.problem("path", error);
  return errors.empty();
}

bool overlap(const route_config& a, const route_config& b) {
  if (a.segments.size() != b.segments.size())
    return false;
  for (std::size_t i = 0; i < a.segments.size(); ++i) {
    const path_segment& x = a.segments[i];
    const path_segment& y = b.segments[i];
    if (!x.capture && !y.capture && x.text != y.text)
      return false;
  }
  return true;
}

bool has_capture(const route_config& route, std::string_view name) {
  return std::any_of(route.segments.begin(), route.segments.end(),
                     [&](const path_segment& s) { return s.capture && s.text == name; });
}

} // namespace gather::config_reader
