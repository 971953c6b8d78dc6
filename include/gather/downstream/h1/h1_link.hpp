// An HTTP/1.1 connection as a pooled link (app/downstream/pool/origin_connection.hpp's `link`): the link machine of
// an HTTP/2 link (link_machine.hpp) with a capacity of one stream, its request. What each moment
// of an HTTP/1.1 connection's life is in the machine's events, in one place, so that idleness,
// age and retirement are decided by the same transition function for both protocols:
//   made      connecting, the transfer that made it waiting on it
//   sending   its request goes out: ready (limit 1), then busy with stream 1
//   answered  the answer was read: ready (idle), or draining when it must not be reused
//             (Connection: close, bytes beyond the answer, its endpoint left); past
//             max_connection_age_ms due() drains it, past its idle bound due() says idle
// Public for its unit test (tests/downstream/pool/link_machine_test.cpp); the HTTP/1.1 client is its user.
#pragma once

#include <cstdint>
#include <memory>

#include "gather/downstream/call/call_target.hpp"
#include "gather/downstream/pool/link_machine.hpp"

namespace gather::h1_link {

/// The id the one request of an HTTP/1.1 connection has in its machine.
constexpr std::int32_t request_stream = 1;
/// The streams an HTTP/1.1 connection carries at a time.
constexpr std::uint32_t capacity = 1;

/// The bounds of a connection to `endpoint` (its upstream's), else the pool's.
inline const link_bounds& bounds_of(const std::shared_ptr<const call_target>& endpoint, const link_bounds& pool) {
  return endpoint ? endpoint->bounds : pool;
}

inline void made(link_machine& link, const link_bounds& bounds, link_machine::time_point now) {
  link = link_machine(bounds, now);
  link.wait_added();
}

/// Its request is about to leave (on a new connection, or one taken from the ready list).
inline void sending(link_machine& link) {
  if (link.state() == link_state::connecting) {
    const auto now = link_machine::clock::now();
    link.wait_removed(now);
    link.settings(capacity, now);
  }
  link.opened(request_stream);
}

/// Its answer was read (`reusable`: the answer allows keep-alive and nothing follows it); true when
/// the connection may join the ready list now.
inline bool answered(link_machine& link, bool reusable, bool endpoint_left, link_machine::time_point now) {
  link.ended(request_stream, now);
  if (!reusable || endpoint_left)
    link.drain(now);
  return link.due(now) == link_due::nothing && link.state() == link_state::ready;
}

} // namespace gather::h1_link
