// What a section worker starts and must end, each an object that ends itself (RAII): whatever
// ends the worker (its answer, its coordinator's end, a kill), the state goes and these clean up.
//
//   hedged_attempt  an attempt run here: its calls (the first and its hedges); cancels those
//                   still running (their connections close, their spans end "cancelled", their
//                   bulkhead slots go back)
//   remote_run      an attempt run on a cluster node: counted on that node, holding its slot
//   local_run       a section run here while the cluster has nodes: counted in this process's share
//   circuit_probe   the circuit's half-open probe: ended as failed if its section ends first
//   live_count      one live actor in a process-wide gauge
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/actor.hpp>

#include "gather/config/config.hpp"
#include "gather/resilience/circuit_breaker.hpp"
#include "gather/resilience/concurrency_limit.hpp"
#include "gather/tracing/call_span.hpp"

namespace gather {

class cluster;
class downstream_client;
class metrics;

/// One downstream call of an attempt (the first call, or a hedge).
struct running_call {
  std::uint32_t seq = 0;      ///< tells its completion from another call's
  std::uint64_t transfer = 0; ///< the client's id
  steady_time started;
  call_span span;             ///< its CLIENT span: hedges and retries each have their own
  concurrency_limit::slot slot; ///< its place in the route section's bulkhead, while it runs
};

/// An attempt run here: its calls, the first and then its hedges; the first ok wins.
class hedged_attempt {
public:
  hedged_attempt() = default; ///< none yet
  hedged_attempt(downstream_client& client, std::uint32_t number, steady_time started)
    : client_(&client), number_(number), started_(started) {}
  hedged_attempt(hedged_attempt&& other) noexcept;
  hedged_attempt& operator=(hedged_attempt&& other) noexcept; ///< cancels this one's calls first
  hedged_attempt(const hedged_attempt&) = delete;
  hedged_attempt& operator=(const hedged_attempt&) = delete;
  ~hedged_attempt() { cancel(); }

  std::uint32_t number() const { return number_; } ///< a hedge timer names its attempt
  steady_time started() const { return started_; }
  std::int32_t calls_made() const { return calls_made_; }
  bool running() const { return !calls_.empty(); }
  /// True when call `seq` was a hedge, not the attempt's first call.
  bool is_hedge(std::uint32_t seq) const { return seq != first_; }

  /// Counts call `seq` as made (before it is submitted: its hedge delay depends on the count).
  void count_call(std::uint32_t seq);
  /// Call `seq` has been submitted: it runs, holding `slot`, until end_call() or cancel(). Made in
  /// place, its span moved once: a running_call carries the span's strings, which every move of
  /// it copies (three moves a call before, ~1k instructions of a four-section request).
  void add(std::uint32_t seq, std::uint64_t transfer, steady_time started, call_span&& span,
           concurrency_limit::slot&& slot);
  /// Call `seq` ended: taken out of the attempt, its start and span handed over, its slot given
  /// back. False when it is no longer running (cancelled while its answer was already on the way).
  bool end_call(std::uint32_t seq, steady_time& started, call_span& span);
  /// Cancels every call still running.
  void cancel();

private:
  downstream_client* client_ = nullptr;
  std::vector<running_call> calls_;
  std::uint32_t number_ = 0;
  std::uint32_t first_ = 0; ///< seq of the attempt's first call
  std::int32_t calls_made_ = 0;
  steady_time started_{};
};

/// An attempt running on a cluster node: the node counts it as in flight, and it holds the
/// attempt's bulkhead slot, until it goes.
class remote_run {
public:
  remote_run(cluster& nodes, std::size_t node, caf::actor actor, concurrency_limit::slot slot);
  remote_run(const remote_run&) = delete;
  remote_run& operator=(const remote_run&) = delete;
  ~remote_run();

  std::size_t node() const { return node_; }
  const caf::actor& actor() const { return actor_; }
  const std::string& address() const;

private:
  cluster& nodes_;
  std::size_t node_;
  caf::actor actor_;
  concurrency_limit::slot slot_;
};

/// A section run in this process while the cluster has nodes: counted in this process's share
/// (place() compares it with the nodes') until it goes.
class local_run {
public:
  explicit local_run(cluster& nodes);
  local_run(const local_run&) = delete;
  local_run& operator=(const local_run&) = delete;
  ~local_run();

private:
  cluster& nodes_;
};

/// The circuit's half-open probe, held by the section making it. Ended with its result, or as a
/// failure when the section ends first (the request ended before its probe did): the circuit
/// opens again. Each move of the circuit is counted.
class circuit_probe {
public:
  circuit_probe() = default; ///< no probe
  circuit_probe(circuit_breaker& circuit, metrics& counters, std::size_t route, std::size_t index)
    : circuit_(&circuit), counters_(&counters), route_(route), index_(index) {}
  circuit_probe(circuit_probe&& other) noexcept { *this = std::move(other); }
  circuit_probe& operator=(circuit_probe&& other) noexcept;
  circuit_probe(const circuit_probe&) = delete;
  circuit_probe& operator=(const circuit_probe&) = delete;
  ~circuit_probe() { end(false); }

  explicit operator bool() const { return circuit_ != nullptr; }
  /// The probe ended (`ok`: it succeeded); nothing when there is none.
  void end(bool ok);

private:
  circuit_breaker* circuit_ = nullptr;
  metrics* counters_ = nullptr;
  std::size_t route_ = 0;
  std::size_t index_ = 0;
};

/// One live actor in a process-wide gauge (gateway_stats), from its start to its end.
class live_count {
public:
  live_count() = default;
  explicit live_count(std::atomic<std::int64_t>& gauge) : gauge_(&gauge) {
    gauge.fetch_add(1, std::memory_order_relaxed);
  }
  live_count(live_count&& other) noexcept : gauge_(std::exchange(other.gauge_, nullptr)) {}
  live_count& operator=(live_count&& other) noexcept {
    if (this != &other) {
      reset();
      gauge_ = std::exchange(other.gauge_, nullptr);
    }
    return *this;
  }
  live_count(const live_count&) = delete;
  live_count& operator=(const live_count&) = delete;
  ~live_count() { reset(); }

private:
  void reset() {
    if (auto* gauge = std::exchange(gauge_, nullptr))
      gauge->fetch_sub(1, std::memory_order_relaxed);
  }

  std::atomic<std::int64_t>* gauge_ = nullptr;
};

} // namespace gather
