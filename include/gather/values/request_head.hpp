// An inbound request's head as the front read it: what admission and the request's start look at.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gather {

/// The request's parts as the front reads them; header names lower-case.
struct request_head {
  std::string method;
  std::string target;
  int version = 11; ///< 10, 11, or 20 (HTTP/2)
  std::vector<std::pair<std::string, std::string>> headers;
  /// The TCP peer's address ("127.0.0.1", "::1"), or the PROXY protocol header's source.
  std::string peer;
  /// The client's address: the peer, or the one forwarded to a peer in `trusted_proxies`
  /// (gather/front/client_address.hpp). What a rate limit `per: ip` counts under, `{client.ip}`
  /// and the log line's `client`.
  std::string client;

  /// First value of a header (lower-case name), "" when absent. Names are views: a literal longer
  /// than the short-string buffer ("transfer-encoding") made a string on the heap per question.
  const std::string& header(std::string_view lower_name) const;
  bool has_header(std::string_view lower_name) const;
  /// Every value of a list-valued header joined with ", " (RFC 9110 5.3: several `Accept` lines
  /// are one list), "" when absent.
  std::string header_list(std::string_view lower_name) const;
  /// The target's path, still percent-encoded, without the query.
  std::string path() const { return target.substr(0, target.find('?')); }
};

} // namespace gather
