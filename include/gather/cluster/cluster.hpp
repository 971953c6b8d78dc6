// The gateway's side of the cluster (docs/cluster.md): which worker nodes are up, and where the next
// section runs.
//
// Each configured node has a link: an actor that dials the node on an event loop (no thread waits
// for a connect: cluster_transport.hpp), hands the connection to the CAF middleman (plain or mutual
// TLS), checks the protocol version, monitors the node and, when it goes down or cannot be
// reached, tries again with capped exponential backoff. Workers ask place() for a node per section.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "gather/config/config.hpp"

namespace gather {

/// Gateways and nodes exchange section_work and section_outcome; both must read them alike.
/// 2: hedges, not_made, deadline_header; 3: gRPC work (its path, encoded message and
/// max_messages) and its answer's messages, a gRPC call's code reported per call; 4: a write's
/// method, body and flags (which 3 gained without a new number), and the calls' header lines as
/// one block instead of a list of lines
constexpr std::int32_t cluster_protocol_version = 4;

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

  /// The links dial from `loop`. With `cfg.tls` the actor system must have enable_cluster_tls.
  cluster(caf::actor_system& system, cluster_config cfg, boost::asio::io_context& loop);
  /// A cluster without nodes (a gateway without `cluster`, a node): place() always answers "this
  /// process"; nothing is dialed.
  explicit cluster(caf::actor_system& system);
  ~cluster(); ///< stops the links (their dials in flight are dropped)
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

  /// False for a cluster without nodes: its workers need not ask place().
  bool has_nodes() const { return !slots_.empty(); }
  std::vector<node_view> nodes() const;
  const std::string& address(std::size_t node) const;

  struct node_slot; ///< a node's address, whether it is up, its actor and counts
  const cluster_config& cfg() const { return cfg_; }
  node_slot& slot(std::size_t node) { return *slots_[node]; }
  boost::asio::io_context& loop() { return *loop_; }

private:
  caf::actor_system& system_;
  cluster_config cfg_;
  boost::asio::io_context* loop_ = nullptr; ///< null without nodes
  std::vector<std::unique_ptr<node_slot>> slots_;
  std::atomic<std::int64_t> local_inflight_{0};
  std::atomic<std::uint64_t> local_work_{0};
  std::vector<caf::actor> links_;
};

} // namespace gather
