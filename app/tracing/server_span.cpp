#include "gather/tracing/server_span.hpp"

#include <algorithm>
#include <chrono>

#include "gather/tracing/span_exporter.hpp"
#include "gather/values/wall_clock.hpp"

namespace gather {

namespace {

/// The method as OpenTelemetry's HTTP conventions name it: a known method as sent, anything else
/// "_OTHER" (a refused request's method may be any bytes).
std::string method_name(std::string_view method) {
  static constexpr std::string_view known[] = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                               "CONNECT", "OPTIONS", "TRACE", "PATCH"};
  return std::find(std::begin(known), std::end(known), method) != std::end(known)
           ? std::string{method}
           : std::string{"_OTHER"};
}

} // namespace

bool degraded(int status, const std::vector<section_outcome>& outcomes) {
  // A page with sections: a 200, or a write route's 201 or 202.
  return (status == 200 || status == 201 || status == 202) && std::any_of(outcomes.begin(), outcomes.end(), [](const section_outcome& o) {
           return o.status != section_status::ok;
         });
}

void finish_server_span(span_exporter* exporter, const trace_context& trace, std::string_view method,
                        const std::string& route, int status, bool degraded) {
  if (!exporter || !exporter->exporting() || !trace.sampled)
    return;
  span_record r;
  r.trace_id = trace.trace_id;
  r.span_id = trace.span_id;
  r.parent_id = trace.parent_id;
  r.has_parent = trace.has_parent;
  r.name = route;
  r.kind = span_kind::server;
  r.start_unix_ns = trace.start_unix_ns;
  r.end_unix_ns = unix_nanos();
  r.attributes = {span_attribute::of_text("http.request.method", method_name(method)),
                  span_attribute::of_text("http.route", route),
                  span_attribute::of_integer("http.response.status_code", status),
                  span_attribute::of_bool("gather.degraded", degraded)};
  if (status >= 500) {
    r.status = span_status::error;
    r.status_message = "HTTP " + std::to_string(status);
  }
  exporter->record(std::move(r));
}

} // namespace gather
