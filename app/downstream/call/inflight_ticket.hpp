// One call's place in downstream_client::inflight(): raised once when downstream_client's launch
// makes it, lowered once when the call lets it go (its completion is about to run, it was
// cancelled, or its loop's client went away with it), whatever way the call took in between.
// Move-only; the count it holds is shared so that a ticket inside a handler the loop never ran,
// destroyed with the loop after the client, still lowers a live count. Private to app/downstream/.
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
  explicit inflight_ticket(std::shared_ptr<count> of) : count_(std::move(of)) {
    count_->fetch_add(1, std::memory_order_relaxed);
  }
  inflight_ticket(inflight_ticket&& other) noexcept = default;
  inflight_ticket& operator=(inflight_ticket&& other) noexcept {
    if (this != &other) {
      release();
      count_ = std::move(other.count_);
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
      count_.reset();
    }
  }
  bool held() const { return count_ != nullptr; }

private:
  std::shared_ptr<count> count_;
};

} // namespace gather::downstream_loop
