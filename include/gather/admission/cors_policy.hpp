// CORS (the Fetch standard's protocol, docs/api.md#cors): which answers a page on another origin
// may read, and the answer to a browser's preflight. Decisions only: no socket, no downstream.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gather/config/config.hpp"

namespace gather {

using header_list = std::vector<std::pair<std::string, std::string>>;

/// True for a preflight: OPTIONS with `Origin` and `Access-Control-Request-Method`.
bool is_preflight(std::string_view method, bool has_origin, bool has_request_method);

/// The headers an answer to a request from `origin` carries: Access-Control-Allow-Origin (that
/// origin, or `*`), Vary: Origin, and Expose-Headers / Allow-Credentials when configured. Empty when
/// `origin` is not allowed (the page may not read the answer) or absent.
header_list cors_answer_headers(const cors_config& cors, std::string_view origin);

struct preflight_verdict {
  bool allowed = false;
  header_list headers; ///< the 204's Allow-Methods, Allow-Headers and Max-Age when allowed (its
                       ///< Allow-Origin, Vary and Allow-Credentials are any answer's: cors_answer_headers)
  std::string refusal; ///< why not (for the log): "origin", "method" or "header <name>"
};

/// The answer to a preflight for a path served on `route_methods` ("GET", or "GET, POST" when
/// routes of several methods share it): allowed when the origin is, the method asked for is one of
/// them and every header asked for is in allow_headers. Allow-Methods lists them all.
preflight_verdict cors_preflight(const cors_config& cors, std::string_view origin,
                                 std::string_view request_method, std::string_view request_headers,
                                 std::string_view route_methods);

} // namespace gather
