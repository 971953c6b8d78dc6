#include "gather/downstream/answer/retry_rule.hpp"

#include <cmath>

namespace gather {

retry_decision decide_retry(bool retryable, int attempts_made, const retry_policy& policy,
                            millis timeout, steady_time deadline, steady_time now) {
  if (!retryable || attempts_made >= policy.attempts)
    return {retry_decision::kind::give_up};
  // Rounded once, from the exact product: B, B·M, B·M², ...
  const millis backoff{std::llround(static_cast<double>(policy.backoff.count()) *
                                    std::pow(policy.multiplier, attempts_made - 1))};
  if (now + backoff + timeout > deadline)
    return {retry_decision::kind::too_late};
  return {retry_decision::kind::retry, backoff};
}

} // namespace gather
