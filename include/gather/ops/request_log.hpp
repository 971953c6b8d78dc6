// One JSON line per request on stderr (docs/operations.md#logs): what responses never carry goes here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gather/downstream/answer/batch_plan.hpp"
#include "gather/config/config.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather {

/// An aggregate request: id, route, status, total ms, and per section status, source, attempts,
/// ms, the last downstream HTTP status and the private failure detail.
void log_request(const std::string& request_id, const std::string& trace_id, const std::string& route,
                 int status, std::int64_t ms, const std::vector<section_config>& sections,
                 const std::vector<section_outcome>& outcomes, const char* proto,
                 std::string_view client = {});

/// A batch request: id, route, status, total ms, items, distinct calls, attempts started, calls
/// never started, rows per status, and the calls that did not end ok summarised per status and last downstream HTTP status:
/// how many calls, and the first one's item and private detail.
void log_batch_request(const std::string& request_id, const std::string& trace_id,
                       const std::string& route, int status, std::int64_t ms, const batch_plan& plan,
                       const std::vector<section_outcome>& calls, const char* proto,
                       std::string_view client = {});

/// A request answered without sections (errors, refusals, a client that left). Every line carries
/// the request's `trace_id` when it has one, `proto` (http/1.0, http/1.1, h2) and `client` (the
/// client's address: docs/gateway.md, "Behind a load balancer") when known.
void log_request(const std::string& request_id, const std::string& route, int status,
                 std::int64_t ms, const std::string& detail = {}, const std::string& trace_id = {},
                 const char* proto = nullptr, std::string_view client = {});

/// Writes one line to stderr atomically with respect to other log lines: at once from any thread
/// but an event loop's; on a loop's thread at the end of the loop's turn, together with the other
/// lines of that turn (one write() for all), or when the thread ends. No line is ever dropped.
void write_log_line(std::string json_line);

} // namespace gather
