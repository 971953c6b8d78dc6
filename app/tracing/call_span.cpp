#include "gather/tracing/call_span.hpp"

#include <algorithm>
#include <chrono>

#include "gather/tracing/span_exporter.hpp"
#include "gather/tracing/traceparent.hpp"

namespace gather {

namespace {

constexpr std::string_view traceparent_prefix = "traceparent: ";

std::int64_t unix_nanos_now() {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count();
}

} // namespace

call_span call_span::begin(span_exporter* exporter, std::vector<std::string>& headers,
                           const std::string& name, std::int32_t attempt) {
  call_span span;
  auto line = std::find_if(headers.begin(), headers.end(), [](const std::string& h) {
    return h.compare(0, traceparent_prefix.size(), traceparent_prefix) == 0;
  });
  if (line == headers.end())
    return span;
  const auto request = parse_traceparent(std::string_view{*line}.substr(traceparent_prefix.size()));
  if (!request)
    return span;
  auto& r = span.record_;
  r.trace_id = request->trace_id;
  r.parent_id = request->parent_id; // the request's SERVER span
  r.has_parent = true;
  r.span_id = new_span_id();
  r.kind = span_kind::client;
  r.start_unix_ns = unix_nanos_now();
  // In place when the value is a version-00 one (ours always are): the line keeps its buffer.
  if (line->size() == traceparent_prefix.size() + traceparent_size)
    write_traceparent(line->data() + traceparent_prefix.size(), r.trace_id, r.span_id, request->sampled);
  else
    line->replace(traceparent_prefix.size(), std::string::npos,
                  format_traceparent(r.trace_id, r.span_id, request->sampled));
  span.exporter_ = request->sampled && exporter && exporter->exporting() ? exporter : nullptr;
  if (span.exporter_)
    r.name = name; // only a recorded span needs its name
  span.attempt_ = attempt;
  span.started_ = true;
  return span;
}

void call_span::finish(section_status status, std::int32_t http_status) {
  finish_as(to_string(status), http_status, status != section_status::ok);
}

void call_span::finish_as(const char* status, std::int32_t http_status, bool failed) {
  if (!started_)
    return;
  started_ = false;
  if (!exporter_)
    return;
  auto& r = record_;
  r.end_unix_ns = unix_nanos_now();
  r.attributes.reserve(4);
  r.attributes.push_back(span_attribute::of_text("gather.section", r.name));
  r.attributes.push_back(span_attribute::of_text("gather.status", status));
  r.attributes.push_back(span_attribute::of_integer("gather.attempt", attempt_));
  if (http_status != 0)
    r.attributes.push_back(span_attribute::of_integer("http.response.status_code", http_status));
  if (failed) {
    r.status = span_status::error;
    r.status_message = status;
  }
  exporter_->record(std::move(r));
}

} // namespace gather
