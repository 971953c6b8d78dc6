// How the downstream client reads a rendered URL: http(s)://host[:port]/path?query, no user info,
// no fragment handling (the config's templates cannot make one). Its own split, not curl's.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "gather/downstream/call/call_target.hpp"

namespace gather {

struct origin_and_target {
  bool tls = false;
  std::string host;        ///< without brackets for IPv6
  std::string port;        ///< digits, 1..65535 (80 or 443 when the URL has none)
  std::string target;      ///< path and query, sent as rendered; always starts with '/'
  std::string key;         ///< scheme://host:port, the host lower case: the pools' one key
  std::string host_header; ///< the authority as written
  /// A call to an upstream's endpoint (call_target.hpp); null for a plain origin.
  std::shared_ptr<const call_target> endpoint;
  /// The name TLS sends as SNI and checks in the certificate (`host` when empty).
  std::string tls_name;
};

/// Nothing when the URL is not http(s), has user info, an empty host or a port no socket can have.
std::optional<origin_and_target> split_url(const std::string& url);

/// The URL read with `target`'s machine: its address and port connected to, its pool key, its
/// authority sent and its server_name checked; nothing when the URL is not http(s). Without a
/// target, split_url's.
std::optional<origin_and_target> split_url(const std::string& url, const std::shared_ptr<const call_target>& target);

} // namespace gather
