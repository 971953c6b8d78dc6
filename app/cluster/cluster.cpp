#include "gather/cluster/cluster.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <nlohmann/json.hpp>

#include <set>
#include <sys/socket.h>
#include <unistd.h>

#include "gather/cluster/cluster_transport.hpp"
#include "gather/values/atoms.hpp"
#include "gather/values/reconnect_backoff.hpp"
#include "gather/ops/request_log.hpp"

// A dialled socket travels from its loop to its link in a local message only.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<gather::owned_socket>)

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

namespace {

using dial_atom = caf::atom_constant<caf::atom("dial")>;     ///< link -> itself: try the node now
using dialed_atom = caf::atom_constant<caf::atom("dialed")>; ///< the dial's completion -> link

/// One node's link. Every step is a message or a timer: the dial runs on an event loop, the
/// middleman's handshake and the version check are requests with timeouts; nothing blocks.
struct link_state {
  cluster* owner = nullptr;
  std::size_t index = 0;
  std::string host;
  std::uint16_t port = 0;
  reconnect_backoff backoff{node_reconnect_first, node_reconnect_cap};
  std::string last_failure;
  caf::actor node;
  /// A second descriptor of the connection while its handshakes run: shutting it down makes the
  /// middleman drop a connection whose handshake failed or never ended.
  int handshake_fd = -1;
  std::shared_ptr<handshake_note> note;
  ~link_state() {
    if (handshake_fd >= 0)
      ::close(handshake_fd);
  }
  static inline const char* name = "cluster_link";
};

using link_actor = caf::stateful_actor<link_state>*;

void end_handshake(link_actor self, bool drop_connection) {
  auto& st = self->state;
  if (st.handshake_fd < 0)
    return;
  if (drop_connection)
    ::shutdown(st.handshake_fd, SHUT_RDWR);
  ::close(st.handshake_fd);
  st.handshake_fd = -1;
}

/// The attempt failed: log a reason not logged just before, try again after the backoff.
void failed(link_actor self, std::string why) {
  auto& st = self->state;
  end_handshake(self, true);
  const auto& address = st.owner->slot(st.index).address;
  if (why != st.last_failure) { // each new reason once, not every retry
    log_node_event(address, "node_unavailable", why);
    st.last_failure = why;
  }
  self->delayed_send(self, st.backoff.next(), dial_atom::value);
}

void node_up(link_actor self, caf::actor node) {
  auto& st = self->state;
  end_handshake(self, false);
  self->monitor(node);
  st.node = node;
  st.owner->slot(st.index).set(std::move(node));
  log_node_event(st.owner->slot(st.index).address, "node_up");
  st.backoff.reset();
  st.last_failure.clear();
}

/// The middleman connected: is the node's published actor there, and does it speak our version?
void check_version(link_actor self, caf::strong_actor_ptr published) {
  auto& st = self->state;
  if (!published)
    return failed(self, "no actor published at " + st.owner->slot(st.index).address);
  auto node = caf::actor_cast<caf::actor>(published);
  self->request(node, node_hello_timeout, hello_atom::value, cluster_protocol_version)
    .then(
      [self, node](hello_atom, std::int32_t theirs) {
        if (theirs != cluster_protocol_version)
          return failed(self, "refused: protocol version " + std::to_string(theirs) +
                                ", this gateway speaks " + std::to_string(cluster_protocol_version));
        node_up(self, node);
      },
      [self](caf::error& err) { failed(self, "no hello: " + self->system().render(err)); });
}

/// The TCP connection stands: the middleman runs BASP's handshake (after TLS's, with `tls`).
void hand_over(link_actor self, std::shared_ptr<owned_socket> socket) {
  auto& st = self->state;
  const bool tls = st.owner->cfg().tls.has_value();
  st.handshake_fd = ::dup(socket->fd);
  st.note = std::make_shared<handshake_note>();
  auto scribe = link_scribe(self->system(), socket->release(), tls, st.note);
  if (!scribe)
    return failed(self, "TLS handshake failed: " + st.note->get());
  self->request(basp_broker_of(self->system()), node_hello_timeout, caf::connect_atom::value,
                std::move(scribe), st.port)
    .then(
      [self](caf::node_id&, caf::strong_actor_ptr& published, std::set<std::string>&) {
        check_version(self, std::move(published));
      },
      [self](caf::error& err) {
        const auto tls_reason = self->state.note->get();
        failed(self, tls_reason.empty() ? "no handshake: " + self->system().render(err)
                                        : "TLS handshake failed: " + tls_reason);
      });
}

caf::behavior node_link(link_actor self, cluster* owner, std::size_t index) {
  auto& st = self->state;
  st.owner = owner;
  st.index = index;
  const auto address = split_host_port(owner->slot(index).address);
  st.host = address->first;
  st.port = static_cast<std::uint16_t>(address->second);
  self->set_down_handler([self](caf::down_msg& down) {
    auto& st = self->state;
    if (!st.node || down.source != st.node.address())
      return;
    st.node = nullptr;
    st.owner->slot(st.index).clear();
    log_node_event(st.owner->slot(st.index).address, "node_down");
    self->delayed_send(self, st.backoff.next(), dial_atom::value);
  });
  self->send(self, dial_atom::value);
  return {
    [self](dial_atom) {
      auto& st = self->state;
      // A weak handle: a dial that ends after the link (or the whole actor system) is gone only
      // closes its socket.
      auto me = caf::actor_cast<caf::weak_actor_ptr>(self);
      dial(st.owner->loop(), st.host, st.port, st.owner->cfg().connect_timeout,
           [me](std::shared_ptr<owned_socket> socket, std::string why) {
             if (auto link = caf::actor_cast<caf::actor>(me))
               caf::anon_send(link, dialed_atom::value, std::move(socket), std::move(why));
           });
    },
    [self](dialed_atom, std::shared_ptr<owned_socket>& socket, std::string& why) {
      if (!socket)
        return failed(self, why);
      hand_over(self, std::move(socket));
    },
  };
}

} // namespace

cluster::cluster(caf::actor_system& system, cluster_config cfg, boost::asio::io_context& loop)
  : system_(system), cfg_(std::move(cfg)), loop_(&loop) {
  for (const auto& address : cfg_.nodes) {
    slots_.push_back(std::make_unique<node_slot>());
    slots_.back()->address = address;
  }
  for (std::size_t i = 0; i < slots_.size(); ++i)
    links_.push_back(system_.spawn(node_link, this, i));
}

cluster::cluster(caf::actor_system& system) : system_(system) {
}

/// The links point at this object: it goes only once they have stopped (a message on their loop,
/// never a wait for a connect).
cluster::~cluster() {
  if (links_.empty())
    return;
  caf::scoped_actor self{system_};
  for (auto& link : links_)
    self->send_exit(link, caf::exit_reason::user_shutdown);
  for (auto& link : links_)
    self->wait_for(link);
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
