// One finished span as the exporter queues it: ids, name, kind, times, attributes and status, in
// the terms of the OpenTelemetry trace data model (what OTLP carries).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gather/values/trace_context.hpp"

namespace gather {

/// OTLP's Span.SpanKind values.
enum class span_kind : std::uint8_t { server = 2, client = 3 };

/// OTLP's Status.StatusCode values: unset (the default) or error. Gather never sets ok.
enum class span_status : std::uint8_t { unset = 0, error = 2 };

struct span_attribute {
  enum class type : std::uint8_t { text, integer, boolean };
  std::string key;
  type what = type::text;
  std::string text;
  std::int64_t integer = 0;
  bool boolean = false;

  static span_attribute of_text(std::string key, std::string value) {
    return {std::move(key), type::text, std::move(value), 0, false};
  }
  static span_attribute of_integer(std::string key, std::int64_t value) {
    return {std::move(key), type::integer, {}, value, false};
  }
  static span_attribute of_bool(std::string key, bool value) {
    return {std::move(key), type::boolean, {}, 0, value};
  }
};

struct span_record {
  trace_id_hex trace_id{};
  span_id_hex span_id{};
  span_id_hex parent_id{};
  bool has_parent = false; ///< false: a root span (no parentSpanId)
  std::string name;
  span_kind kind = span_kind::server;
  std::int64_t start_unix_ns = 0;
  std::int64_t end_unix_ns = 0;
  std::vector<span_attribute> attributes;
  span_status status = span_status::unset;
  std::string status_message; ///< with status error only
};

} // namespace gather
