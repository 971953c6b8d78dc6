// A circuit breaker per route section (docs/resilience.md, `circuit`).
//
//   closed --(>= min_calls ended in window_ms, failure share >= failure_ratio)--> open
//   open --(open_ms passed; the next request's section is the probe)--> half_open
//   half_open --(probe ok: window cleared)--> closed
//   half_open --(probe failed or abandoned)--> open (open_ms again)
//
// Shared by every request on every loop, so it is atomics only: while closed, admitting a call is
// one relaxed load and an ended call one bucket add (no lock, no message).
#pragma once

#include <atomic>
#include <cstdint>

#include "gather/config/config.hpp"
#include "gather/resilience/rolling_window.hpp"

namespace gather {

class circuit_breaker {
public:
  enum class state : std::uint8_t { closed, open, half_open };
  enum class admission : std::uint8_t { call, probe, reject };

  explicit circuit_breaker(const circuit_policy& policy);

  /// May a section start its calls? `probe`: the circuit just went half-open and this section is
  /// its one probe (it must end with probe_ended()).
  admission admit(steady_time now);
  /// An attempt that was admitted as `call` ended (ok or not); true when this opened the circuit.
  bool record(bool failed, steady_time now);
  /// The probe ended: ok closes the circuit, anything else (abandoned included) opens it again.
  state probe_ended(bool ok, steady_time now);
  state current() const { return state_.load(std::memory_order_acquire); }

private:
  const circuit_policy policy_;
  rolling_window window_;
  std::atomic<state> state_{state::closed};
  std::atomic<std::int64_t> opened_at_ns_{0};
};

const char* to_string(circuit_breaker::state s);

} // namespace gather
