// Process-wide actor-level figures, counted without locks on the hot path.
#pragma once

#include <atomic>
#include <cstdint>

namespace gather {

struct gateway_stats {
  std::atomic<std::int64_t> coordinators{0};  ///< coordinator actors alive
  std::atomic<std::int64_t> workers{0};       ///< section worker actors alive
  std::atomic<std::int64_t> inflight{0};      ///< aggregations admitted and not yet answered
  std::atomic<std::uint64_t> overloaded{0};   ///< requests refused by max_inflight
  std::atomic<std::uint64_t> late_replies{0}; ///< answers that arrived after their request was answered
  std::atomic<std::uint64_t> client_gone{0};  ///< requests whose client hung up before the answer
  std::atomic<std::int64_t> connections{0};   ///< inbound connections open
  std::atomic<std::uint64_t> connections_refused{0}; ///< closed at once: max_connections reached
  std::atomic<std::uint64_t> config_reloads_ok{0};      ///< reloads that put a new generation in force
  std::atomic<std::uint64_t> config_reloads_invalid{0}; ///< reloads refused: the file had problems
};

} // namespace gather
