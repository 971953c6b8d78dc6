// One call's place in downstream_client::inflight(): raised once when downstream_client's launch
// makes it, lowered once when the call lets it go (its completion is about to run, it was
// cancelled, or its loop's client went away with it), whatever way the call took in between.
// Move-only. A ticket inside a handler the loop never ran is destroyed with the loop, after the
// client: such a ticket shares the count's ownership; one held by a running call points at it (the
// loop's client releases its running calls' tickets when it goes). Private to app/downstream/.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

namespace gather::downstream_loop {

class inflight_ticket {
public:
  using count = std::atomic<std::size_t>;

  inflight_ticket() = default;
  /// A call started on its loop now: the count outlives it (every call still held when the loop's
  /// client goes is released by that client's destructor, before the count is freed).
  explicit inflight_ticket(count& of) : count_(&of) { count_->fetch_add(1, std::memory_order_relaxed); }
  /// A call posted to its loop: the handler may be destroyed unrun with the loop, after the
  /// client, so this ticket keeps the count alive (one reference count per posted call, none for
  /// a call started on its own loop).
  explicit inflight_ticket(std::shared_ptr<count> of) : keep_(std::move(of)), count_(keep_.get()) {
    count_->fetch_add(1, std::memory_order_relaxed);
  }
  inflight_ticket(inflight_ticket&& other) noexcept
    : keep_(std::move(other.keep_)), count_(std::exchange(other.count_, nullptr)) {}
  inflight_ticket& operator=(inflight_ticket&& other) noexcept {
    if (this != &other) {
      release();
      keep_ = std::move(other.keep_);
      count_ = std::exchange(other.count_, nullptr);
    }
    return *this;
  }
  inflight_ticket(const inflight_ticket&) = delete;
  inflight_ticket& operator=(const inflight_ticket&) = delete;
  ~inflight_ticket() { release(); }

  /// The call is no longer in flight (idempotent): before its completion runs, so that whoever
  /// the completion wakes sees the count without it.
  void release() {
    if (count_) {
      count_->fetch_sub(1, std::memory_order_relaxed);
      count_ = nullptr;
      if (keep_)
        keep_.reset();
    }
  }
  bool held() const { return count_ != nullptr; }

private:
  std::shared_ptr<count> keep_; ///< only for a posted call
  count* count_ = nullptr;
};

} // namespace gather::downstream_loop
