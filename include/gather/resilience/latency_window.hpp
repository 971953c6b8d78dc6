// A section's recent `ok` call latencies, for hedging at a measured percentile (docs/resilience.md).
//
// A fixed ring of the last 1,000 latencies in atomics: recording is two relaxed stores, so calls on
// any event loop record without a lock. The percentile is recomputed (an nth_element over a copy of
// the ring) by the call that crosses every 20th record, and read by everyone else as one atomic:
// no sort per request.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace gather {

class latency_window {
public:
  static constexpr std::size_t capacity = 1000;
  static constexpr std::size_t warm_up = 20; ///< no percentile before this many ok calls
  static constexpr std::size_t refresh_every = 20;

  /// `percentile` in [50, 99.9].
  explicit latency_window(double percentile) : percentile_(percentile) {}

  void record(std::chrono::microseconds took);
  /// The percentile over the window; nullopt before `warm_up` ok calls were recorded.
  std::optional<std::chrono::microseconds> percentile() const;

private:
  void recompute(std::uint64_t seen);

  const double percentile_;
  std::array<std::atomic<std::uint32_t>, capacity> slots_{};
  std::atomic<std::uint64_t> seen_{0};
  std::atomic<std::int64_t> cached_us_{-1};
};

} // namespace gather
