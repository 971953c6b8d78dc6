#include "gather/actors/section_attempts.hpp"

#include <algorithm>
#include <utility>

#include "gather/cluster/cluster.hpp"
#include "gather/downstream/call/downstream_client.hpp"
#include "gather/ops/metrics.hpp"

namespace gather {

hedged_attempt::hedged_attempt(hedged_attempt&& other) noexcept
  : client_(other.client_),
    calls_(std::move(other.calls_)),
    number_(other.number_),
    first_(other.first_),
    calls_made_(other.calls_made_),
    started_(other.started_) {
  other.calls_.clear();
}

hedged_attempt& hedged_attempt::operator=(hedged_attempt&& other) noexcept {
  if (this != &other) {
    cancel();
    client_ = other.client_;
    calls_ = std::move(other.calls_);
    other.calls_.clear();
    number_ = other.number_;
    first_ = other.first_;
    calls_made_ = other.calls_made_;
    started_ = other.started_;
  }
  return *this;
}

void hedged_attempt::count_call(std::uint32_t seq) {
  if (calls_made_++ == 0)
    first_ = seq;
}

void hedged_attempt::add(std::uint32_t seq, std::uint64_t transfer, steady_time started,
                         call_span&& span, concurrency_limit::slot&& slot) {
  auto& call = calls_.emplace_back();
  call.seq = seq;
  call.transfer = transfer;
  call.started = started;
  call.span = std::move(span);
  call.slot = std::move(slot);
}

bool hedged_attempt::end_call(std::uint32_t seq, steady_time& started, call_span& span) {
  auto it = std::find_if(calls_.begin(), calls_.end(),
                         [seq](const running_call& c) { return c.seq == seq; });
  if (it == calls_.end())
    return false;
  started = it->started;
  span = std::move(it->span);
  calls_.erase(it); // its slot goes back
  return true;
}

void hedged_attempt::cancel() {
  for (auto& call : calls_) {
    client_->cancel(call.transfer);
    call.span.cancel();
  }
  calls_.clear(); // their slots go back
}

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
