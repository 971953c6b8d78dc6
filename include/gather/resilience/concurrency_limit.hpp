// A bulkhead (docs/resilience.md, `max_concurrent`): at most N calls of one route's section in flight,
// across all requests. One atomic; a call over the limit is refused at once, never queued.
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <utility>

namespace gather {

class concurrency_limit {
public:
  /// One call's place under the limit, given back when the slot goes (moved-from: nothing held).
  class slot {
  public:
    slot() = default;
    slot(slot&& other) noexcept : limit_(std::exchange(other.limit_, nullptr)) {}
    slot& operator=(slot&& other) noexcept {
      if (this != &other) {
        reset();
        limit_ = std::exchange(other.limit_, nullptr);
      }
      return *this;
    }
    slot(const slot&) = delete;
    slot& operator=(const slot&) = delete;
    ~slot() { reset(); }
    void reset() {
      if (auto* limit = std::exchange(limit_, nullptr))
        limit->release();
    }

  private:
    friend class concurrency_limit;
    explicit slot(concurrency_limit* limit) : limit_(limit) {}
    concurrency_limit* limit_ = nullptr;
  };

  /// `limit` 0: unlimited (nothing is counted).
  explicit concurrency_limit(std::size_t limit) : limit_(static_cast<long>(limit)) {}

  /// Takes a slot; nullopt (and nothing taken) when all are in use.
  std::optional<slot> try_take() {
    if (limit_ == 0)
      return slot{};
    if (in_flight_.fetch_add(1, std::memory_order_relaxed) < limit_)
      return slot{this};
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  long in_flight() const { return in_flight_.load(std::memory_order_relaxed); }

private:
  void release() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }

  const long limit_;
  std::atomic<long> in_flight_{0};
};

} // namespace gather
