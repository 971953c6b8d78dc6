// The section worker's guard (docs/resilience.md): the route section's bulkhead, circuit and the
// host's retry budget, asked before each attempt and each extra call. Each check is an atomic or
// two on the route section's shared guard (section_guards.hpp); none sends a message. A call the
// guard does not let through is never made: the section ends here (`rejected`, or the last
// attempt's failure for a retry).
#include <caf/all.hpp>

#include "gather/actors/serving_config.hpp"
#include "gather/resilience/section_guards.hpp"
#include "section_worker_steps.hpp"

namespace gather::worker_steps {

namespace {

void circuit_moved(worker_ptr self, circuit_breaker::state to) {
  auto& st = self->state;
  st.serving->counters.circuit_moved(st.call->route, st.call->index, to);
}

/// A call that is not made: the section ends at once. The first attempt ends `rejected` (its
/// fallback shows); a later one ends with what the section has, the last attempt's failure.
void not_made(worker_ptr self, not_made_reason why) {
  auto& st = self->state;
  st.not_made = why;
  if (st.runner.calls() > 0) { // a retry: the section ends with the last attempt's result
    auto outcome = std::move(st.last_failure);
    outcome.detail += std::string{"; no retry: "} + to_string(why);
    return finish(self, std::move(outcome));
  }
  if (st.call->guard)
    st.serving->counters.rejected(st.call->route, st.call->index,
                                  why == not_made_reason::circuit_open ? reject_reason::circuit_open
                                                                       : reject_reason::max_concurrent);
  section_outcome outcome;
  outcome.status = section_status::rejected;
  outcome.detail = std::string{"rejected: "} + to_string(why);
  finish(self, std::move(outcome));
}

} // namespace

/// The bulkhead and the circuit admit an attempt (first or retry) with its bulkhead slot (empty
/// without a guard), or the section ends here.
std::optional<concurrency_limit::slot> admit(worker_ptr self) {
  auto& st = self->state;
  auto* guard = st.call->guard;
  if (!guard)
    return concurrency_limit::slot{};
  auto slot = guard->bulkhead.try_take();
  if (!slot) {
    not_made(self, not_made_reason::max_concurrent);
    return std::nullopt;
  }
  if (!guard->circuit || st.probe)
    return slot;
  switch (guard->circuit->admit(clock::now())) {
    case circuit_breaker::admission::call:
      return slot;
    case circuit_breaker::admission::probe:
      st.probe = circuit_probe{*guard->circuit, st.serving->counters, st.call->route, st.call->index};
      circuit_moved(self, circuit_breaker::state::half_open);
      return slot;
    case circuit_breaker::admission::reject:
      break;
  }
  slot.reset();
  not_made(self, not_made_reason::circuit_open);
  return std::nullopt;
}

/// An attempt admitted by the circuit ended: it counts in the window, or it was the probe.
void circuit_record(worker_ptr self, bool failed) {
  auto& st = self->state;
  auto* guard = st.call->guard;
  if (!guard || !guard->circuit)
    return;
  if (st.probe) {
    st.probe.end(!failed);
  } else if (guard->circuit->record(failed, clock::now())) {
    circuit_moved(self, circuit_breaker::state::open);
  }
}

/// A hedge asks the host's budget; false (counted) when it has no room. (A retry asks it through
/// the attempt runner's after_failure, and retry_or_finish counts a refusal.)
bool budget_allows_extra(worker_ptr self) {
  auto& st = self->state;
  if (!st.call->guard || st.call->guard->budget.try_extra(clock::now()))
    return true;
  st.not_made = not_made_reason::retry_budget;
  st.serving->counters.budget_denied(st.call->route, st.call->index);
  return false;
}

} // namespace gather::worker_steps
