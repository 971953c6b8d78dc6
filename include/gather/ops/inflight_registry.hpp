// The aggregations in flight, for /debug/actors: who is slow and which sections it still waits for.
//
// Sharded by entry address, so registering a request takes an uncontended lock; the per-section
// "still pending" flags are atomics the coordinator clears without any lock.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/values/inbound_request.hpp"

namespace gather {

struct inflight_entry {
  inflight_entry(std::string id, std::shared_ptr<const route_config> r, steady_time at)
    : request_id(std::move(id)), route(std::move(r)), arrived(at), pending(route->sections.size()) {
    for (auto& p : pending)
      p.store(true, std::memory_order_relaxed);
  }
  std::string request_id;
  /// Owns (a share of) the configuration generation the route belongs to: a view taken from the
  /// registry may outlive the request, and a reload may have released everything else holding it.
  std::shared_ptr<const route_config> route;
  steady_time arrived;
  std::vector<std::atomic<bool>> pending; ///< per section: not ended yet
};

struct inflight_view {
  std::string request_id;
  std::string route;
  std::int64_t age_ms = 0;
  std::vector<std::string> pending;
};

class inflight_registry {
public:
  void add(const std::shared_ptr<inflight_entry>& entry);
  void remove(const inflight_entry* entry);
  /// The `limit` oldest requests in flight, oldest first.
  std::vector<inflight_view> oldest(std::size_t limit) const;

private:
  struct shard {
    mutable std::mutex mutex;
    std::unordered_map<const inflight_entry*, std::shared_ptr<inflight_entry>> entries;
  };
  shard& shard_for(const inflight_entry* entry);
  std::array<shard, 16> shards_;
};

} // namespace gather
