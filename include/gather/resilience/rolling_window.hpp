// Two counters over the last `span` of time, in ten buckets of span/10 each: what the circuit
// breaker (calls, failures) and the retry budget (first attempts, retries and hedges) count.
//
// Lock-free: a bucket is reset by the first writer of a newer tick. With several event loops a
// count may land in a bucket that another loop is resetting at that instant and be lost; the
// figures are rates over seconds, where one lost count is noise (with one loop they are exact).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <utility>

#include "gather/values/inbound_request.hpp"

namespace gather {

class rolling_window {
public:
  static constexpr std::size_t buckets = 10;

  explicit rolling_window(std::chrono::milliseconds span);

  void add(steady_time now, std::uint64_t first, std::uint64_t second);
  /// Both counters summed over the buckets of the last `span`.
  std::pair<std::uint64_t, std::uint64_t> totals(steady_time now) const;
  void clear();

private:
  struct bucket {
    std::atomic<std::int64_t> tick{-1};
    std::atomic<std::uint64_t> first{0};
    std::atomic<std::uint64_t> second{0};
  };
  std::int64_t tick_of(steady_time now) const;

  const std::chrono::nanoseconds width_;
  std::array<bucket, buckets> ring_;
};

} // namespace gather
