#include "gather/cluster/cluster.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <nlohmann/json.hpp>

#include "gather/values/atoms.hpp"
#include "gather/ops/request_log.hpp"

namespace gather {

namespace {

void log_node_event(const std::string& node, const std::string& event, const std::string& detail = {}) {
  nlohmann::json line = {{"event", event}, {"node", node}};
  if (!detail.empty())
    line["detail"] = detail;
  write_log_line(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

} // namespace

struct cluster::node_slot {
  std::string address;
  std::atomic<bool> up{false};
  std::atomic<std::int64_t> inflight{0};
  std::atomic<std::uint64_t> work{0};
  mutable std::mutex mutex;
  caf::actor actor; ///< the node's service actor while it is up

  void set(caf::actor a) {
    std::lock_guard<std::mutex> guard{mutex};
    actor = std::move(a);
    up = true;
  }
  void clear() {
    std::lock_guard<std::mutex> guard{mutex};
    up = false;
    actor = nullptr;
  }
  caf::actor get() const {
    std::lock_guard<std::mutex> guard{mutex};
    return actor;
  }
};

cluster::cluster(caf::actor_system& system, cluster_config cfg) : system_(system), cfg_(std::move(cfg)) {
  for (const auto& address : cfg_.nodes) {
    slots_.push_back(std::make_unique<node_slot>());
    slots_.back()->address = address;
  }
  for (std::size_t i = 0; i < slots_.size(); ++i)
    links_.emplace_back([this, i] { link(i); });
}

cluster::~cluster() {
  {
    std::lock_guard<std::mutex> guard{stop_mutex_};
    stopping_ = true;
  }
  stop_cv_.notify_all();
  for (auto& t : links_)
    t.join();
}

/// Asks the node for its protocol version: empty when it speaks ours, else why not.
/// The scoped actor must not outlive this exchange: CAF 0.17's clock later delivers the request's
/// timeout to it with the actor itself as sender, a blocking actor skips that stale response, and
/// skipped messages are never drained at cleanup, so the actor would hold itself (LeakSanitizer:
/// 704 bytes per connection that stayed up longer than the timeout). Gone by then, it drops it.
std::string cluster::handshake(const caf::actor& node) {
  caf::scoped_actor self{system_};
  std::int32_t theirs = -1;
  std::string failure;
  self->request(node, node_hello_timeout, hello_atom::value, cluster_protocol_version)
    .receive([&](hello_atom, std::int32_t version) { theirs = version; },
             [&](caf::error& err) { failure = "no hello: " + system_.render(err); });
  if (failure.empty() && theirs != cluster_protocol_version)
    failure = "refused: protocol version " + std::to_string(theirs) + ", this gateway speaks " +
              std::to_string(cluster_protocol_version);
  return failure;
}

/// Connect, check the protocol version, watch until down, back off, again: until the cluster stops.
void cluster::link(std::size_t i) {
  auto& slot = *slots_[i];
  const auto address = split_host_port(slot.address);
  auto backoff = node_reconnect_first;
  std::string last_failure;
  auto stopped = [this] {
    std::lock_guard<std::mutex> guard{stop_mutex_};
    return stopping_;
  };
  while (!stopped()) {
    auto node = system_.middleman().remote_actor(address->first, static_cast<std::uint16_t>(address->second));
    std::string failure;
    if (!node) {
      failure = "cannot connect: " + system_.render(node.error());
    } else {
      failure = handshake(*node);
      if (failure.empty()) {
        // A scoped actor of its own: see handshake().
        caf::scoped_actor self{system_};
        self->monitor(*node);
        slot.set(*node);
        log_node_event(slot.address, "node_up");
        backoff = node_reconnect_first;
        last_failure.clear();
        for (bool down = false; !down && !stopped();)
          self->receive([&](caf::down_msg&) { down = true; },
                        caf::after(std::chrono::milliseconds(200)) >> [] {});
        slot.clear();
        log_node_event(slot.address, "node_down");
      }
    }
    if (!failure.empty() && failure != last_failure) { // log each new reason once, not every retry
      log_node_event(slot.address, "node_unavailable", failure);
      last_failure = failure;
    }
    std::unique_lock<std::mutex> lock{stop_mutex_};
    stop_cv_.wait_for(lock, backoff, [this] { return stopping_; });
    backoff = std::min(backoff * 2, node_reconnect_cap);
  }
}

cluster::placement cluster::place() {
  std::optional<std::size_t> best;
  std::int64_t best_load = 0;
  std::uint64_t best_work = 0;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!slots_[i]->up.load())
      continue;
    // Fewest in flight; among equals the one that got the least work so far, so idle nodes alternate.
    auto load = slots_[i]->inflight.load();
    auto work = slots_[i]->work.load();
    if (!best || load < best_load || (load == best_load && work < best_work)) {
      best = i;
      best_load = load;
      best_work = work;
    }
  }
  // This process competes on the same terms when `local`, and takes everything when no node is up.
  if (!best || (cfg_.local && std::make_pair(local_inflight_.load(), local_work_.load()) <=
                                std::make_pair(best_load, best_work)))
    return {};
  auto actor = slots_[*best]->get();
  if (!actor)
    return {};
  return {best, std::move(actor)};
}

void cluster::started(std::size_t node) {
  slots_[node]->inflight.fetch_add(1);
  slots_[node]->work.fetch_add(1);
}

void cluster::ended(std::size_t node) {
  slots_[node]->inflight.fetch_sub(1);
}

void cluster::lost(std::size_t node) {
  slots_[node]->up = false; // the link thread sees the same down message and reconnects
}

void cluster::local_started() {
  local_inflight_.fetch_add(1);
  local_work_.fetch_add(1);
}

void cluster::local_ended() {
  local_inflight_.fetch_sub(1);
}

std::vector<node_view> cluster::nodes() const {
  std::vector<node_view> views;
  for (const auto& slot : slots_)
    views.push_back({slot->address, slot->up.load(), slot->inflight.load(), slot->work.load()});
  return views;
}

const std::string& cluster::address(std::size_t node) const {
  return slots_[node]->address;
}

} // namespace gather
