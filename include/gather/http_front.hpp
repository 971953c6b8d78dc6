// The inbound HTTP side: cpp-httplib in front, one coordinator actor per aggregate request behind.
#pragma once

#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "gather/config.hpp"
#include "gather/gateway_stats.hpp"
#include "gather/section_worker.hpp"

namespace gather {

/// How long past a route's deadline a handler thread waits for its coordinator before answering
/// 504 itself: the coordinator's deadline message is exact, so this covers only a starved scheduler.
constexpr millis handler_grace{1000};

/// Handler threads kept beyond max_inflight, so that a request over the limit still reaches a handler
/// to be refused at once and /healthz answers while the gateway is full.
constexpr std::size_t reserve_handler_threads = 32;

/// Idle keep-alive connections hold a handler thread each; this bounds how long (seconds).
constexpr int keep_alive_idle_seconds = 2;

class http_front {
public:
  http_front(const config& cfg, gateway_stats& stats, caf::actor_system& system,
             section_runtime runtime);
  ~http_front();

  /// Binds host:port (0 = pick one) with a real listen backlog; returns the bound port.
  /// Throws std::runtime_error when the address cannot be bound.
  int bind(const std::string& host, int port);
  /// Serves until stop(); call on a thread of its own.
  void run();
  /// True once run() accepts connections.
  bool running() const;
  /// Stops accepting and returns once requests in flight have been answered (each by its deadline).
  void stop();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace gather
