// Matching an inbound path against the configured routes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gather/config/config.hpp"

namespace gather {

struct route_match {
  std::size_t route = 0; ///< index in config::routes
  /// Capture name -> percent-decoded value of that segment.
  std::vector<std::pair<std::string, std::string>> captures;
};

/// `raw_path` is the request target's path as sent (still percent-encoded, no query string):
/// it is split on '/' first and each segment decoded after, so an encoded "%2F" stays inside its
/// capture. Captures never match an empty segment.
std::optional<route_match> match_route(const std::vector<route_config>& routes,
                                       std::string_view raw_path);

} // namespace gather
