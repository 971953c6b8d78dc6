// Whose request it is, behind load balancers (docs/gateway.md, "Behind a load balancer"): the
// client's address from the connection's peer and, only when that peer is one of
// `trusted_proxies`, the addresses the proxies forwarded. Pure functions: no sockets.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gather/config/ip_range.hpp"
#include "gather/values/request_head.hpp"

namespace gather {

using header_fields = std::vector<std::pair<std::string, std::string>>;

/// The addresses of every `X-Forwarded-For` field of `headers` (lower-case names), in order, left
/// to right; nullopt when there is none or any entry is not a bare IP address.
std::optional<std::vector<ip_address>> forwarded_for_chain(const header_fields& headers);
/// The `for=` addresses of every `Forwarded` field (RFC 7239), in order; nullopt when there is
/// none, or an element has no `for=` (or two), or one is not an IP address (`unknown`, an
/// obfuscated `_name`). A value may be quoted, an IPv6 address bracketed, and either carry a port.
std::optional<std::vector<ip_address>> forwarded_chain(const header_fields& headers);

/// The right-most address of `chain` not in `trusted` (the left-most when all are).
ip_address untrusted_end(const std::vector<ip_address>& chain, const ip_ranges& trusted);

/// The client's address: `peer` unless it is in `trusted`; then the X-Forwarded-For walk, else
/// the Forwarded walk, else `peer`. Malformed headers are passed over, never an error.
ip_address client_address(const ip_address& peer, const header_fields& headers, const ip_ranges& trusted);

/// Names a parsed request's `peer` and `client` (its headers read): from an untrusted peer no
/// header is looked at.
inline void name_client(request_head& head, const ip_address& peer, const std::string& peer_text,
                        const ip_ranges& trusted) {
  head.peer = peer_text;
  if (trusted.empty() || !trusted.contains(peer))
    return void(head.client = peer_text);
  const auto client = client_address(peer, head.headers, trusted);
  head.client = client == peer ? peer_text : to_string(client);
}

} // namespace gather
