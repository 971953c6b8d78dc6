#include "gather/resilience/circuit_breaker.hpp"

namespace gather {

namespace {

std::int64_t ns_of(steady_time t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

} // namespace

circuit_breaker::circuit_breaker(const circuit_policy& policy)
  : policy_(policy), window_(policy.window) {
}

circuit_breaker::admission circuit_breaker::admit(steady_time now) {
  auto s = state_.load(std::memory_order_acquire);
  if (s == state::closed)
    return admission::call;
  if (s == state::half_open)
    return admission::reject;
  const auto open_for = std::chrono::duration_cast<std::chrono::nanoseconds>(policy_.open).count();
  if (ns_of(now) - opened_at_ns_.load(std::memory_order_relaxed) < open_for)
    return admission::reject;
  // One request wins the race to be the probe; the others stay rejected while it runs.
  return state_.compare_exchange_strong(s, state::half_open) ? admission::probe : admission::reject;
}

bool circuit_breaker::record(bool failed, steady_time now) {
  if (state_.load(std::memory_order_relaxed) != state::closed)
    return false; // a call admitted before the circuit opened: the window is no longer counting
  window_.add(now, 1, failed ? 1 : 0);
  if (!failed)
    return false;
  const auto [calls, failures] = window_.totals(now);
  if (calls < policy_.min_calls ||
      static_cast<double>(failures) < policy_.failure_ratio * static_cast<double>(calls))
    return false;
  opened_at_ns_.store(ns_of(now), std::memory_order_relaxed);
  auto closed = state::closed;
  return state_.compare_exchange_strong(closed, state::open);
}

circuit_breaker::state circuit_breaker::probe_ended(bool ok, steady_time now) {
  if (ok) {
    window_.clear();
    state_.store(state::closed, std::memory_order_release);
    return state::closed;
  }
  opened_at_ns_.store(ns_of(now), std::memory_order_relaxed);
  state_.store(state::open, std::memory_order_release);
  return state::open;
}

const char* to_string(circuit_breaker::state s) {
  switch (s) {
    case circuit_breaker::state::closed: return "closed";
    case circuit_breaker::state::open: return "open";
    case circuit_breaker::state::half_open: return "half_open";
  }
  return "closed";
}

} // namespace gather
