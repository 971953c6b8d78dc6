// What stands between one route's section and its downstream (docs/resilience.md): the bulkhead, the
// circuit breaker, the latency window hedges read, and the retry budget of the host:port it calls.
// One per route section, shared by every request; built once from the config (section_guards).
#pragma once

#include <chrono>
#include <memory>
#include <optional>

#include "gather/config/config.hpp"
#include "gather/resilience/circuit_breaker.hpp"
#include "gather/resilience/concurrency_limit.hpp"
#include "gather/resilience/latency_window.hpp"
#include "gather/resilience/retry_budget.hpp"

namespace gather {

struct section_guard {
  section_guard(const section_config& section, retry_budget& budget);

  std::optional<hedge_policy> hedge;
  concurrency_limit bulkhead;
  std::optional<circuit_breaker> circuit;
  std::optional<latency_window> latencies; ///< hedges at a percentile only
  retry_budget& budget;                     ///< of the section's host:port

  /// How long an attempt waits before its next hedge call; nullopt: no hedge (none configured, or
  /// a percentile hedge before 20 ok calls were seen).
  std::optional<std::chrono::microseconds> hedge_delay() const;
};

} // namespace gather
