// The retry budget of one downstream host:port (docs/resilience.md, `retry_budget`): over the last 10 s,
// retries and hedges started may be at most ratio × first attempts started + min_per_s × 10.
// Shared by every section and batch route that calls that host:port, which is what keeps retries
// and hedges from multiplying the load on a downstream that is already failing.
#pragma once

#include "gather/config/config.hpp"
#include "gather/resilience/rolling_window.hpp"

namespace gather {

class retry_budget {
public:
  static constexpr std::chrono::seconds span{10};

  explicit retry_budget(const retry_budget_policy& policy) : policy_(policy), window_(span) {}

  void first_attempt(steady_time now) { window_.add(now, 1, 0); }
  /// A retry or a hedge wants to start: true (and counted) when the budget has room for it.
  bool try_extra(steady_time now);

private:
  const retry_budget_policy policy_;
  rolling_window window_; ///< first: first attempts, second: retries and hedges
};

} // namespace gather
