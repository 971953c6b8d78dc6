// The section cache: successful section data kept for `cache_ttl_ms`, with single flight.
//
// A few cache actors each own a shard of the keys (route path, section name and projection, final
// URL, forwarded header values). Workers ask before calling a downstream:
//
//   worker --lookup(key, ttl, stale)--> cache
//     hit:    fresh data, no call (source "cache", attempts 0)
//     lead:   nobody is calling for this key: make the call, then report it with `store`
//     joined: someone is calling: the cache answers later, with that call's outcome
//   leader --store(key, outcome)--> cache --joined(outcome)--> every waiter; reply: stale data, if any
//
// A leader that dies without reporting (its request's deadline passed) hands the flight to the
// first waiter, which then makes the call itself. Only ok data is stored; a failed flight is not
// cached, its waiters see the failure. Entries stay `stale_ttl_ms` past their TTL to serve as
// stale-if-error data. Memory is bounded by entry count and bytes, least recently used out first.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>

#include "gather/config/config.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather {

struct cache_answer {
  enum class kind : std::uint8_t { hit, lead, joined };
  kind what = kind::lead;
  section_status status = section_status::ok; ///< hit, joined: the outcome
  std::string data;                           ///< hit, joined (ok): the data
  std::int32_t attempts = 0;                  ///< joined: the flight's attempts
  std::int32_t last_http = 0;
  std::string stale;                          ///< joined (failed): expired data still within stale_ttl
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cache_answer& x) {
  return f(caf::meta::type_name("gather.cache_answer"), x.what, x.status, x.data, x.attempts,
           x.last_http, x.stale);
}

/// Limits of the whole cache (split evenly over the shards).
struct cache_limits {
  std::size_t max_entries = 100000;
  std::size_t max_bytes = 256u * 1024 * 1024;
};

/// A shard's mailbox depth: messages posted to it (counted by shard_for) and not yet handled
/// (counted by the shard as it starts each one), and the most seen at once. Counted, not read
/// from CAF: in 0.17 only the actor may look into its own mailbox, and doing so from Gather's code
/// inlines CAF's queue internals, whose sentinel downcast UBSan reports.
struct mailbox_gauge {
  std::atomic<std::size_t> posted{0};
  std::atomic<std::size_t> handled{0};
  std::atomic<std::size_t> peak{0};
  void post();
  void handle() { handled.fetch_add(1, std::memory_order_relaxed); }
  std::size_t depth() const;
};

/// The cache actors: spawned once per gateway, a key always goes to the same shard.
class section_cache {
public:
  section_cache(caf::actor_system& system, cache_limits limits, std::size_t shards = 4);
  /// Stops the shards: a flight still waiting holds response promises, and through them its
  /// shard, which would otherwise keep the actor system from shutting down.
  ~section_cache();
  section_cache(const section_cache&) = delete;
  section_cache& operator=(const section_cache&) = delete;
  /// The shard that owns `key`, counting the one message the caller is about to send it.
  const caf::actor& shard_for(const std::string& key);
  /// New limits for the whole cache (a reload): each shard drops its least recently used entries
  /// until it fits them.
  void resize(cache_limits limits);
  /// One per shard, in shard order (for /debug/actors).
  const std::vector<std::shared_ptr<mailbox_gauge>>& mailboxes() const { return mailboxes_; }

private:
  static cache_limits per_shard(cache_limits limits, std::size_t shards);
  std::vector<caf::actor> shards_;
  std::vector<std::shared_ptr<mailbox_gauge>> mailboxes_;
};

/// The part of a section's cache keys that names the section: its route's path, its name and its
/// `fields` and `max_items` (the data is stored projected and cut). Keyed by names, not positions,
/// so that after a reload no section is ever shown another's entry; one whose `fields` or
/// `max_items` changed starts afresh.
std::string cache_scope(const std::string& route_path, const section_config& section);

/// The cache key of a call: the section's scope, the final URL and the forwarded headers' values.
std::string cache_key(const std::string& scope, const std::string& url,
                      const std::vector<std::string>& forwarded_header_lines);

} // namespace gather
