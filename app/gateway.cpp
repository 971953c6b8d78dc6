#include "gather/gateway.hpp"

#include <stdexcept>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>

#include "gather/cluster.hpp"
#include "gather/downstream_client.hpp"
#include "gather/front/http_server.hpp"
#include "gather/front/request_dispatch.hpp"
#include "gather/io_loops.hpp"
#include "gather/inflight_registry.hpp"
#include "gather/metrics.hpp"
#include "gather/section_cache.hpp"
#include "gather/messages.hpp"

namespace gather {

namespace {

caf::actor_system_config& actor_config(caf::actor_system_config& cfg, const config& gateway_cfg) {
  register_message_types(cfg);
  // CAF's default work-stealing scheduler, once a worker's queue is empty, spins 100 polls, then
  // polls 500 times with a 50 us sleep in between, then waits on a condition variable. A gateway's
  // actors mostly wait on the network, so workers live in that middle phase: thousands of wake-ups a
  // second for nothing. Skipping it (moderate-poll-attempts 0) measured best in bench/run.sh: vs the
  // sharing scheduler (one mutex-guarded queue; itself equal to or better than the default), 15-25%
  // less CPU per request and 24-38% more throughput at S0, the lowest CPU and p99 at S1
  // (docs/performance.md). Fixed here, not a config knob.
  cfg.set("scheduler.policy", caf::atom("stealing"));
  cfg.set("work-stealing.moderate-poll-attempts", size_t{0});
  cfg.set("scheduler.max-threads", gateway_cfg.actor_threads);
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

} // namespace

// Members are destroyed bottom-up: the server first (no new requests, in-flight ones answered),
// then the cluster links (their threads hold scoped actors), then the actor system (waits for the
// last workers, whose destructors cancel transfers on the still-running client), then the client,
// and the event loops last: a coordinator that answers late posts into a stopped loop, never a
// destroyed one.
struct gateway::impl {
  config cfg;
  gateway_stats stats;
  metrics counters{cfg};
  inflight_registry inflight;
  io_loops loops{cfg.io_threads};
  downstream_client client{loops};
  caf::actor_system_config actor_cfg;
  caf::actor_system system;
  section_cache cache;
  std::unique_ptr<cluster> nodes;
  request_dispatch dispatch;
  http_server server;

  explicit impl(config c)
    : cfg(std::move(c)),
      system(actor_config(actor_cfg, cfg)),
      cache(system, cache_limits{cfg.cache_max_entries, cfg.cache_max_bytes}),
      nodes(cluster_of(system, cfg)),
      dispatch(cfg, stats, system,
               section_runtime{&client, &stats, &counters, &inflight, &cache, nodes.get(),
                               cfg.max_response_bytes}),
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
  impl_->loops.start();
  return impl_->server.start(address->first, address->second);
}

void gateway::stop() {
  impl_->server.stop();
  impl_->loops.stop();
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
