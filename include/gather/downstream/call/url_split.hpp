// How the downstream client reads a rendered URL: http(s)://host[:port]/path?query, no user info,
// no fragment handling (the config's templates cannot make one). Its own split, not curl's.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gather/downstream/call/call_target.hpp"

namespace gather {

/// Where a URL's calls go: its scheme, host, port and what follows from them. Shared, never copied
/// per call: a template's origin is split once (split_origin) and every call made from it points at
/// the same fields (copying its five strings was ~300 instructions and an allocation a call).
struct origin_fields {
  bool tls = false;
  std::string host;        ///< without brackets for IPv6
  std::string port;        ///< digits, 1..65535 (80 or 443 when the URL has none)
  std::string key;         ///< scheme://host:port, the host lower case: the pools' one key
  std::string host_header; ///< the authority as written
  /// A call to an upstream's endpoint (call_target.hpp); null for a plain origin.
  std::shared_ptr<const call_target> endpoint;
  /// The name TLS sends as SNI and checks in the certificate (`host` when empty).
  std::string tls_name;
};

struct origin_and_target {
  std::shared_ptr<const origin_fields> origin; ///< never null in what split_url returns
  std::string target; ///< path and query, sent as rendered; always starts with '/'
};

/// A URL template's origin split once, when its configuration is read: every URL rendered from the
/// template starts with `prefix` (placeholders never stand in the scheme, host or port), so a call
/// makes only its target from the rest instead of splitting the whole URL again.
struct split_origin {
  std::string prefix; ///< "scheme://authority" as written in the template
  std::shared_ptr<const origin_fields> origin; ///< no endpoint
};

/// The origin of a template's `source` (its text up to the first '/' or '?' after the scheme);
/// null when that part holds a placeholder or is no http(s) origin split_url would take.
std::shared_ptr<const split_origin> split_template_origin(std::string_view source);

/// Nothing when the URL is not http(s), has user info, an empty host or a port no socket can have.
std::optional<origin_and_target> split_url(const std::string& url);

/// The URL read with `target`'s machine: its address and port connected to, its pool key, its
/// authority sent and its server_name checked; nothing when the URL is not http(s). Without a
/// target, split_url's.
std::optional<origin_and_target> split_url(const std::string& url, const std::shared_ptr<const call_target>& target);

/// As the overload above, but a URL that starts with `origin`'s prefix (and has no target) takes
/// the origin's fields (shared) and only its target is made from the rest. Without `origin`,
/// or a URL that does not start with its prefix, the URL is split whole.
std::optional<origin_and_target> split_url(const std::string& url, const std::shared_ptr<const call_target>& target,
                                           const split_origin* origin);

} // namespace gather
