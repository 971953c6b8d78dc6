// The retry rule (docs/api.md#section-statuses), shared by section workers and batch item calls: which failures are
// tried again, after what backoff, and never when the next attempt could not finish by the deadline.
#pragma once

#include "gather/config/config.hpp"
#include "gather/values/inbound_request.hpp"

namespace gather {

struct retry_decision {
  enum class kind {
    retry,    ///< start the next attempt after `backoff`
    give_up,  ///< the failure is not retryable, or no attempts are left
    too_late, ///< it could be retried, but backoff + timeout would pass the deadline
  };
  kind what = kind::give_up;
  millis backoff{0};
};

/// After failed attempt number `attempts_made` (1 = the first try) of a call whose attempts each
/// take at most `timeout`: a `retryable` failure (timeout, connection error, 429, 502, 503, 504) is
/// retried while the policy has attempts left, after backoff B·M^(attempts_made-1), if that backoff
/// plus the whole `timeout` end by `deadline`.
retry_decision decide_retry(bool retryable, int attempts_made, const retry_policy& policy,
                            millis timeout, steady_time deadline, steady_time now);

} // namespace gather
