// One request's time with the shared store (docs/shared.md, "When the store fails"): every store
// operation the request makes (a shared limit's decision, a cached section's look and lock, the
// looks while it waits for another gateway's entry, the entry's write) spends from one budget of
// `shared.timeout_ms`, so a hung store delays a request by at most that much however many
// operations it would have made. What is spent is the time during which at least one of the
// request's operations was waiting for an answer (operations in parallel spend it once); the
// pauses between looks are not waits for the store.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>

namespace gather {

class store_budget : public std::enable_shared_from_this<store_budget> {
public:
  using clock = std::chrono::steady_clock;

  explicit store_budget(std::chrono::milliseconds total) : left_(total) {}

  /// An operation under way: while one lives, the budget is being spent.
  class lease {
  public:
    explicit lease(std::shared_ptr<store_budget> budget) : budget_(std::move(budget)) {}
    ~lease() { budget_->end(); }
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;

  private:
    std::shared_ptr<store_budget> budget_;
  };

  /// Starts an operation: how long it may wait (what is left, whole milliseconds) and its lease,
  /// or no lease when less than a millisecond is left (the operation is not made).
  std::pair<std::chrono::milliseconds, std::shared_ptr<lease>> begin(clock::time_point now = clock::now()) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        left_ - (waiting_ > 0 ? now - since_ : clock::duration::zero()));
    if (left.count() < 1)
      return {std::chrono::milliseconds{0}, nullptr};
    if (waiting_++ == 0)
      since_ = now;
    return {left, std::make_shared<lease>(shared_from_this())};
  }

  /// What is left now, whole milliseconds (0 when spent).
  std::chrono::milliseconds left(clock::time_point now = clock::now()) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        left_ - (waiting_ > 0 ? now - since_ : clock::duration::zero()));
    return std::max(std::chrono::milliseconds{0}, left);
  }

private:
  void end() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--waiting_ == 0)
      left_ -= clock::now() - since_;
  }

  mutable std::mutex mutex_;
  clock::duration left_;
  int waiting_ = 0;       ///< operations of the request waiting for an answer now
  clock::time_point since_; ///< when `waiting_` last went from 0 to 1
};

} // namespace gather
