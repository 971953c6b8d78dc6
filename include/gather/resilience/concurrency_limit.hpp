// A bulkhead (docs/resilience.md, `max_concurrent`): at most N calls of one route's section in flight,
// across all requests. One atomic; a call over the limit is refused at once, never queued.
#pragma once

#include <atomic>
#include <cstddef>

namespace gather {

class concurrency_limit {
public:
  /// `limit` 0: unlimited (nothing is counted).
  explicit concurrency_limit(std::size_t limit) : limit_(static_cast<long>(limit)) {}

  /// Takes a slot; false (and nothing taken) when all are in use.
  bool try_acquire() {
    if (limit_ == 0)
      return true;
    if (in_flight_.fetch_add(1, std::memory_order_relaxed) < limit_)
      return true;
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  void release() {
    if (limit_ != 0)
      in_flight_.fetch_sub(1, std::memory_order_relaxed);
  }
  long in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

private:
  const long limit_;
  std::atomic<long> in_flight_{0};
};

} // namespace gather
