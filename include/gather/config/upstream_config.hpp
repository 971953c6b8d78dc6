// `upstreams` (docs/upstreams.md) as typed values: a service of many instances, called by name.
// Read and checked with the rest of the configuration (load_config, config.hpp); the downstream
// client's upstream tables (gather/downstream/upstream/) are built from them.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gather/config/template_parts.hpp"

namespace gather {

/// `upstreams[].outlier`: passive ejection.
struct upstream_outlier_config {
  int consecutive_failures = 5; ///< failures in a row that eject an endpoint
  millis eject{30000};          ///< times the ejections in a row, at most 300 s
  int max_ejected_percent = 50; ///< of the upstream's endpoints, rounded down (at least 1 above 0)
};

struct upstream_health_config {
  std::string path;                        ///< GET over HTTP/1.1 (https with `tls`); or
  std::optional<std::string> grpc_service; ///< grpc.health.v1.Health/Check ("" the whole server)
  millis interval{5000};
  millis timeout{1000};
  int unhealthy = 3; ///< failed probes in a row that take an endpoint out
  int healthy = 2;   ///< good probes in a row that bring it back
};

struct upstream_tls_config {
  std::string ca_file;     ///< empty: the system's CAs
  std::string cert_file;   ///< with key_file: mutual TLS
  std::string key_file;
  std::string server_name; ///< empty: the source's host name (SNI and the certificate check)
};

struct upstream_entry {
  std::string host; ///< an IP literal (without brackets) or a name
  int port = 0;
  int weight = 1;   ///< 1..100
};

enum class balance_kind : std::uint8_t { least_request, round_robin };

struct upstream_config {
  std::string name;
  enum class source_kind : std::uint8_t { endpoints, dns, srv } source = source_kind::endpoints;
  std::vector<upstream_entry> endpoints; ///< source_kind::endpoints
  std::string dns_name;                  ///< source_kind::dns
  int dns_port = 0;
  std::string srv_name;                  ///< source_kind::srv
  millis refresh{5000};
  /// The most endpoints one lookup's answer gives (the lowest addresses kept; a log line says so).
  int max_endpoints = 1000;
  balance_kind balance = balance_kind::least_request;
  upstream_outlier_config outlier;
  std::optional<upstream_health_config> health;
  std::optional<upstream_tls_config> tls;
  millis idle_timeout{60000};       ///< 0: never
  millis max_connection_age{0};     ///< 0: no limit
  /// Every endpoint is an IP literal of an `endpoints` list: no lookup is ever needed.
  bool literal_only() const;
};

} // namespace gather
