// One upstream's table of endpoints (docs/upstreams.md): who is in it (from its lookups' answers,
// or its `endpoints` list of IP literals), who is available, the balancer's pick per call, and
// what each call's end says about its endpoint (passive ejection, `outlier`). Shared by every
// event loop and every configuration generation that names the upstream; a reload that keeps the
// upstream keeps the table (its endpoints' state and their connections).
//
// No table lock on a call's path: the set of endpoints is an immutable snapshot that a pick loads
// atomically as a shared_ptr (a new one is published when a lookup changes the set; the old one is
// freed by whoever drops its last reference, a pick that still reads it included), and each
// endpoint's state is atomics. Only an ejection decision (a rare event: the max_ejected_percent
// count) takes the table's mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/downstream/call/call_target.hpp"
#include "gather/downstream/upstream/endpoint_lookup.hpp"

namespace gather {

/// The labels of gather_upstream_endpoints' `state`.
enum class endpoint_state : std::uint8_t { available, ejected, unhealthy, leaving };
const char* to_string(endpoint_state state);

/// What a call's end says of its endpoint: the labels of gather_upstream_calls_total's `result`.
enum class endpoint_result : std::uint8_t {
  ok,      ///< the section's call ended ok: resets the failures in a row (and the ejections)
  failure, ///< a connection failure, a reset, a timeout, 502/503/504, gRPC UNAVAILABLE
  other,   ///< any other answer (404, 409, another gRPC code): not the machine's failure
};

/// One endpoint: its identity and its state, shared by every loop.
struct upstream_endpoint {
  std::uint32_t id = 0;       ///< unique in its table, never reused: what a retry avoids
  std::string text;           ///< "address:port" ("[v6]:port"): the log line's and the metrics'
  found_endpoint found;
  std::shared_ptr<const call_target> target;
  std::atomic<std::uint32_t> weight{1};
  std::atomic<std::int64_t> in_flight{0};
  std::atomic<std::int32_t> failures_in_row{0};
  std::atomic<std::int32_t> ejections_in_row{0};
  std::atomic<std::int64_t> ejected_until{0}; ///< steady_clock nanoseconds; 0: never ejected
  std::atomic<bool> unhealthy{false};         ///< its health checks took it out of rotation
  std::atomic<bool> leaving{false};           ///< no longer in the lookups' answer
  std::atomic<std::int8_t> last_probe{-1};    ///< -1 none yet, else a health_result
  std::atomic<std::uint64_t> calls_ok{0}, calls_failure{0}, calls_other{0};

  endpoint_state state(std::int64_t now_ns) const;
};

/// A probe's end: the labels of gather_upstream_health_checks_total's `result`.
enum class health_result : std::int8_t { healthy, unhealthy, timeout };

/// The pick of one call: the endpoint (holds it while the call runs), or none when the table
/// has no endpoint at all (the call then ends `error` at once, through `target`'s detail).
struct endpoint_pick {
  std::shared_ptr<upstream_endpoint> endpoint;
  std::shared_ptr<const call_target> target; ///< the endpoint's, or the table's "no endpoint"
};

/// What /debug/upstreams and the metrics read of a table.
struct upstream_view {
  struct endpoint_row {
    std::string address;
    std::uint32_t weight = 1;
    endpoint_state state = endpoint_state::available;
    std::int64_t in_flight = 0;
    std::int32_t failures_in_row = 0;
    std::int64_t ejected_until_ms = 0; ///< Unix time in ms; 0 when not ejected now
    std::int8_t last_probe = -1;
    std::uint64_t ok = 0, failure = 0, other = 0;
  };
  std::string name;
  std::string balance;
  std::vector<endpoint_row> endpoints;
  std::uint64_t ejections = 0;
  std::uint64_t lookups[3] = {0, 0, 0}; ///< by lookup_result
  std::uint64_t health_checks[3] = {0, 0, 0}; ///< by health_result
  std::int64_t last_lookup_ms = 0;      ///< Unix time in ms; 0: none yet
  std::string last_lookup;              ///< "ok", "error", "empty" or "" (none yet)
  bool panic = false;
};

class upstream_table {
public:
  using log_sink = std::function<void(const std::string& json_line)>;

  /// `log` takes the table's log lines (panic, a lookup that kept the last set, an ejection).
  upstream_table(const upstream_config& cfg, log_sink log = {});
  ~upstream_table();
  upstream_table(const upstream_table&) = delete;
  upstream_table& operator=(const upstream_table&) = delete;

  const std::string& name() const { return name_; }

  /// A reload with this upstream in it: its balance, outlier and health bounds from now on; new
  /// TLS or connection bounds make new targets (the endpoints stay, their old connections close
  /// when idle). An `endpoints` list of IP literals is its own answer, taken at once; `error` is
  /// set (and nothing changed) when `tls` cannot be used.
  bool configure(const upstream_config& cfg, std::string& error);

  /// A lookup's answer: ok replaces the set (endpoints that stay keep their state, those that
  /// leave drain, new ones join); error or empty keeps the last good set (a log line says so).
  void take(const lookup_answer& answer);

  /// The endpoint for one call: balanced over the available ones (not ejected, not unhealthy,
  /// not leaving) other than `avoid` (the endpoints the section's earlier calls went to) when
  /// there is one; in panic (none available) over all that are not leaving. Counts it in flight.
  endpoint_pick pick(const std::uint32_t* avoid = nullptr, std::size_t avoid_count = 0);

  /// A call picked on `endpoint` ended so: out of flight; its failures in a row and ejection.
  void report(upstream_endpoint& endpoint, endpoint_result result);

  /// What the health probes say: `unhealthy` takes an endpoint out of rotation, healthy brings
  /// it back (the probes count the rounds in a row; this takes their verdict).
  void mark_health(const std::string& address, std::uint16_t port, bool healthy);
  /// A probe's end, counted and shown (gather_upstream_health_checks_total, /debug/upstreams).
  void count_probe(const std::string& address, std::uint16_t port, health_result result);

  /// The endpoints now, leaving ones that still carry calls included.
  std::vector<std::shared_ptr<upstream_endpoint>> endpoints() const;
  upstream_view view() const;

private:
  struct endpoint_set;
  struct settings;

  /// The set becomes `found_now`: endpoints that stay keep their state, the others leave.
  void replace(const std::vector<found_endpoint>& found_now);
  void publish(std::shared_ptr<endpoint_set> next);
  std::shared_ptr<upstream_endpoint> make_endpoint(const found_endpoint& found) const;
  std::shared_ptr<const call_target> target_of(const found_endpoint& found) const;
  void eject(upstream_endpoint& endpoint, std::int64_t now_ns);
  void note_panic(bool panic);
  void log(const std::string& event, const std::string& detail) const;

  std::string name_;
  log_sink log_;
  mutable std::mutex mutex_; ///< configure, take, eject, view: never a pick
  std::shared_ptr<const settings> settings_; ///< under mutex_; picks read `live_`
  /// The set in force: read and replaced only through std::atomic_load / atomic_store (C++17's
  /// atomic operations on a shared_ptr), so a pick holds the set it reads.
  std::shared_ptr<const endpoint_set> live_;
  std::shared_ptr<const endpoint_set> live() const {
    return std::atomic_load_explicit(&live_, std::memory_order_acquire);
  }
  std::vector<std::shared_ptr<upstream_endpoint>> leaving_; ///< until their calls have ended
  std::shared_ptr<const call_target> nowhere_;
  std::atomic<std::uint64_t> rr_next_{0};
  std::atomic<bool> panic_{false};
  std::atomic<std::uint64_t> ejections_{0};
  std::atomic<std::uint64_t> lookups_[3] = {{0}, {0}, {0}};
  std::atomic<std::uint64_t> probes_[3] = {{0}, {0}, {0}};
  std::atomic<std::int64_t> last_lookup_ms_{0};
  std::atomic<int> last_lookup_{-1};
  std::uint32_t next_id_ = 1; ///< under mutex_
  /// The live settings a pick and a report read (atomics: a reload changes them under calls).
  std::atomic<int> balance_{0};
  std::atomic<std::int32_t> consecutive_failures_{5};
  std::atomic<std::int64_t> eject_ms_{30000};
  std::atomic<std::int32_t> max_ejected_percent_{50};
};

/// The endpoint as an `endpoint_lookup` finds it for an `endpoints` entry of an IP literal.
std::vector<found_endpoint> literal_endpoints(const upstream_config& cfg);

/// The smooth weighted round-robin order of `weights` (nginx's; at most 1000 of 1..100 each): one
/// turn, as long as their sum, of indices into them.
std::vector<std::uint16_t> smooth_schedule(const std::vector<std::uint32_t>& weights);

/// The retry budget's and the logs' name for an endpoint: "address:port", "[v6]:port".
std::string endpoint_text(const std::string& address, std::uint16_t port);

} // namespace gather
