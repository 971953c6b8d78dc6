// What the operations endpoints say of the upstreams (docs/upstreams.md, "Watching an upstream"):
// the five metric families of /metrics and the JSON of /debug/upstreams, read from the tables of
// the generation in force.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "gather/downstream/upstream/upstream_registry.hpp"

namespace gather {

/// gather_upstream_endpoints, gather_upstream_calls_total, gather_upstream_ejections_total,
/// gather_upstream_lookups_total, gather_upstream_health_checks_total (Prometheus text).
std::string upstream_metrics(const upstream_directory& upstreams);

/// {"upstreams": {NAME: {"balance", "panic", "last_lookup": {...}, "endpoints": [...]}}}.
nlohmann::json upstream_report(const upstream_directory& upstreams);

} // namespace gather
