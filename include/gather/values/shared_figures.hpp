// What the shared store (docs/shared.md) did, counted where it happens and read by /healthz and
// /metrics: one set per gateway process, in `gateway_stats`.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace gather {

/// A store operation's kind: the `op` label of gather_shared_ops_total.
enum class store_op : std::uint8_t { limit, sync, get, set, lock };
inline constexpr const char* store_op_names[] = {"limit", "sync", "get", "set", "lock"};
/// How it ended: the `result` label (`skipped`: not sent, the store counted as down).
enum class store_result : std::uint8_t { ok, error, timeout, skipped };
inline constexpr const char* store_result_names[] = {"ok", "error", "timeout", "skipped"};

struct shared_figures {
  void count(store_op op, store_result result) {
    ops[static_cast<std::size_t>(op)][static_cast<std::size_t>(result)].fetch_add(
        1, std::memory_order_relaxed);
  }
  /// -1: no `shared` configured (no metric lines, no "shared" in /healthz); else 1 up, 0 down.
  std::atomic<int> up{-1};
  std::atomic<std::uint64_t> gateways{1}; ///< G as last seen in the store (1 before any)
  std::array<std::array<std::atomic<std::uint64_t>, std::size(store_result_names)>,
             std::size(store_op_names)>
      ops{};
};

} // namespace gather
