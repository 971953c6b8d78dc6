// A running gateway: the actor system, the downstream client and the HTTP front, in the order
// they must start and stop.
#pragma once

#include <memory>
#include <string>

#include "gather/config/config.hpp"
#include "gather/values/gateway_stats.hpp"

namespace gather {

struct serving_config;

class gateway {
public:
  explicit gateway(config cfg);
  ~gateway(); ///< stop(), then the actors, then the downstream client
  gateway(const gateway&) = delete;
  gateway& operator=(const gateway&) = delete;

  /// Binds `listen` ("host:port"; empty: the config's) and serves on the event loops (already
  /// running: they start with the gateway, since the actors live on them).
  /// Returns the bound port. Throws std::runtime_error when it cannot bind.
  int start(const std::string& listen = {});
  /// The operations listener's bound port after start(); 0 without `admin`.
  int admin_port() const;
  /// SIGTERM's first step: /readyz answers 503 from now on; everything else goes on as before
  /// (the balancer takes the gateway out of its list while it still serves: drain_delay_ms).
  void begin_drain();
  /// Stops accepting, lets requests in flight finish (each by its deadline), joins.
  void stop();

  /// Puts a re-read configuration in force (SIGHUP; docs/operations.md, "Reloading the
  /// configuration"). Valid: requests that begin from now on use it, those in flight finish on
  /// theirs; the restart-only keys (listen, io_threads, tls, cluster) keep their running values,
  /// each one the file changes logged. Invalid: every problem logged, nothing changes. Counted in
  /// gather_config_reloads_total either way; `source` names the file in the log lines. Returns
  /// whether the new configuration is in force. Safe from any thread; blocks no event loop.
  bool reload(config_result loaded, const std::string& source);

  /// The configuration the gateway started on (the restart-only keys stay in force from it).
  const config& cfg() const;
  /// The configuration generation in force now.
  std::shared_ptr<const serving_config> serving() const;
  const gateway_stats& stats() const;
  /// Downstream transfers in flight right now.
  std::size_t downstream_inflight() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace gather
