// Process-wide actor-level figures, counted without locks on the hot path.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "gather/values/shared_figures.hpp"

namespace gather {

/// The protocol an inbound connection spoke (label `proto` of gather_connections_total and of the
/// log line).
enum class inbound_proto : std::uint8_t { http10, http11, h2 };
inline constexpr const char* inbound_proto_names[] = {"http/1.0", "http/1.1", "h2"};
inline const char* to_string(inbound_proto proto) { return inbound_proto_names[static_cast<int>(proto)]; }

/// Why an HTTP/2 connection was ended for its behaviour (GOAWAY, then closed): the label `reason`
/// of gather_http2_abuse_total (docs/security.md).
enum class h2_abuse : std::uint8_t {
  none,
  rapid_reset,        ///< RST_STREAM over max_resets_per_second
  control_flood,      ///< PING/SETTINGS/PRIORITY over max_control_frames_per_second
  continuation_flood, ///< more CONTINUATION frames than max_continuation_frames
  ack_flood,          ///< acknowledgements the client never reads piling up
  incomplete_stream,  ///< a request not complete within request_timeout_ms
  stalled,            ///< an answer not taken (socket or window) within request_timeout_ms
  protocol_error,     ///< frames RFC 9113 forbids
};
inline constexpr const char* h2_abuse_names[] = {"none", "rapid_reset", "control_flood",
                                                 "continuation_flood", "ack_flood",
                                                 "incomplete_stream", "stalled", "protocol_error"};
inline constexpr std::size_t h2_abuse_count = std::size(h2_abuse_names);
inline const char* to_string(h2_abuse why) { return h2_abuse_names[static_cast<int>(why)]; }

struct gateway_stats {
  void count_connection(inbound_proto proto) {
    connections_by_proto[static_cast<int>(proto)].fetch_add(1, std::memory_order_relaxed);
  }

  std::atomic<std::int64_t> coordinators{0};  ///< coordinator actors alive
  std::atomic<std::int64_t> workers{0};       ///< section worker actors alive
  std::atomic<std::int64_t> inflight{0};      ///< aggregations admitted and not yet answered
  std::atomic<std::uint64_t> overloaded{0};   ///< requests refused by max_inflight
  std::atomic<std::uint64_t> late_replies{0}; ///< answers that arrived after their request was answered
  std::atomic<std::uint64_t> client_gone{0};  ///< requests whose client hung up before the answer
  std::atomic<std::int64_t> connections{0};   ///< inbound connections open
  std::atomic<std::uint64_t> connections_refused{0}; ///< closed at once: max_connections reached
  /// Closed for the PROXY protocol (`listen_proxy_protocol`): a peer outside `trusted_proxies`, or
  /// no valid header within the request-head time limit.
  std::atomic<std::uint64_t> proxy_refused{0};
  /// SIGTERM has come: /readyz answers 503 (the gateway still serves for drain_delay_ms).
  std::atomic<bool> draining{false};
  /// Connections by the protocol they spoke (inbound_proto); one that never sent a request is
  /// not counted.
  std::array<std::atomic<std::uint64_t>, 3> connections_by_proto{};
  std::atomic<std::int64_t> h2_connections{0}; ///< HTTP/2 connections open
  std::atomic<std::int64_t> h2_streams{0};     ///< HTTP/2 streams open, all connections
  std::array<std::atomic<std::uint64_t>, h2_abuse_count> h2_abuse{}; ///< by h2_abuse
  std::atomic<std::uint64_t> config_reloads_ok{0};      ///< reloads that put a new generation in force
  std::atomic<std::uint64_t> config_reloads_invalid{0}; ///< reloads refused: the file had problems
  shared_figures shared; ///< the shared store's state and operations (docs/shared.md)
};

} // namespace gather
