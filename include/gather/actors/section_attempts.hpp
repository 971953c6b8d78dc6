// What a section worker starts and must end, each an object that ends itself (RAII): whatever
// ends the worker (its answer, its coordinator's end, a kill), the state goes and these clean up.
//
//   attempt_runner  (attempt_runner.hpp) the attempts run here: cancels the calls still
//                   running (their connections close, their spans end "cancelled", their
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

namespace gather {

class cluster;
class metrics;

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
