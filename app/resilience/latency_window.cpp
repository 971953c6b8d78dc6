#include "gather/resilience/latency_window.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace gather {

void latency_window::record(std::chrono::microseconds took) {
  const auto us = static_cast<std::uint32_t>(
      std::clamp<std::int64_t>(took.count(), 0, std::numeric_limits<std::uint32_t>::max()));
  const auto n = seen_.fetch_add(1, std::memory_order_relaxed);
  slots_[n % capacity].store(us, std::memory_order_relaxed);
  const auto seen = n + 1;
  if (seen >= warm_up && seen % refresh_every == 0)
    recompute(seen);
}

void latency_window::recompute(std::uint64_t seen) {
  const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(seen, capacity));
  std::vector<std::uint32_t> values(count);
  for (std::size_t i = 0; i < count; ++i)
    values[i] = slots_[i].load(std::memory_order_relaxed);
  // The nearest-rank percentile: the smallest value with at least P% of the window at or below it.
  const auto rank = static_cast<std::size_t>(std::ceil(percentile_ / 100.0 * count));
  const auto at = values.begin() + static_cast<std::ptrdiff_t>(std::clamp<std::size_t>(rank, 1, count) - 1);
  std::nth_element(values.begin(), at, values.end());
  cached_us_.store(*at, std::memory_order_relaxed);
}

std::optional<std::chrono::microseconds> latency_window::percentile() const {
  const auto us = cached_us_.load(std::memory_order_relaxed);
  if (us < 0)
    return std::nullopt;
  return std::chrono::microseconds{us};
}

} // namespace gather
