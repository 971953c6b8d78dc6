#include "gather/tracing/call_span.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

#include "gather/tracing/span_exporter.hpp"
#include "gather/tracing/traceparent.hpp"
#include "gather/values/wall_clock.hpp"

namespace gather {

namespace {

constexpr std::string_view traceparent_prefix = "traceparent: ";

} // namespace

call_span call_span::begin(span_exporter* exporter, std::string& header_lines,
                           const std::string& name, std::int32_t attempt,
                           const traceparent* written) {
  call_span span;
  const std::string_view block{header_lines};
  // The traceparent line's start: the name found where a line starts (the block's start, or
  // after a CRLF). Searched for once rather than compared at each line's start (a compare and a
  // CRLF search per line before it: ~240 instructions a call).
  std::size_t line = 0;
  for (;; ++line) {
    line = block.find(traceparent_prefix, line);
    if (line == std::string_view::npos)
      return span;
    if (line == 0 || (line >= 2 && block[line - 2] == '\r' && block[line - 1] == '\n'))
      break;
  }
  const auto value_at = line + traceparent_prefix.size();
  const auto value_end = std::min(block.find("\r\n", value_at), block.size());
  std::optional<traceparent> parsed;
  const traceparent* request = written;
  if (!request) {
    parsed = parse_traceparent(block.substr(value_at, value_end - value_at));
    if (!parsed)
      return span;
    request = &*parsed;
  }
  auto& r = span.record_;
  r.trace_id = request->trace_id;
  r.parent_id = request->parent_id; // the request's SERVER span
  r.has_parent = true;
  r.span_id = new_span_id();
  r.kind = span_kind::client;
  r.start_unix_ns = unix_nanos();
  // In place when the value is a version-00 one (ours always are): the block keeps its buffer.
  if (value_end - value_at == traceparent_size)
    write_traceparent(header_lines.data() + value_at, r.trace_id, r.span_id, request->sampled);
  else
    header_lines.replace(value_at, value_end - value_at,
                         format_traceparent(r.trace_id, r.span_id, request->sampled));
  span.exporter_ = request->sampled && exporter && exporter->exporting() ? exporter : nullptr;
  if (span.exporter_)
    r.name = name; // only a recorded span needs its name
  span.attempt_ = attempt;
  span.started_ = true;
  return span;
}

void call_span::rpc(const std::string& path) {
  if (!exporter_) // only a recorded span needs them
    return;
  const auto slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0)
    return;
  rpc_service_ = path.substr(1, slash - 1);
  rpc_method_ = path.substr(slash + 1);
}

void call_span::finish(section_status status, std::int32_t http_status, std::int32_t grpc_code) {
  finish_as(to_string(status), http_status, grpc_code, status != section_status::ok);
}

void call_span::finish_as(const char* status, std::int32_t http_status, std::int32_t grpc_code,
                          bool failed) {
  if (!started_)
    return;
  started_ = false;
  if (!exporter_)
    return;
  auto& r = record_;
  r.end_unix_ns = unix_nanos();
  r.attributes.reserve(8);
  r.attributes.push_back(span_attribute::of_text("gather.section", r.name));
  r.attributes.push_back(span_attribute::of_text("gather.status", status));
  r.attributes.push_back(span_attribute::of_integer("gather.attempt", attempt_));
  if (http_status != 0)
    r.attributes.push_back(span_attribute::of_integer("http.response.status_code", http_status));
  if (!rpc_service_.empty()) { // OpenTelemetry's RPC semantic conventions
    r.attributes.push_back(span_attribute::of_text("rpc.system", "grpc"));
    r.attributes.push_back(span_attribute::of_text("rpc.service", std::move(rpc_service_)));
    r.attributes.push_back(span_attribute::of_text("rpc.method", std::move(rpc_method_)));
    if (grpc_code >= 0)
      r.attributes.push_back(span_attribute::of_integer("rpc.grpc.status_code", grpc_code));
  }
  if (failed) {
    r.status = span_status::error;
    r.status_message = status;
  }
  exporter_->record(std::move(r));
}

} // namespace gather
