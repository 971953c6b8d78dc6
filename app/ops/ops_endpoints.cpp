#include "gather/ops/ops_endpoints.hpp"

#include "gather/cluster/cluster.hpp"
#include "gather/ops/dashboard.hpp"
#include "gather/ops/upstream_report.hpp"
#include "gather/actors/section_cache.hpp"
#include "gather/tracing/span_exporter.hpp"

#include <caf/actor_registry.hpp>
#include <caf/actor_system.hpp>
#include <caf/scheduler/abstract_coordinator.hpp>
#include <nlohmann/json.hpp>

namespace gather {

namespace {

/// How many in-flight requests /debug/actors lists, oldest first.
constexpr std::size_t slowest_listed = 20;

std::vector<node_view> node_views(const ops_sources& src) {
  return src.nodes.nodes();
}

std::vector<std::pair<std::string, bool>> node_states(const ops_sources& src) {
  std::vector<std::pair<std::string, bool>> states;
  for (const auto& view : node_views(src))
    states.emplace_back(view.address, view.up);
  return states;
}

http_reply healthz(const ops_sources& src) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& [node, up] : node_states(src))
    nodes.push_back({{"node", node}, {"up", up}});
  nlohmann::json body{{"status", "ok"}, {"nodes", nodes}};
  if (const int up = src.stats.shared.up.load(); up >= 0)
    body["shared"] = {{"up", up == 1}};
  http_reply reply;
  reply.body = body.dump();
  return reply;
}

/// Ready for traffic until SIGTERM; then 503, so the balancer stops sending while the gateway
/// still serves what comes (drain_delay_ms).
http_reply readyz(const ops_sources& src) {
  http_reply reply;
  const bool draining = src.stats.draining.load(std::memory_order_relaxed);
  reply.status = draining ? 503 : 200;
  reply.body = draining ? R"({"status":"draining"})" : R"({"status":"ready"})";
  return reply;
}

http_reply metrics_text(const ops_sources& src) {
  process_figures process;
  process.inflight_requests = src.stats.inflight.load();
  process.overloaded = src.stats.overloaded.load();
  process.late_replies = src.stats.late_replies.load();
  process.actors_running = src.system.registry().running();
  process.downstream_inflight = src.client.inflight();
  process.nodes = node_states(src);
  process.spans_dropped = src.spans.dropped();
  process.spans_exported = src.spans.exported();
  process.span_exports_failed = src.spans.failed_exports();
  process.config_reloads_ok = src.stats.config_reloads_ok.load();
  process.config_reloads_invalid = src.stats.config_reloads_invalid.load();
  for (std::size_t i = 0; i < process.connections_by_proto.size(); ++i)
    process.connections_by_proto[i] = src.stats.connections_by_proto[i].load();
  for (std::size_t i = 0; i < process.h2_abuse.size(); ++i)
    process.h2_abuse[i] = src.stats.h2_abuse[i].load();
  process.shared = &src.stats.shared;
  http_reply reply;
  reply.content_type = "text/plain; version=0.0.4";
  reply.body = src.counters.exposition(process);
  reply.body += upstream_metrics(src.upstreams);
  return reply;
}

http_reply debug_actors(const ops_sources& src) {
  auto slowest = nlohmann::json::array();
  for (const auto& view : src.inflight.oldest(slowest_listed))
    slowest.push_back({{"request_id", view.request_id}, {"route", view.route},
                       {"age_ms", view.age_ms}, {"pending", view.pending}});
  auto nodes = nlohmann::json::array();
  for (const auto& view : node_views(src))
    nodes.push_back({{"node", view.address}, {"up", view.up}, {"inflight", view.inflight},
                     {"work", view.work}});
  // The long-lived actors' mailboxes: the cache shards. (The cluster's links are threads; what is
  // posted to the event loops for the downstream client and not yet taken is downstream_queue.) Peak and depth are
  // read apart, so a peak can trail a depth read a moment later.
  auto mailboxes = nlohmann::json::array();
  for (std::size_t i = 0; i < src.cache.mailboxes().size(); ++i) {
    const auto& gauge = *src.cache.mailboxes()[i];
    mailboxes.push_back({{"actor", "section_cache/" + std::to_string(i)},
                         {"depth", gauge.depth()},
                         {"peak", gauge.peak.load(std::memory_order_relaxed)}});
  }
  http_reply reply;
  reply.body = nlohmann::json{{"actors_running", src.system.registry().running()},
                              {"scheduler_threads", src.system.scheduler().num_workers()},
                              {"io_threads", src.cfg.io_threads},
                              {"connections", src.stats.connections.load()},
                              {"connections_refused", src.stats.connections_refused.load()},
                              {"proxy_refused", src.stats.proxy_refused.load()},
                              {"h2_connections", src.stats.h2_connections.load()},
                              {"h2_streams", src.stats.h2_streams.load()},
                              {"coordinators", src.stats.coordinators.load()},
                              {"workers", src.stats.workers.load()},
                              {"inflight_requests", src.stats.inflight.load()},
                              {"late_replies", src.stats.late_replies.load()},
                              {"client_gone", src.stats.client_gone.load()},
                              {"overloaded", src.stats.overloaded.load()},
                              {"downstream_inflight", src.client.inflight()},
                              {"downstream_queue", src.client.queued()},
                              {"mailboxes", mailboxes},
                              {"slowest", slowest},
                              {"nodes", nodes}}
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return reply;
}

/// The live page (app/ops/dashboard.cpp): self-contained, so the policy allows nothing from elsewhere.
http_reply dashboard(const std::string& /*request_id*/) {
  http_reply reply;
  reply.content_type = "text/html; charset=utf-8";
  reply.body = dashboard_html();
  reply.headers.emplace_back("Content-Security-Policy", dashboard_csp());
  reply.headers.emplace_back("Cache-Control", "no-store");
  reply.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return reply;
}

} // namespace

bool is_ops_path(const std::string& path, const config& cfg, listener_role role) {
  // Asked of every request, twice: compared as views, each a length test first (a std::string
  // against a literal measured the literal and compared the bytes: ~200 instructions a time).
  const std::string_view p{path};
  if (p == "/healthz" || p == "/readyz")
    return true;
  if (cfg.admin && role == listener_role::main)
    return false;
  return p == "/metrics" || p == "/debug/actors" || p == "/debug/upstreams" || p == "/dashboard";
}

http_reply serve_ops(const std::string& method, const std::string& path, const std::string& request_id,
                     const ops_sources& sources) {
  if (method != "GET") {
    auto reply = error_reply(405, "method_not_allowed", request_id);
    reply.headers.emplace_back("Allow", "GET");
    return reply;
  }
  if (path == "/healthz")
    return healthz(sources);
  if (path == "/readyz")
    return readyz(sources);
  if (path == "/metrics")
    return metrics_text(sources);
  if (path == "/debug/actors")
    return debug_actors(sources);
  if (path == "/debug/upstreams") {
    http_reply reply;
    reply.body = upstream_report(sources.upstreams).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return reply;
  }
  return dashboard(request_id);
}

} // namespace gather
