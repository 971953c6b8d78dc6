// One generation of the configuration in force: a validated config and everything derived from it
// per generation (the metric handles of its routes and sections, the cache scopes of its sections),
// built once and never changed afterwards.
//
// Why generations: a reload (SIGHUP, docs/operations.md) must not edit anything a request in
// flight reads. Each request takes the current generation when it begins and holds it (its job and
// its workers keep a shared_ptr) until its last actor ends; requests that begin after a reload
// take the new one. A generation is freed with the last request, connection or reload that held
// it, on whichever thread that was: its destructor must stay cheap and must not block.
//
// State that must outlive a generation (the metric series a reload keeps, the cache entries) lives
// in the gateway and is only pointed at from here. To give a route or section per-generation state
// of its own, add a member and build it in the constructor from `cfg`; state that changes while
// requests run (atomics, as `counters` holds) is declared `mutable`. Actors reach the generation
// through their job's `serving` (each section worker holds it too), the front through
// started_request::serving. Read a value of `cfg` through an accessor here where there is one,
// never by copying it into something that outlives the call.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/downstream/call/url_split.hpp"
#include "gather/downstream/upstream/upstream_registry.hpp"
#include "gather/ops/metrics.hpp"
#include "gather/resilience/section_guards.hpp"

namespace gather {

/// Who may come in, per route (gather/admission/gates.hpp): only admission reads it.
struct admission_gates;
class live_catalog;
class reflection_registry;
struct proto_catalog;
class shared_store;

struct serving_config {
  /// `cfg` must be valid (load_config accepted it); `series` must outlive the generation;
  /// `gates`: the routes' token guards and rate limiters, built from `cfg` by the gateway.
  /// `reflection`: the gateway's reflection sources (kept across reloads), for a `cfg` whose
  /// targets have `"reflection": true`; must outlive the generation. `upstreams`: the gateway's
  /// tables of endpoints (kept across reloads); without it the generation makes its own.
  serving_config(config cfg, std::uint64_t number, metrics::registry& series,
                 std::shared_ptr<const admission_gates> gates = nullptr,
                 reflection_registry* reflection = nullptr,
                 std::shared_ptr<shared_store> store = nullptr, upstream_registry* upstreams = nullptr);
  ~serving_config();
  serving_config(const serving_config&) = delete;
  serving_config& operator=(const serving_config&) = delete;

  const config cfg;
  /// 1 for the configuration the gateway started on, one more for each reload that applied.
  const std::uint64_t number;
  /// This generation's handles on the gateway's metric series (kept by route path and section
  /// name across reloads). Counting only adds to atomics, hence mutable on a const generation.
  mutable metrics counters;
  /// Per route, per section: the first part of the section's cache keys (route path, section
  /// name, projection), so that no reload can make one section's entry another section's.
  const std::vector<std::vector<std::string>> cache_scopes;
  /// The longest a request of this generation may take: the largest route deadline.
  const millis longest_deadline;
  /// Bulkheads, circuits, hedge latencies and retry budgets (resilience.md): a reload starts
  /// them afresh with the new configuration's values.
  mutable section_guards guards;
  /// cfg.deadline_header in lower case, as inbound header names are kept; empty: off.
  const std::string deadline_header_lower;
  /// Per route, its bearer-token guard and rate limiter (buckets start full with each
  /// generation); null when the generation was built without (a tool, a test).
  const std::shared_ptr<const admission_gates> gates;
  /// The gRPC descriptors over time when a target has `"reflection": true` (docs/grpc.md); null
  /// otherwise (then cfg.descriptors is all there is).
  const std::unique_ptr<const live_catalog> reflected;

  /// The descriptors a request begins with: cfg.descriptors, or what reflection added to them.
  std::shared_ptr<const proto_catalog> descriptors() const;
  /// A request named `call`'s method and no descriptor has it: its target is asked again
  /// (at most once per 10 s), nothing waits.
  void unknown_method(const grpc_call_config& call) const;
  /// The shared store (docs/shared.md) of this generation's `shared`: `cache_shared` sections
  /// keep their entries there too. Null without one.
  const std::shared_ptr<shared_store> store;

  /// This generation's upstreams by name (docs/upstreams.md).
  const upstream_directory upstreams;
  /// The upstream route `route`'s section `index` calls (its url's or target's host names it);
  /// null for a plain origin.
  const std::shared_ptr<upstream_table>& section_upstream(std::size_t route, std::size_t index) const {
    return section_upstreams_[route][index];
  }
  /// The origin of route `route`'s section `index`'s URL template, split once (url_split.hpp):
  /// its calls make only their target. Null for a gRPC section, an upstream's, or a template
  /// whose origin the split refuses (its calls split the whole URL, and fail as they did).
  const std::shared_ptr<const split_origin>& section_origin(std::size_t route, std::size_t index) const {
    return section_origins_[route][index];
  }
  /// The upstream a batch route's url or target names; null for a plain origin or another route.
  const std::shared_ptr<upstream_table>& batch_upstream(std::size_t route) const { return batch_upstreams_[route]; }

  /// The header that tells a downstream how long it has (docs/resilience.md); empty: none.
  const std::string& deadline_header() const { return cfg.deadline_header; }
  /// The largest downstream body a call of this generation reads (`max_response_bytes`).
  std::size_t max_response_bytes() const { return cfg.max_response_bytes; }

private:
  std::vector<std::vector<std::shared_ptr<upstream_table>>> section_upstreams_;
  std::vector<std::shared_ptr<upstream_table>> batch_upstreams_;
  std::vector<std::vector<std::shared_ptr<const split_origin>>> section_origins_;
};

/// Where the front takes the generation in force from; the gateway installs a new one on reload.
class serving_config_slot {
public:
  explicit serving_config_slot(std::shared_ptr<const serving_config> first);

  /// The generation in force (takes a lock: for once per connection, not once per request).
  std::shared_ptr<const serving_config> current() const;
  /// Replaces `held` with the generation in force when a newer one was installed. When none was
  /// (nearly always) this costs one atomic load: the per-request way to pick a generation.
  void refresh(std::shared_ptr<const serving_config>& held) const;
  /// Puts `next` in force for every request that begins from now on.
  void install(std::shared_ptr<const serving_config> next);
  /// The largest route deadline of every generation installed so far (draining waits that long).
  millis longest_deadline() const;

private:
  mutable std::mutex mutex_;
  std::shared_ptr<const serving_config> current_;
  std::atomic<std::uint64_t> number_;
  millis longest_deadline_{0};
};

} // namespace gather
