// The gateway's side of the cluster (docs/cluster.md): which worker nodes are up, and where the next
// section runs.
//
// Each configured node has a link thread that connects with the CAF middleman (remote_actor blocks,
// so it never runs inside an actor), checks the protocol version, monitors the node and, when it
// goes down, reconnects with capped exponential backoff. Workers ask place() for a node per section.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "gather/config/config.hpp"

namespace gather {

/// Gateways and nodes exchange section_work and section_outcome; both must read them alike.
constexpr std::int32_t cluster_protocol_version = 2; ///< 2: hedges, not_made, deadline_header

/// Reconnect backoff of a link to a node that is down: doubles from the first to the cap.
constexpr millis node_reconnect_first{100};
constexpr millis node_reconnect_cap{2000};
/// How long a node that accepted the connection has to answer the version check.
constexpr millis node_hello_timeout{2000};

struct node_view {
  std::string address;
  bool up = false;
  std::int64_t inflight = 0; ///< sections running on it now
  std::uint64_t work = 0;    ///< sections sent to it since start
};

class cluster {
public:
  /// A place to run a section: a node (its index and actor), or this process (nullopt node).
  struct placement {
    std::optional<std::size_t> node;
    caf::actor actor;
  };

  cluster(caf::actor_system& system, cluster_config cfg);
  ~cluster(); ///< stops and joins the link threads
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;

  /// The up node with the fewest sections in flight, or this process when `local` and it has no
  /// more in flight than that node, or when no node is up.
  placement place();
  /// Bookkeeping around a section sent to a node.
  void started(std::size_t node);
  void ended(std::size_t node);
  /// A worker saw the node's actor go down: stop placing work there before the link notices too.
  void lost(std::size_t node);
  /// Bookkeeping for sections run here (they compete with the nodes when `local` is true).
  void local_started();
  void local_ended();

  std::vector<node_view> nodes() const;
  const std::string& address(std::size_t node) const;

private:
  struct node_slot;
  void link(std::size_t i);
  std::string handshake(const caf::actor& node);

  caf::actor_system& system_;
  cluster_config cfg_;
  std::vector<std::unique_ptr<node_slot>> slots_;
  std::atomic<std::int64_t> local_inflight_{0};
  std::atomic<std::uint64_t> local_work_{0};
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::vector<std::thread> links_;
};

} // namespace gather
