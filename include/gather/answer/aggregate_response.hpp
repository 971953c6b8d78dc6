// The answer of an aggregate route, once every section has an outcome (docs/api.md).
#pragma once

#include <string>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/values/http_reply.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather {

/// A required section that did not end ok fails the request; the first such section in route order
/// names the error. Otherwise 200 with data (live data, or fallbacks resolved in the route's
/// resolve_order), per-section status, `degraded` and `warnings`. Sets each outcome's `source`.
http_reply build_aggregate_reply(const route_config& route, std::vector<section_outcome>& outcomes,
                                 const std::string& request_id);

/// The status and code a failed required section turns the request into.
http_reply required_section_failure(const section_outcome& outcome, const std::string& section,
                                    const std::string& request_id);

} // namespace gather
