// Gather's labelled metrics (docs/operations.md), counted without locks on the hot path.
//
// Every series a route can produce exists from the moment its configuration is loaded, as plain
// atomics in arrays indexed by status and bucket: counting is one relaxed atomic add, a scrape
// reads them all. The series belong to a `metrics::registry` (one per gateway), by route path and
// section name, so a route or section that a reload keeps keeps its counts; a `metrics` is one
// configuration generation's handles on them, indexed by route and section position.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/resilience/circuit_breaker.hpp"
#include "gather/values/answer_format.hpp"
#include "gather/values/gateway_stats.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather {

/// A latency histogram with buckets that suit millisecond budgets (1 ms ... 10 s). Dense from 50 to
/// 300 ms, where section timeouts usually lie: a quantile is interpolated inside one bucket, so a
/// section that always takes 121 ms must not share a bucket as wide as 100..250 ms (that read 175).
class latency_histogram {
public:
  static constexpr std::array<double, 21> bounds{0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05,
                                                 0.075, 0.1,   0.125, 0.15, 0.2,  0.25, 0.3,
                                                 0.4,   0.5,   0.75,  1,    2,    5,    10};
  void observe(std::chrono::microseconds d);
  /// Appends `<name>_bucket{<labels>,le=...}`, `_sum` and `_count` lines.
  void write(std::string& out, const std::string& name, const std::string& labels) const;

private:
  std::array<std::atomic<std::uint64_t>, bounds.size() + 1> buckets_{}; ///< last: +Inf
  std::atomic<std::uint64_t> sum_us_{0};
  std::atomic<std::uint64_t> count_{0};
};

enum class cache_event : std::uint8_t { hit, miss, coalesced, stale, shared_hit, shared_wait };
/// What a route's bearer-token check found (docs/security.md): gather_auth_total's `result`.
enum class auth_result : std::uint8_t { ok, missing, invalid, expired, forbidden };
/// Why a section was `rejected` with no call made (docs/resilience.md).
enum class reject_reason : std::uint8_t { max_concurrent, circuit_open };

/// Figures that are not per route: read from their owners when a scrape happens.
struct process_figures {
  std::int64_t inflight_requests = 0;
  std::uint64_t overloaded = 0;
  std::uint64_t late_replies = 0;
  std::size_t actors_running = 0;
  std::size_t downstream_inflight = 0;
  std::vector<std::pair<std::string, bool>> nodes; ///< node address, up
  std::uint64_t spans_dropped = 0;       ///< tracing: spans refused by the full export queue
  std::uint64_t spans_exported = 0;      ///< tracing: spans a collector accepted
  std::uint64_t span_exports_failed = 0; ///< tracing: export POSTs that failed
  std::uint64_t config_reloads_ok = 0;
  std::uint64_t config_reloads_invalid = 0;
  std::array<std::uint64_t, 3> connections_by_proto{}; ///< by inbound_proto
  std::array<std::uint64_t, h2_abuse_count> h2_abuse{}; ///< by h2_abuse
  const shared_figures* shared = nullptr; ///< the shared store's (its `up` is -1 without one)
};

class metrics {
public:
  /// The pseudo-route of requests that matched no route.
  static constexpr const char* no_route_label = "no_route";

  class registry;

  /// Handles on `all`'s series for the routes and sections of `cfg` (made there when new).
  metrics(const config& cfg, registry& all);
  ~metrics();

  /// A request answered (any status); `route` is an index in config::routes, or routes.size()
  /// for requests that matched none.
  void request_done(std::size_t route, int status, std::chrono::microseconds took);
  /// A section's final outcome in an answered aggregate request (`degraded`: the page was served
  /// 200 without this section's live data).
  void section_done(std::size_t route, std::size_t section, const section_outcome& outcome,
                    bool degraded);
  void retry(std::size_t route, std::size_t section);
  /// A gRPC section's call ended with status `code` (gather_grpc_calls_total).
  void grpc_call(std::size_t route, std::size_t section, int code);
  void cache(std::size_t route, std::size_t section, cache_event event);
  /// An attempt with hedge calls ended ok: `won` when a hedge call ended it, else the first call did.
  void hedge(std::size_t route, std::size_t section, bool won);
  void rejected(std::size_t route, std::size_t section, reject_reason why);
  /// A retry or hedge not made because the host's retry budget had no room.
  void budget_denied(std::size_t route, std::size_t section);
  /// A progressive answer began (its head left) on `route`, as `format` (ndjson or sse).
  void streamed(std::size_t route, answer_format format);
  /// The section's circuit moved to `to`.
  void circuit_moved(std::size_t route, std::size_t section, circuit_breaker::state to);
  /// A request's bearer-token check on a route with `auth`.
  void auth(std::size_t route, auth_result result);
  /// A request refused 429 by the route's rate limit.
  void rate_limited(std::size_t route);

  /// The Prometheus text exposition, format 0.0.4: every series of the registry, those of routes
  /// and sections that a reload removed included (their counts stay as they were).
  std::string exposition(const process_figures& process) const;

private:
  struct route_series;
  struct section_series;
  struct route_handles {
    route_series* series = nullptr;
    std::vector<section_series*> sections; ///< in the route's section order
  };
  registry& all_;
  std::vector<route_handles> routes_; ///< one per route, plus the no_route one
};

/// Every series a gateway has counted into, by route path and section name. Outlives every
/// generation's `metrics`; a reload only adds to it (under its lock, as does a scrape's read).
class metrics::registry {
public:
  registry();
  ~registry();
  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;

private:
  friend class metrics;
  route_series& route(const std::string& name);
  section_series& section(route_series& route, const std::string& name);
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<route_series>> routes_; ///< in the order they first appeared
};

/// Escapes a label value for the text format: backslash, double quote and newline.
std::string escape_label(const std::string& value);

} // namespace gather
