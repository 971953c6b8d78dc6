#include "gather/gateway.hpp"

#include <chrono>
#include <mutex>
#include <stdexcept>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>
#include <nlohmann/json.hpp>

#include "gather/actors/serving_config.hpp"
#include "gather/admission/gates.hpp"
#include "gather/config/restart_only_keys.hpp"
#include "gather/ops/request_log.hpp"

#include "gather/actors/process_services.hpp"
#include "gather/cluster/cluster.hpp"
#include "gather/cluster/origin_allowlist.hpp"
#include "gather/cluster/cluster_transport.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/downstream/grpc/grpc_reflection.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"
#include "gather/downstream/upstream/upstream_feeds.hpp"
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
#include "gather/shared/shared_store.hpp"
#include "gather/values/wall_clock.hpp"

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
    if (gateway_cfg.cluster->tls)
      enable_cluster_tls(cfg, *gateway_cfg.cluster->tls);
  }
  return cfg;
}

std::unique_ptr<cluster> cluster_of(caf::actor_system& system, const config& cfg, io_loops& loops) {
  if (!cfg.cluster || cfg.cluster->nodes.empty())
    return std::make_unique<cluster>(system); // every section runs here
  return std::make_unique<cluster>(system, *cfg.cluster, loops.loop(0));
}

/// Exports from the first loop: one export in flight at a time needs no more.
std::unique_ptr<span_exporter> exporter_of(const config& cfg, downstream_client& client,
                                           io_loops& loops) {
  if (!cfg.tracing)
    return std::make_unique<span_exporter>(); // records nothing
  return std::make_unique<span_exporter>(*cfg.tracing, client, loops.loop(0), cfg.max_response_bytes);
}

/// A reload's log line: `event` first, then `ts` (as in the request log), then the rest in order.
void log_event(const char* event, nlohmann::ordered_json rest) {
  nlohmann::ordered_json record{{"event", event}, {"ts", unix_seconds()}};
  record.update(rest);
  write_log_line(record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

/// A configuration generation with its routes' gates (gather/admission/gates.hpp).
std::shared_ptr<const serving_config> generation_of(config cfg, std::uint64_t number,
                                                    metrics::registry& series, jwks_registry& keys,
                                                    std::shared_ptr<shared_store> store,
                                                    reflection_registry& reflection,
                                                    upstream_registry& upstreams) {
  // `gather serve` built the descriptors when it checked the file; a config made otherwise (the
  // demo, a test) gets them here.
  if (const auto problems = attach_proto_catalog(cfg); !problems.empty())
    throw std::runtime_error(problems.front());
  // An upstream's TLS files as OpenSSL reads them (gather check only saw that they open).
  if (const auto problems = upstreams.check(cfg); !problems.empty())
    throw std::runtime_error(problems.front());
  auto gates = make_admission_gates(cfg, &keys, store);
  return std::make_shared<const serving_config>(std::move(cfg), number, series, std::move(gates),
                                                &reflection, std::move(store), &upstreams);
}

/// The store of `cfg.shared` (docs/shared.md), null without one. Reads the password file and
/// resolves the host: throws std::runtime_error saying what is wrong.
std::shared_ptr<shared_store> store_of(const config& cfg) {
  return cfg.shared ? std::make_shared<shared_store>(*cfg.shared) : nullptr;
}

std::size_t section_count(const config& cfg) {
  std::size_t sections = 0;
  for (const auto& route : cfg.routes)
    sections += route.sections.size();
  return sections;
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
// stop, then the span exporter (its timer and export belong to a loop), then the client goes; the
// configuration generations and the metric series they point into go last.
struct gateway::impl {
  gateway_stats stats;
  metrics::registry series;
  /// The shared store (`shared`), null without one; made again by a reload that has one.
  std::shared_ptr<shared_store> store;
  /// The JWK sets fetched from URLs, kept across reloads; fetches through `client`, so it is
  /// destroyed after the client (whose transfers end without completions when it goes).
  jwks_registry keys;
  /// The targets' server reflection (docs/grpc.md): what each gave, kept across reloads; asks
  /// through `client`, like `keys`.
  reflection_registry reflection{[](const std::string& line) { write_log_line(line); }};
  /// The upstreams' tables of endpoints (docs/upstreams.md), kept across reloads.
  upstream_registry upstreams{[](const std::string& line) { write_log_line(line); }};
  /// The generation the gateway started on: its restart-only keys stay in force.
  std::shared_ptr<const serving_config> first;
  const config& cfg = first->cfg;
  serving_config_slot serving{first};
  std::mutex reloading;           ///< one reload at a time
  std::uint64_t generations = 1;  ///< the last generation's number (under `reloading`)
  std::string listening;          ///< the address bound, for the restart-only log lines
  inflight_registry inflight;
  io_loops loops{cfg.io_threads};
  downstream_client client{loops, pool_bounds{{cfg.downstream_idle_timeout, cfg.downstream_drain_quiet},
                                              cfg.downstream_alpn_memory, cfg.downstream_max_idle_connections}};
  std::unique_ptr<span_exporter> spans; ///< exports nothing without tracing; outlives the actors that record
  loops_stopper stopper;
  /// The upstreams' lookups and health checks on the loops (docs/upstreams.md): stopped before
  /// the loops stop, so declared after their stopper.
  upstream_feeds feeds{loops, client};
  caf::actor_system_config actor_cfg;
  caf::actor_system system;
  section_cache cache;
  std::unique_ptr<cluster> nodes; ///< of no nodes without `cluster`
  const origin_allowlist any_origin = origin_allowlist::any(); ///< a gateway's workers call any
  process_services services{client, stats, inflight, cache, *nodes, *spans, any_origin};
  request_dispatch dispatch;
  http_server server;
  /// The operations listener (`admin`): its own connection count, so a full `listen` never
  /// locks the operator out; its dispatch serves only the operations paths.
  gateway_stats admin_stats;
  request_dispatch admin_dispatch;
  std::unique_ptr<http_server> admin_server; ///< null without `admin`
  int admin_port = 0;

  /// Closes the store's connections on their loops while the loops still run (a generation may
  /// keep the store itself longer). Destroyed first: requests still running find it stopped.
  struct store_stopper {
    std::shared_ptr<shared_store>& store;
    ~store_stopper() {
      if (store)
        store->stop();
    }
  } store_stop{store};

  explicit impl(config c)
    : store(store_of(c)),
      first(generation_of(std::move(c), 1, series, keys, store, reflection, upstreams)),
      spans(exporter_of(cfg, client, loops)),
      stopper{started(loops)},
      system(actor_config(actor_cfg, cfg, loops)),
      cache(system, cache_limits{cfg.cache_max_entries, cfg.cache_max_bytes}),
      nodes(cluster_of(system, cfg, loops)),
      dispatch(stats, system, services),
      server(serving, stats, loops, dispatch),
      admin_dispatch(stats, system, services, listener_role::admin),
      admin_server(cfg.admin ? std::make_unique<http_server>(serving, admin_stats, loops,
                                                             admin_dispatch, listener_role::admin)
                             : nullptr) {
    keys.start(client);
    reflection.start(client);
    feeds.apply(cfg, upstreams.current());
    if (first->reflected)
      first->reflected->ask_all();
    if (store)
      store->start(loops, stats.shared);
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
  // The targets' first reflection answers, before anyone can ask (on this thread, never a loop).
  if (const auto& reflected = impl_->first->reflected)
    reflected->wait_first();
  const int port = impl_->server.start(address->first, address->second);
  if (impl_->admin_server) {
    const auto admin = split_host_port(impl_->cfg.admin->listen);
    impl_->admin_port = impl_->admin_server->start(admin->first, admin->second);
  }
  std::lock_guard<std::mutex> lock(impl_->reloading);
  impl_->listening = address->first + ":" + std::to_string(port);
  return port;
}

bool gateway::reload(config_result loaded, const std::string& source) {
  auto& im = *impl_;
  std::lock_guard<std::mutex> lock(im.reloading);
  if (!loaded.value) {
    for (const auto& problem : loaded.problems)
      log_event("config_problem", {{"file", source}, {"problem", problem}});
    im.stats.config_reloads_invalid.fetch_add(1);
    log_event("config_reload",
              {{"result", "invalid"}, {"file", source}, {"problems", loaded.problems.size()},
               {"generation", im.generations},
               {"detail", "the file has problems: still serving the configuration in force"}});
    return false;
  }
  config next = std::move(*loaded.value);
  for (auto& change : restart_only_changes(im.cfg, next)) {
    if (change.key == "listen" && !im.listening.empty())
      change.running = im.listening; // what is bound (--listen may have overridden the file)
    log_event("config_restart_only", {{"file", source}, {"key", change.key},
                                      {"running", change.running}, {"requested", change.file},
                                      {"detail", "needs a restart: keeps its running value"}});
  }
  keep_restart_only(im.cfg, next);
  const cache_limits bounds{next.cache_max_entries, next.cache_max_bytes};
  const auto previous = im.serving.current();
  if (bounds.max_entries != previous->cfg.cache_max_entries || bounds.max_bytes != previous->cfg.cache_max_bytes)
    im.cache.resize(bounds);
  // A reload with `shared` connects again (the password file is read again); the old store's
  // connections close once the new generation is in force.
  std::shared_ptr<shared_store> store;
  try {
    store = store_of(next);
  } catch (const std::exception& error) {
    im.stats.config_reloads_invalid.fetch_add(1);
    log_event("config_reload", {{"result", "invalid"}, {"file", source}, {"problems", 1},
                                {"generation", im.generations}, {"detail", error.what()}});
    return false;
  }
  if (store)
    store->start(im.loops, im.stats.shared);
  else
    im.stats.shared.up.store(-1);
  if (const auto problems = im.upstreams.check(next); !problems.empty()) {
    im.stats.config_reloads_invalid.fetch_add(1);
    log_event("config_reload", {{"result", "invalid"}, {"file", source}, {"problems", problems.size()},
                                {"generation", im.generations}, {"detail", problems.front()}});
    if (store)
      store->stop();
    return false;
  }
  auto generation = generation_of(std::move(next), ++im.generations, im.series, im.keys, store,
                                  im.reflection, im.upstreams);
  if (generation->reflected)
    generation->reflected->ask_all(); // no wait: what the targets gave before serves meanwhile
  const auto routes = generation->cfg.routes.size();
  const auto sections = section_count(generation->cfg);
  im.serving.install(std::move(generation));
  im.feeds.apply(im.serving.current()->cfg, im.upstreams.current());
  if (im.store)
    im.store->stop();
  im.store = std::move(store);
  im.stats.config_reloads_ok.fetch_add(1); // after install: whoever sees the count sees the config
  log_event("config_reload", {{"result", "ok"}, {"file", source}, {"generation", im.generations},
                              {"routes", routes}, {"sections", sections}});
  return true;
}

void gateway::begin_drain() {
  impl_->stats.draining.store(true);
}

void gateway::stop() {
  begin_drain();
  impl_->server.stop();
  if (impl_->admin_server)
    impl_->admin_server->stop();
}

int gateway::admin_port() const {
  return impl_->admin_port;
}

const config& gateway::cfg() const {
  return impl_->cfg;
}

std::shared_ptr<const serving_config> gateway::serving() const {
  return impl_->serving.current();
}

const gateway_stats& gateway::stats() const {
  return impl_->stats;
}

std::size_t gateway::downstream_inflight() const {
  return impl_->client.inflight();
}

} // namespace gather
