// A running gateway: the actor system, the downstream client and the HTTP front, in the order
// they must start and stop.
#pragma once

#include <memory>
#include <string>

#include "gather/config/config.hpp"
#include "gather/values/gateway_stats.hpp"

namespace gather {

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
  /// Stops accepting, lets requests in flight finish (each by its deadline), joins.
  void stop();

  const config& cfg() const;
  const gateway_stats& stats() const;
  /// Downstream transfers in flight right now.
  std::size_t downstream_inflight() const;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace gather
