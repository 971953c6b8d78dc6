// `gather node`: a cluster worker node (docs/cluster.md).
//
// It publishes one node_service actor with the CAF middleman (plain, or mutual TLS). A gateway
// sends it `section_work` (URL, headers, timeouts, retry policy, projection: everything resolved,
// no route config needed); the service spawns a section worker per work item, exactly the worker
// the gateway runs locally, with this process's own downstream client and the node's origin
// allowlist, and the worker answers the gateway directly.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <caf/fwd.hpp>

#include "gather/cluster/origin_allowlist.hpp"
#include "gather/config/config.hpp"

namespace gather {

struct process_services;
struct serving_config;

/// The node's published actor: answers `hello` with the protocol version and runs `work` with
/// the node's services and its generation (one of no routes: the work carries what it needs).
caf::behavior node_service(caf::event_based_actor* self, const process_services& services,
                           std::shared_ptr<const serving_config> serving);

struct node_options {
  origin_allowlist origins;               ///< what its workers may call
  std::optional<cluster_tls_config> tls;  ///< mutual TLS on its listener; none: plain BASP
};

class worker_node {
public:
  explicit worker_node(node_options options);
  ~worker_node(); ///< unpublishes; work in flight ends by its own timeouts or its gateway's exit
  /// Publishes on host:port (0 = pick one); returns the port. Throws std::runtime_error.
  int start(const std::string& host, int port);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace gather
