#include "gather/gateway.hpp"

#include <stdexcept>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>

#include "gather/cluster/cluster.hpp"
#include "gather/downstream/downstream_client.hpp"
#include "gather/front/http_server.hpp"
#include "gather/front/request_dispatch.hpp"
#include "gather/resilience/section_guards.hpp"
#include "gather/runtime/io_loops.hpp"
#include "gather/runtime/loop_scheduler.hpp"
#include "gather/ops/inflight_registry.hpp"
#include "gather/ops/metrics.hpp"
#include "gather/actors/section_cache.hpp"
#include "gather/actors/messages.hpp"
#include "gather/tracing/span_exporter.hpp"

namespace gather {

namespace {

caf::actor_system_config& actor_config(caf::actor_system_config& cfg, const config& gateway_cfg,
                                       io_loops& loops) {
  register_message_types(cfg);
  // The actors run on the event loops (loop_scheduler.hpp says why): no CAF worker threads.
  loop_scheduler::install(cfg, loops);
  if (gateway_cfg.cluster) {
    cfg.load<caf::io::middleman>();
    enable_failure_detection(cfg);
  }
  return cfg;
}

std::unique_ptr<cluster> cluster_of(caf::actor_system& system, const config& cfg) {
  if (!cfg.cluster || cfg.cluster->nodes.empty())
    return nullptr;
  return std::make_unique<cluster>(system, *cfg.cluster);
}

/// Exports from the first loop: one export in flight at a time needs no more.
std::unique_ptr<span_exporter> exporter_of(const config& cfg, downstream_client& client,
                                           io_loops& loops) {
  if (!cfg.tracing)
    return nullptr;
  return std::make_unique<span_exporter>(*cfg.tracing, client, loops.loop(0), cfg.max_response_bytes);
}

} // namespace

/// Stops the loops when destroyed: placed between the client and the actor system, so the loops
/// run until the last actor is gone (actors run on them) and stop before the client is torn down.
struct loops_stopper {
  io_loops& loops;
  ~loops_stopper() { loops.stop(); }
};

/// The loops start before the actor system is made: CAF starts its utility actors at once.
io_loops& started(io_loops& loops) {
  loops.start();
  return loops;
}

// Members are destroyed bottom-up: the server first (no new requests, in-flight ones answered),
// then the cluster links (their threads hold scoped actors), then the actor system (waits for the
// last workers, whose destructors cancel transfers on the still-running loops), then the loops
// stop, then the span exporter (its timer and export belong to a loop), then the client goes.
struct gateway::impl {
  config cfg;
  gateway_stats stats;
  metrics counters{cfg};
  section_guards guards{cfg};
  inflight_registry inflight;
  io_loops loops{cfg.io_threads};
  downstream_client client{loops};
  std::unique_ptr<span_exporter> spans; ///< null without tracing; outlives the actors that record
  loops_stopper stopper;
  caf::actor_system_config actor_cfg;
  caf::actor_system system;
  section_cache cache;
  std::unique_ptr<cluster> nodes;
  request_dispatch dispatch;
  http_server server;

  explicit impl(config c)
    : cfg(std::move(c)),
      spans(exporter_of(cfg, client, loops)),
      stopper{started(loops)},
      system(actor_config(actor_cfg, cfg, loops)),
      cache(system, cache_limits{cfg.cache_max_entries, cfg.cache_max_bytes}),
      nodes(cluster_of(system, cfg)),
      dispatch(cfg, stats, system,
               section_runtime{&client, &stats, &counters, &inflight, &cache, nodes.get(),
                               cfg.max_response_bytes, &guards, &cfg.deadline_header, &loops,
                               spans.get()}),
      server(cfg, stats, loops, dispatch) {
  }
};

gateway::gateway(config cfg) : impl_(std::make_unique<impl>(std::move(cfg))) {
}

gateway::~gateway() {
  stop();
}

int gateway::start(const std::string& listen) {
  auto address = split_host_port(listen.empty() ? impl_->cfg.listen : listen);
  if (!address)
    throw std::runtime_error("invalid listen address: " + listen);
  return impl_->server.start(address->first, address->second);
}

void gateway::stop() {
  impl_->server.stop();
}

const config& gateway::cfg() const {
  return impl_->cfg;
}

const gateway_stats& gateway::stats() const {
  return impl_->stats;
}

std::size_t gateway::downstream_inflight() const {
  return impl_->client.inflight();
}

} // namespace gather
