// A request's place in a distributed trace (W3C Trace Context): the ids every stage passes along.
// Parsing and formatting the `traceparent` header, and making ids, live in gather/tracing/.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gather {

using trace_id_hex = std::array<char, 32>; ///< 16 bytes as lower-case hex, never all zeros
using span_id_hex = std::array<char, 16>;  ///< 8 bytes as lower-case hex, never all zeros

struct trace_context {
  trace_id_hex trace_id{};
  span_id_hex span_id{};   ///< this request's own (SERVER) span
  span_id_hex parent_id{}; ///< the caller's span, when the request carried a valid traceparent
  bool has_parent = false;
  bool sampled = false;            ///< spans of this request are recorded (the traceparent's flag)
  std::int64_t start_unix_ns = 0;  ///< when the request arrived, for its SERVER span

  /// False for a default-made context (no trace was started).
  bool started() const { return trace_id[0] != '\0'; }
  std::string trace_id_text() const { return {trace_id.begin(), trace_id.end()}; }
  std::string span_id_text() const { return {span_id.begin(), span_id.end()}; }
};

/// The length of a version-00 traceparent value: "00-" 32 "-" 16 "-" 2.
constexpr std::size_t traceparent_size = 55;

/// Writes the W3C traceparent value "00-<trace id>-<span id>-01" (sampled) or "...-00" into the
/// traceparent_size characters at `out`: always version 00, the only one defined. Parsing is in
/// gather/tracing/traceparent.hpp.
inline void write_traceparent(char* out, const trace_id_hex& trace, const span_id_hex& span,
                              bool sampled) {
  out[0] = '0';
  out[1] = '0';
  out[2] = '-';
  std::copy(trace.begin(), trace.end(), out + 3);
  out[35] = '-';
  std::copy(span.begin(), span.end(), out + 36);
  out[52] = '-';
  out[53] = '0';
  out[54] = sampled ? '1' : '0';
}

/// The same value as a string.
inline std::string format_traceparent(const trace_id_hex& trace, const span_id_hex& span,
                                      bool sampled) {
  std::string out(traceparent_size, '0');
  write_traceparent(out.data(), trace, span, sampled);
  return out;
}

} // namespace gather
