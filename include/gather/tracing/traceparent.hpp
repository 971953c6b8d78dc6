// The W3C Trace Context `traceparent` header (https://www.w3.org/TR/trace-context/): parsing what
// a caller sent, formatting what a downstream call carries, and the ids of new traces and spans.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gather/values/inbound_request.hpp"
#include "gather/values/trace_context.hpp"

namespace gather {

/// A traceparent's fields.
struct traceparent {
  trace_id_hex trace_id{};
  span_id_hex parent_id{};
  bool sampled = false; ///< flags & 01
};

/// Parses a traceparent value. Version 00: exactly "00-<32 hex>-<16 hex>-<2 hex>", lower-case hex,
/// trace id and parent id not all zeros. Version ff is invalid. A higher version is read the same
/// way from its first 55 characters, which must be followed by nothing or by '-' (the spec's rule
/// for versions this parser does not know). nullopt when invalid.
std::optional<traceparent> parse_traceparent(std::string_view value);

// format_traceparent(): in gather/values/trace_context.hpp (the downstream stage writes it too).

/// Fresh random ids (never all zeros), from a per-thread generator seeded once per thread: no
/// system call per request.
trace_id_hex new_trace_id();
span_id_hex new_span_id();

/// The sampling decision for a trace this gateway starts: true for a share `ratio` of trace ids
/// (the low 64 bits of the id against ratio * 2^64, like OpenTelemetry's TraceIdRatioBased), so
/// every process that applies the same ratio to the same trace decides alike.
bool sample_new_trace(const trace_id_hex& trace, double ratio);

/// The trace context of a request that `arrived` with `traceparent_value` (empty when absent): a
/// valid value gives the trace id, the parent span and the sampling decision (the caller's flag is
/// honoured, sampled or not); otherwise a new trace, sampled with `ratio` (0 when tracing is off).
/// The request's own span id is always fresh.
trace_context start_trace(std::string_view traceparent_value, steady_time arrived, double ratio);

/// Unix time in nanoseconds of a steady_clock instant (now, minus how long ago it was).
std::int64_t unix_nanos_at(steady_time when);

} // namespace gather
