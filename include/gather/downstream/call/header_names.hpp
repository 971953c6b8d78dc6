// The request header names the downstream client never sends as they came, defined once: what
// HTTP/2 forbids in a request, and what a proxy never forwards. Names lower case.
#pragma once

#include <string_view>

namespace gather {

/// Connection-specific fields, which HTTP/2 forbids (RFC 9113 8.2.2), and Host, which
/// :authority carries: connection, keep-alive, proxy-connection, transfer-encoding, upgrade, host.
bool is_connection_specific(std::string_view lower_name);

/// Hop-by-hop fields a proxy does not forward (RFC 9110 7.6.1): the connection-specific ones and
/// proxy-authenticate, proxy-authorization, te, trailer.
bool is_hop_by_hop(std::string_view lower_name);

} // namespace gather
