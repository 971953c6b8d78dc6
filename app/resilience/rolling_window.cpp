#include "gather/resilience/rolling_window.hpp"

#include <algorithm>

namespace gather {

rolling_window::rolling_window(std::chrono::milliseconds span)
  : width_(std::max<std::chrono::nanoseconds>(span / static_cast<int>(buckets),
                                              std::chrono::nanoseconds{1})) {
}

std::int64_t rolling_window::tick_of(steady_time now) const {
  return now.time_since_epoch() / width_;
}

void rolling_window::add(steady_time now, std::uint64_t first, std::uint64_t second) {
  const auto tick = tick_of(now);
  auto& b = ring_[static_cast<std::size_t>(tick) % buckets];
  auto seen = b.tick.load(std::memory_order_acquire);
  if (seen != tick && seen < tick && b.tick.compare_exchange_strong(seen, tick)) {
    b.first.store(0, std::memory_order_relaxed);
    b.second.store(0, std::memory_order_relaxed);
  } else if (seen > tick) {
    return; // a clock read older than a whole window: nothing to count it in
  }
  if (first)
    b.first.fetch_add(first, std::memory_order_relaxed);
  if (second)
    b.second.fetch_add(second, std::memory_order_relaxed);
}

std::pair<std::uint64_t, std::uint64_t> rolling_window::totals(steady_time now) const {
  const auto tick = tick_of(now);
  std::uint64_t first = 0, second = 0;
  for (const auto& b : ring_) {
    const auto t = b.tick.load(std::memory_order_acquire);
    if (t > tick - static_cast<std::int64_t>(buckets) && t <= tick) {
      first += b.first.load(std::memory_order_relaxed);
      second += b.second.load(std::memory_order_relaxed);
    }
  }
  return {first, second};
}

void rolling_window::clear() {
  for (auto& b : ring_)
    b.tick.store(-1, std::memory_order_release);
}

} // namespace gather
