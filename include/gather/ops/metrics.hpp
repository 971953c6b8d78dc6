// Gather's labelled metrics (CONTRACT §6), counted without locks on the hot path.
//
// Every series a route can produce exists from start-up, as plain atomics in arrays indexed by
// route, section, status and bucket: counting is one relaxed atomic add, a scrape reads them all.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/values/section_outcome.hpp"

namespace gather {

/// A latency histogram with buckets that suit millisecond budgets (1 ms ... 10 s).
class latency_histogram {
public:
  static constexpr std::array<double, 13> bounds{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                 0.25,  0.5,    1,     2.5,  5,     10};
  void observe(std::chrono::microseconds d);
  /// Appends `<name>_bucket{<labels>,le=...}`, `_sum` and `_count` lines.
  void write(std::string& out, const std::string& name, const std::string& labels) const;

private:
  std::array<std::atomic<std::uint64_t>, bounds.size() + 1> buckets_{}; ///< last: +Inf
  std::atomic<std::uint64_t> sum_us_{0};
  std::atomic<std::uint64_t> count_{0};
};

enum class cache_event : std::uint8_t { hit, miss, coalesced, stale };

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
};

class metrics {
public:
  /// The pseudo-route of requests that matched no route.
  static constexpr const char* no_route_label = "no_route";

  explicit metrics(const config& cfg);
  ~metrics();

  /// A request answered (any status); `route` is an index in config::routes, or routes.size()
  /// for requests that matched none.
  void request_done(std::size_t route, int status, std::chrono::microseconds took);
  /// A section's final outcome in an answered aggregate request (`degraded`: the page was served
  /// 200 without this section's live data).
  void section_done(std::size_t route, std::size_t section, const section_outcome& outcome,
                    bool degraded);
  void retry(std::size_t route, std::size_t section);
  void cache(std::size_t route, std::size_t section, cache_event event);

  /// The Prometheus text exposition, format 0.0.4.
  std::string exposition(const process_figures& process) const;

private:
  struct route_series;
  struct section_series;
  const config& cfg_;
  std::vector<std::unique_ptr<route_series>> routes_; ///< one per route, plus the no_route one
};

/// Escapes a label value for the text format: backslash, double quote and newline.
std::string escape_label(const std::string& value);

} // namespace gather
