// The built-in operations endpoints: /healthz, /readyz, /metrics, /debug/actors, /debug/upstreams,
// /dashboard (docs/operations.md).
#pragma once

#include <string>

#include <caf/fwd.hpp>

#include "gather/config/config.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/downstream/upstream/upstream_registry.hpp"
#include "gather/values/gateway_stats.hpp"
#include "gather/values/http_reply.hpp"
#include "gather/ops/inflight_registry.hpp"
#include "gather/ops/metrics.hpp"

namespace gather {

class cluster;
class section_cache;
class span_exporter;

/// What the operations endpoints read; owned by the gateway.
struct ops_sources {
  const config& cfg;
  const gateway_stats& stats;
  caf::actor_system& system;
  const downstream_client& client;
  const metrics& counters;
  const inflight_registry& inflight;
  const section_cache& cache;
  const cluster& nodes;       ///< without a cluster: one of no nodes
  const span_exporter& spans; ///< without tracing: one that exports nothing
  const upstream_directory& upstreams; ///< the generation's (docs/upstreams.md)
};

/// Which listener a request came in on: `listen`, or the operations listener (`admin.listen`).
enum class listener_role { main, admin };

/// True for the operations paths this listener serves before any route: all four on the admin
/// listener and on `listen` without `admin`; with `admin`, only /healthz and /readyz on `listen` (the others
/// are ordinary paths there, which a route may take).
bool is_ops_path(const std::string& path, const config& cfg, listener_role role);

/// Answers an operations path (GET only; anything else is 405).
http_reply serve_ops(const std::string& method, const std::string& path, const std::string& request_id,
                     const ops_sources& sources);

} // namespace gather
