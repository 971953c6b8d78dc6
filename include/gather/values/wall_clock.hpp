// The wall clock as Gather writes it: a log line's "ts" (seconds since the epoch, to the
// microsecond) and a span's times (nanoseconds since the epoch), defined once so that every
// line and span reads alike. Durations are measured on the steady clock, never on this one.
#pragma once

#include <chrono>
#include <cstdint>

namespace gather {

inline std::int64_t unix_nanos() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count();
}

inline std::int64_t unix_micros() {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

/// A log line's "ts".
inline double unix_seconds() { return static_cast<double>(unix_micros()) / 1e6; }

} // namespace gather
