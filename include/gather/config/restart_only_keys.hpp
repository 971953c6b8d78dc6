// The top-level keys a reload cannot change (docs/operations.md, "Reloading the configuration"):
// `listen`, `io_threads`, `tls`, `cluster`, `tracing` and the downstream pools' bounds
// (`downstream_idle_timeout_ms`, `downstream_drain_quiet_ms`, `downstream_alpn_memory_ms`, `downstream_max_idle_connections`) are bound into the running process (the
// listening socket and its TLS context, the event-loop threads, the middleman's links to nodes, the
// downstream client). A reloaded
// config keeps the running values of these keys; every other key applies to the requests that
// begin after the reload.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gather/config/config.hpp"

namespace gather {

/// One restart-only key whose value in a reloaded file differs from the value in force.
struct restart_only_change {
  std::string key;     ///< "listen", "io_threads", "tls", "cluster", "tracing", "downstream_..._ms"
  nlohmann::json running; ///< the value in force (null: the key is absent)
  nlohmann::json file;    ///< the value the reloaded file asks for
};

/// The restart-only keys whose values differ between `running` and `next`, in a fixed order.
std::vector<restart_only_change> restart_only_changes(const config& running, const config& next);

/// Copies the restart-only keys' values from `running` into `next`.
void keep_restart_only(const config& running, config& next);

} // namespace gather
