// The inbound HTTP/1.1 (or HTTPS) server: one acceptor, connections spread over the event loops,
// each served by a `connection` without a thread of its own.
#pragma once

#include <memory>
#include <string>

#include "gather/actors/serving_config.hpp"
#include "gather/front/request_dispatch.hpp"
#include "gather/values/gateway_stats.hpp"
#include "gather/runtime/io_loops.hpp"

namespace gather {

class http_server {
public:
  /// `serving` is where each connection and request takes its configuration generation from.
  /// `stats` counts this server's connections (against max_connections). The admin listener
  /// (`role`) speaks plain HTTP whatever `tls` says.
  http_server(const serving_config_slot& serving, gateway_stats& stats, io_loops& loops,
              request_dispatch& dispatch, listener_role role = listener_role::main);
  ~http_server(); ///< stop()
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// Binds host:port (0 = pick one) and starts accepting on the loops. Returns the bound port.
  /// Throws std::runtime_error when the address cannot be bound or TLS cannot be set up.
  int start(const std::string& host, int port);

  /// Stops accepting; idle connections close at once, the others after their answer (each within
  /// its request's hard limit); returns when every connection has closed.
  void stop();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace gather
