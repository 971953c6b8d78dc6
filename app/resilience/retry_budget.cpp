#include "gather/resilience/retry_budget.hpp"

namespace gather {

bool retry_budget::try_extra(steady_time now) {
  const auto [first, extra] = window_.totals(now);
  const double allowed = policy_.ratio * static_cast<double>(first) +
                         policy_.min_per_s * static_cast<double>(span.count());
  if (static_cast<double>(extra + 1) > allowed)
    return false;
  window_.add(now, 0, 1);
  return true;
}

} // namespace gather
