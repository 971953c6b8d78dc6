// The wait before a lost connection is tried again: `first`, doubling after each failure up to
// `cap`, back to `first` once a connection is up. One definition for every connection Gather
// keeps open by itself (the shared store's, a cluster link's), so they back off alike.
#pragma once

#include <algorithm>
#include <chrono>

namespace gather {

class reconnect_backoff {
public:
  constexpr reconnect_backoff(std::chrono::milliseconds first, std::chrono::milliseconds cap)
      : first_(first), cap_(std::max(first, cap)), next_(first) {}

  /// How long to wait before this attempt; the next one waits twice as long (at most `cap`).
  std::chrono::milliseconds next() {
    const auto wait = next_;
    next_ = std::min(cap_, next_ * 2);
    return wait;
  }

  /// A connection is up: the next loss waits `first` again.
  void reset() { next_ = first_; }

private:
  std::chrono::milliseconds first_, cap_, next_;
};

} // namespace gather
