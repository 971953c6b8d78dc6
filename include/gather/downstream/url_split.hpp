// How the downstream client reads a rendered URL: http(s)://host[:port]/path?query, no user info,
// no fragment handling (the config's templates cannot make one). Its own split, not curl's.
#pragma once

#include <optional>
#include <string>

namespace gather {

struct origin_and_target {
  bool tls = false;
  std::string host;        ///< without brackets for IPv6
  std::string port;        ///< digits, 1..65535 (80 or 443 when the URL has none)
  std::string target;      ///< path and query, sent as rendered; always starts with '/'
  std::string key;         ///< scheme://host:port, the host lower case: the pools' one key
  std::string host_header; ///< the authority as written
};

/// Nothing when the URL is not http(s), has user info, an empty host or a port no socket can have.
std::optional<origin_and_target> split_url(const std::string& url);

} // namespace gather
