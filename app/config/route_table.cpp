#include "gather/config/route_table.hpp"

#include "gather/config/url_template.hpp"

namespace gather {

namespace {

/// The raw segments of "/a/b" ({"a", "b"}); "/" has none. Empty segments are kept ("/a/" has two),
/// so a trailing slash or "//" never matches a route, whose segments are all non-empty.
std::vector<std::string_view> split_segments(std::string_view raw_path) {
  std::vector<std::string_view> segments;
  std::string_view rest = raw_path.substr(1);
  if (rest.empty())
    return segments;
  for (;;) {
    const std::size_t slash = rest.find('/');
    segments.push_back(rest.substr(0, slash));
    if (slash == std::string_view::npos)
      return segments;
    rest.remove_prefix(slash + 1);
  }
}

/// Matches decoded segments against one route; the captures on success.
std::optional<route_match> match_one(const route_config& route, std::size_t index,
                                     const std::vector<std::string>& decoded) {
  if (route.segments.size() != decoded.size())
    return std::nullopt;
  route_match match;
  match.route = index;
  for (std::size_t i = 0; i < decoded.size(); ++i) {
    const path_segment& segment = route.segments[i];
    if (!segment.capture) {
      if (segment.text != decoded[i])
        return std::nullopt;
    } else if (decoded[i].empty()) {
      return std::nullopt;
    } else {
      match.captures.emplace_back(segment.text, decoded[i]);
    }
  }
  return match;
}

} // namespace

std::optional<route_match> match_route(const std::vector<route_config>& routes,
                                       std::string_view raw_path) {
  if (raw_path.empty() || raw_path.front() != '/')
    return std::nullopt;
  // Split before decoding: "%2F" is data inside one segment, never a separator.
  std::vector<std::string> decoded;
  for (const std::string_view segment : split_segments(raw_path))
    decoded.push_back(percent_decode(segment));
  for (std::size_t i = 0; i < routes.size(); ++i) {
    if (auto match = match_one(routes[i], i, decoded))
      return match;
  }
  return std::nullopt;
}

} // namespace gather
