// What keeps an upstream's table of endpoints current (docs/upstreams.md), off every request's
// path: its lookups (endpoint_watch: the names of an `endpoints` list, `dns`, `srv`, every
// `refresh_ms`) and its active health checks (health_schedule: every endpoint every
// `interval_ms`), both on one event loop, the upstream's own.
//
//   endpoint_watch ──lookup_answer──▶ upstream_table ◀──mark_health / count_probe── health_schedule
//                                          │ its endpoints (the probes' origins and targets)
//                                          └───────────────────────────────────────▶
//
// The gateway holds one and hands it each generation's tables: an upstream whose source, health
// and TLS stay keeps its feed (no lookup or probe started again), a changed one's feed is made
// again, a removed one's stopped. Everything of a feed runs on its loop's thread.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "gather/config/config.hpp"
#include "gather/downstream/upstream/upstream_registry.hpp"

namespace gather {

class downstream_client;
class io_loops;

class upstream_feeds {
public:
  /// On `loops` (running while feeds are applied, until stop()), probing through `client`.
  upstream_feeds(io_loops& loops, downstream_client& client);
  ~upstream_feeds(); ///< stop()
  upstream_feeds(const upstream_feeds&) = delete;
  upstream_feeds& operator=(const upstream_feeds&) = delete;

  /// The feeds of `cfg`'s upstreams, whose tables `tables` holds, from now on. Any thread but a
  /// loop's; returns before the feeds' first lookups and probes run.
  void apply(const config& cfg, const upstream_directory& tables);

  /// Every feed stopped on its loop, waited for: call it while the loops still run.
  void stop();

private:
  struct feed;
  io_loops& loops_;
  downstream_client& client_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<feed>> feeds_; ///< by upstream name
  std::size_t next_loop_ = 0;
};

} // namespace gather
