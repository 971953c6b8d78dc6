// The SERVER span of one inbound request: opened when the front admits it (its trace context,
// made by start_trace, carries the ids and the start), recorded here where the request is answered
// (the coordinator, the batch coordinator, or the front when it answers or refuses itself).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gather/values/section_outcome.hpp"
#include "gather/values/trace_context.hpp"

namespace gather {

class span_exporter;

/// Records the request's SERVER span when `exporter` is set and the trace is sampled. Name: the
/// route path; attributes http.request.method, http.route, http.response.status_code and
/// gather.degraded; status error for a 5xx.
void finish_server_span(span_exporter* exporter, const trace_context& trace, std::string_view method,
                        const std::string& route, int status, bool degraded);

/// gather.degraded: a 200 served without some section's (or batch call's) live data.
bool degraded(int status, const std::vector<section_outcome>& outcomes);

} // namespace gather
