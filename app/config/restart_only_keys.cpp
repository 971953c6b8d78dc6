#include "gather/config/restart_only_keys.hpp"

namespace gather {

namespace {

nlohmann::json json_of(const std::optional<tls_config>& tls) {
  if (!tls)
    return nullptr;
  return {{"cert_file", tls->cert_file}, {"key_file", tls->key_file}};
}

nlohmann::json json_of(const std::optional<cluster_config>& cluster) {
  if (!cluster)
    return nullptr;
  nlohmann::json out = {{"nodes", cluster->nodes}, {"local", cluster->local},
                        {"connect_timeout_ms", cluster->connect_timeout.count()}};
  if (cluster->tls)
    out["tls"] = {{"cert_file", cluster->tls->cert_file}, {"key_file", cluster->tls->key_file},
                  {"ca_file", cluster->tls->ca_file}};
  return out;
}

nlohmann::json json_of(const std::optional<admin_config>& admin) {
  if (!admin)
    return nullptr;
  return {{"listen", admin->listen}};
}

nlohmann::json json_of(const std::optional<tracing_config>& tracing) {
  if (!tracing)
    return nullptr;
  return {{"otlp_endpoint", tracing->otlp_endpoint}, {"service_name", tracing->service_name},
          {"sample_ratio", tracing->sample_ratio}, {"max_queue_spans", tracing->max_queue_spans},
          {"max_batch_spans", tracing->max_batch_spans},
          {"export_interval_ms", tracing->export_interval.count()},
          {"export_timeout_ms", tracing->export_timeout.count()}};
}

void compare(std::vector<restart_only_change>& out, const char* key, const nlohmann::json& running,
             const nlohmann::json& next) {
  if (running != next)
    out.push_back({key, running, next});
}

} // namespace

std::vector<restart_only_change> restart_only_changes(const config& running, const config& next) {
  std::vector<restart_only_change> changes;
  compare(changes, "listen", running.listen, next.listen);
  compare(changes, "io_threads", running.io_threads, next.io_threads);
  compare(changes, "tls", json_of(running.tls), json_of(next.tls));
  compare(changes, "cluster", json_of(running.cluster), json_of(next.cluster));
  compare(changes, "admin", json_of(running.admin), json_of(next.admin));
  // The span exporter is made once, at start (its queue and timer live on a loop).
  compare(changes, "tracing", json_of(running.tracing), json_of(next.tracing));
  // The downstream client's pools are made once, at start, with these bounds.
  compare(changes, "downstream_idle_timeout_ms", running.downstream_idle_timeout.count(),
          next.downstream_idle_timeout.count());
  compare(changes, "downstream_drain_quiet_ms", running.downstream_drain_quiet.count(),
          next.downstream_drain_quiet.count());
  compare(changes, "downstream_alpn_memory_ms", running.downstream_alpn_memory.count(),
          next.downstream_alpn_memory.count());
  compare(changes, "downstream_max_idle_connections", running.downstream_max_idle_connections,
          next.downstream_max_idle_connections);
  return changes;
}

void keep_restart_only(const config& running, config& next) {
  next.listen = running.listen;
  next.io_threads = running.io_threads;
  next.tls = running.tls;
  next.cluster = running.cluster;
  next.admin = running.admin;
  next.tracing = running.tracing;
  next.downstream_idle_timeout = running.downstream_idle_timeout;
  next.downstream_drain_quiet = running.downstream_drain_quiet;
  next.downstream_alpn_memory = running.downstream_alpn_memory;
  next.downstream_max_idle_connections = running.downstream_max_idle_connections;
}

} // namespace gather
