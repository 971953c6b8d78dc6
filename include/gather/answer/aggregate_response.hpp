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

/// The data text section `i` shows in the answer: its own (ok, or a stale cache entry) or its
/// fallback, read from `data` (the texts of the sections already resolved) for `fallback_from`.
/// Sets the outcome's `source` to `fallback` when the fallback shows.
std::string section_data_text(const route_config& route, std::size_t i, section_outcome& outcome,
                              const std::vector<std::string>& data);

/// `"degraded":BOOL,"warnings":[...]` (route order), as the answer and the last streamed line have it.
std::string degraded_and_warnings(const route_config& route, const std::vector<section_outcome>& outcomes);

/// The status and code a failed required section turns the request into.
http_reply required_section_failure(const section_outcome& outcome, const std::string& section,
                                    const std::string& request_id);

} // namespace gather
