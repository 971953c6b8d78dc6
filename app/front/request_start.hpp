// What a started request's job is made of: its inbound values and its deadline.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/values/inbound_request.hpp"
#include "gather/values/request_head.hpp"
#include "gather/values/trace_context.hpp"

namespace gather {

/// The request as the actors see it: id, arrival, trace, route captures, query and headers.
inbound_request inbound_of(const request_head& head,
                           std::vector<std::pair<std::string, std::string>> captures,
                           const std::string& request_id, steady_time arrived,
                           const trace_context& trace);

/// `budget` from arrival, or sooner when the request's deadline header (`header_lower`, empty:
/// none) asks for a positive whole number of milliseconds of at most 600000 (resilience.md).
steady_time request_deadline(const std::string& header_lower, const inbound_request& in, millis budget);

} // namespace gather
