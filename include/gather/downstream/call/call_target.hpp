// Where a call to an upstream's endpoint goes (docs/upstreams.md). The URL keeps what it says
// (the scheme, the path and query; its host is the upstream's name); the target says which
// machine: an IP address and port, connected to with no lookup, the upstream's TLS, the name sent
// as Host (HTTP/1.1) or :authority (HTTP/2) and as SNI, and the bounds of its connections. Its
// pool key keeps an endpoint's connections apart from every other's: the same address with other
// TLS settings, or of another upstream, never shares one.
//
// One target per endpoint, built when the endpoint joins its table and shared by every call to
// it (a shared_ptr copy per call). A target without an address is the upstream that has no
// endpoint: its calls end as a connection failure at once, with `detail` saying why.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "gather/config/config.hpp"
#include "gather/downstream/pool/link_machine.hpp"

namespace gather {

/// The TLS contexts of one upstream's `tls` (the CA, the client certificate): opaque outside
/// app/downstream/ (endpoint_tls.hpp there).
struct endpoint_tls;

struct call_target {
  std::string address;     ///< an IP literal, no brackets; empty: no endpoint (see `detail`)
  std::uint16_t port = 0;
  std::string authority;   ///< Host / :authority: the upstream's name, or server_name under TLS
  std::string server_name; ///< SNI and the name the certificate must carry (https)
  /// The upstream's `tls` (its CA, a client certificate); null: the system's CAs, no certificate.
  std::shared_ptr<const endpoint_tls> tls;
  /// "<upstream>|<address>:<port>|<tls tag>": what the pools key on, after the URL's scheme.
  std::string pool_key;
  /// The upstream's idle_timeout_ms and max_connection_age_ms (drain_quiet the top level's).
  link_bounds bounds;
  std::string detail;      ///< why there is no endpoint, when `address` is empty
  /// The endpoint left its upstream: its connections take no new call and close when idle.
  mutable std::atomic<bool> retired{false};
};

/// An upstream's `tls` as contexts, its files read now (at start and on each reload); null with
/// `error` set when one cannot be read or used (a key that is not the certificate's, say).
std::shared_ptr<const endpoint_tls> make_endpoint_tls(const upstream_tls_config& tls, std::string& error);

/// A short tag of what the contexts were built from (the files' contents and the server name):
/// equal tags, the same TLS; part of a pool key.
const std::string& tls_tag(const endpoint_tls& tls);

} // namespace gather
