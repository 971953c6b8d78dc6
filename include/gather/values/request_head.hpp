// An inbound request's head as the front read it: what admission and the request's start look at.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gather {

/// The request's parts as the front reads them; header names lower-case.
struct request_head {
  std::string method;
  std::string target;
  int version = 11; ///< 10, 11, or 20 (HTTP/2)
  std::vector<std::pair<std::string, std::string>> headers;
  /// The TCP peer's address ("127.0.0.1", "::1"): what a rate limit `per: ip` counts under. No
  /// forwarded header is trusted for it.
  std::string peer;

  /// First value of a header (lower-case name), "" when absent.
  const std::string& header(const std::string& lower_name) const;
  bool has_header(const std::string& lower_name) const;
  /// The target's path, still percent-encoded, without the query.
  std::string path() const { return target.substr(0, target.find('?')); }
};

} // namespace gather
