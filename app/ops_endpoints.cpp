#include "gather/ops_endpoints.hpp"

#include <caf/actor_registry.hpp>
#include <caf/actor_system.hpp>
#include <nlohmann/json.hpp>

namespace gather {

namespace {

http_reply healthz(const config& cfg) {
  nlohmann::json nodes = nlohmann::json::array();
  if (cfg.cluster)
    for (const auto& node : cfg.cluster->nodes)
      nodes.push_back({{"node", node}, {"up", false}});
  http_reply reply;
  reply.body = nlohmann::json{{"status", "ok"}, {"nodes", nodes}}.dump();
  return reply;
}

http_reply metrics(const gateway_stats& stats, caf::actor_system& system,
                   const downstream_client& client) {
  std::string text;
  auto gauge = [&text](const char* name, const char* type, const char* help, double value) {
    text += std::string{"# HELP "} + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
            name + " " + std::to_string(static_cast<long long>(value)) + "\n";
  };
  gauge("gather_inflight_requests", "gauge", "Aggregations admitted and not yet answered.",
        stats.inflight.load());
  gauge("gather_overloaded_total", "counter", "Requests refused by max_inflight.", stats.overloaded.load());
  gauge("gather_late_replies_total", "counter", "Replies that arrived after their request was answered.",
        stats.late_replies.load());
  gauge("gather_actors_running", "gauge", "Actors running in the actor system.",
        system.registry().running());
  gauge("gather_downstream_inflight", "gauge", "Downstream transfers in flight.", client.inflight());
  http_reply reply;
  reply.content_type = "text/plain; version=0.0.4";
  reply.body = std::move(text);
  return reply;
}

http_reply debug_actors(const gateway_stats& stats, caf::actor_system& system) {
  http_reply reply;
  reply.body = nlohmann::json{{"actors_running", system.registry().running()},
                              {"coordinators", stats.coordinators.load()},
                              {"workers", stats.workers.load()},
                              {"inflight_requests", stats.inflight.load()},
                              {"late_replies", stats.late_replies.load()},
                              {"client_gone", stats.client_gone.load()}}
                 .dump();
  return reply;
}

} // namespace

bool is_ops_path(const std::string& path) {
  return path == "/healthz" || path == "/metrics" || path == "/debug/actors" || path == "/dashboard";
}

http_reply serve_ops(const std::string& method, const std::string& path, const std::string& request_id,
                     const config& cfg,
                     const gateway_stats& stats, caf::actor_system& system,
                     const downstream_client& client) {
  http_reply reply;
  if (method != "GET") {
    reply = error_reply(405, "method_not_allowed", request_id);
    reply.headers.emplace_back("Allow", "GET");
  } else if (path == "/healthz") {
    reply = healthz(cfg);
  } else if (path == "/metrics") {
    reply = metrics(stats, system, client);
  } else if (path == "/debug/actors") {
    reply = debug_actors(stats, system);
  } else {
    reply = error_reply(501, "not_implemented", request_id);
  }
  return reply;
}

} // namespace gather
