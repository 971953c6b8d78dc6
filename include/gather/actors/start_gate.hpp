// A decision a request waits for after admission and before its coordinator starts anything: a
// shared rate limit in exact mode asks the shared store (docs/shared.md). The actors define this
// seam and admission implements it, so no actor knows the store.
//
// The coordinator calls `wait` once; `decided` then runs once, on whichever thread decides (the
// store's loop), and the coordinator reads `refusal()` after it: empty, the request starts; else
// the request ends with that reply, counted and logged with its detail. The store answers or
// times out within its timeout_ms, so the wait is bounded.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "gather/values/http_reply.hpp"

namespace gather {

struct gate_refusal {
  http_reply reply;   ///< a 429 with Retry-After
  std::string detail; ///< the log line's
  bool rate_limited = false; ///< counted as the route's rate-limit refusal
};

class start_gate {
public:
  virtual ~start_gate() = default;
  virtual void wait(std::function<void()> decided) = 0;
  /// After `decided` ran: the refusal, if the request may not start.
  virtual const std::optional<gate_refusal>& refusal() const = 0;
};

} // namespace gather
