// The section worker's RAII holds (section_attempts.hpp): a remote run, a local run, a probe.
#include "gather/actors/section_attempts.hpp"

#include <algorithm>
#include <utility>

#include "gather/cluster/cluster.hpp"
#include "gather/ops/metrics.hpp"

namespace gather {

remote_run::remote_run(cluster& nodes, std::size_t node, caf::actor actor,
                       concurrency_limit::slot slot)
  : nodes_(nodes), node_(node), actor_(std::move(actor)), slot_(std::move(slot)) {
  nodes_.started(node_);
}

remote_run::~remote_run() {
  nodes_.ended(node_);
}

const std::string& remote_run::address() const {
  return nodes_.address(node_);
}

local_run::local_run(cluster& nodes) : nodes_(nodes) {
  nodes_.local_started();
}

local_run::~local_run() {
  nodes_.local_ended();
}

circuit_probe& circuit_probe::operator=(circuit_probe&& other) noexcept {
  if (this != &other) {
    end(false);
    circuit_ = std::exchange(other.circuit_, nullptr);
    counters_ = other.counters_;
    route_ = other.route_;
    index_ = other.index_;
  }
  return *this;
}

void circuit_probe::end(bool ok) {
  if (auto* circuit = std::exchange(circuit_, nullptr))
    counters_->circuit_moved(route_, index_, circuit->probe_ended(ok, std::chrono::steady_clock::now()));
}

} // namespace gather
