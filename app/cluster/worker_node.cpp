#include "gather/cluster/worker_node.hpp"

#include <stdexcept>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "gather/cluster/cluster_transport.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/values/gateway_stats.hpp"
#include "gather/actors/messages.hpp"
#include "gather/actors/process_services.hpp"
#include "gather/actors/section_cache.hpp"
#include "gather/actors/section_worker.hpp"
#include "gather/actors/serving_config.hpp"
#include "gather/cluster/cluster.hpp"
#include "gather/ops/inflight_registry.hpp"
#include "gather/tracing/span_exporter.hpp"

namespace gather {

namespace {

caf::actor_system_config& node_config(caf::actor_system_config& cfg, const node_options& options) {
  register_message_types(cfg);
  cfg.load<caf::io::middleman>();
  enable_failure_detection(cfg);
  if (options.tls)
    enable_cluster_tls(cfg, *options.tls);
  return cfg;
}

} // namespace

// Destroyed bottom-up: the actor system waits for the last workers (whose destructors cancel
// transfers on the still-running client), then the client goes.
struct worker_node::impl {
  node_options options;
  gateway_stats stats;
  downstream_client client;
  /// What a node lacks, as objects that do nothing (process_services.hpp): a registry no endpoint
  /// reads, no tracing, and a generation of no routes (the work carries what its calls need).
  inflight_registry inflight;
  span_exporter no_tracing;
  metrics::registry series;
  std::shared_ptr<const serving_config> generation =
    std::make_shared<const serving_config>(config{}, 0, series);
  caf::actor_system_config actor_cfg;
  caf::actor_system system{node_config(actor_cfg, options)};
  /// A cache its calls never ask (they carry no cache key) and a cluster of no nodes of its own.
  section_cache no_cache{system, cache_limits{0, 0}, 1};
  cluster no_nodes{system};
  process_services services{client, stats, inflight, no_cache, no_nodes, no_tracing, options.origins};
  caf::actor service;

  explicit impl(node_options o) : options(std::move(o)) {}

  ~impl() {
    if (service) {
      system.middleman().unpublish(service);
      caf::anon_send_exit(service, caf::exit_reason::user_shutdown);
    }
  }
};

worker_node::worker_node(node_options options) : impl_(std::make_unique<impl>(std::move(options))) {
}

worker_node::~worker_node() = default;

int worker_node::start(const std::string& host, int port) {
  impl_->service =
    impl_->system.spawn(node_service, std::ref(impl_->services), impl_->generation);
  const auto at = static_cast<std::uint16_t>(port);
  auto bound = impl_->options.tls ? publish_tls(impl_->system, impl_->service, at, host)
                                  : impl_->system.middleman().publish(impl_->service, at, host.c_str(), true);
  if (!bound)
    throw std::runtime_error("cannot publish on " + host + ":" + std::to_string(port) + ": " +
                             impl_->system.render(bound.error()));
  return *bound;
}

} // namespace gather
