// The downstream HTTP client's face (downstream_client.hpp): any thread submits or cancels a
// transfer or a call by posting it to the loop its id names; everything else runs on that loop
// (loop_client.hpp: the loop's face; h1_client.hpp and h2_client.hpp behind it).
#include "gather/downstream/call/downstream_client.hpp"

#include <atomic>
#include <memory>
#include <vector>

#include <boost/asio/post.hpp>

#include "gather/runtime/io_loops.hpp"

#include "call/inflight_ticket.hpp"
#include "call/loop_client.hpp"

namespace gather {

namespace asio = boost::asio;
using downstream_loop::inflight_ticket;
using downstream_loop::loop_client;
using downstream_loop::make_client_tls;

struct downstream_client::impl {
  std::unique_ptr<io_loops> own_loops; ///< only when the client runs loops of its own
  io_loops& loops;
  std::atomic<std::uint64_t> next_id{1};
  /// Before the clients (their destructors release their calls' tickets into it); shared with a
  /// posted call's ticket, which a loop that never ran it destroys after this client
  /// (inflight_ticket.hpp).
  std::shared_ptr<inflight_ticket::count> inflight = std::make_shared<inflight_ticket::count>(0);
  std::atomic<std::size_t> queued{0};
  std::unique_ptr<asio::ssl::context> tls;           ///< https downstreams: verify peer and name
  std::unique_ptr<asio::ssl::context> tls_h2;        ///< the same, with ALPN offering h2
  name_lookups lookups; ///< before the clients: its threads are joined after they are gone
  std::vector<std::unique_ptr<loop_client>> clients; ///< one per loop

  impl(std::unique_ptr<io_loops> own, io_loops& l, const pool_bounds& bounds) : own_loops(std::move(own)), loops(l) {
    tls = make_client_tls();
    tls_h2 = make_client_tls(true);
    for (std::size_t i = 0; i < loops.size(); ++i)
      clients.push_back(std::make_unique<loop_client>(loops.loop(i), lookups, *tls, *tls_h2, bounds));
    if (own_loops)
      own_loops->start();
  }

  ~impl() {
    if (own_loops)
      own_loops->stop();
  }

  /// Ids carry their loop: id % loops.
  loop_client& client_of(std::uint64_t id) { return *clients[id % clients.size()]; }

  /// Ids carry their loop (id % loops). A call made on one of the loops stays on it and starts
  /// now: the worker, its call and the answer's read share one thread, and the call costs no
  /// posted handler (a turn of the loop, with an epoll_wait, before it is sent). From elsewhere
  /// the loops take calls in turn. `start` is the loop client's way in for the call's kind
  /// (loop_client::start for a transfer, ::call for a call with events): on this thread's loop
  /// the request and its `then` are passed on by reference, moved into a closure only when the
  /// call is posted to another loop. The call holds its ticket until its completion runs, its
  /// cancel, or its loop's client goes.
  template <class Start, class Request, class Then>
  std::uint64_t launch(Start start, Request& request, Then& then) {
    const std::uint64_t seq = next_id++;
    const std::size_t count = clients.size();
    const auto here = loops.current();
    const std::size_t loop = here ? *here : seq % count;
    const std::uint64_t id = seq * count + loop;
    auto& client = client_of(id);
    if (here) {
      (client.*start)(id, std::move(request), std::move(then), inflight_ticket{*inflight});
      return id;
    }
    ++queued;
    asio::post(client.loop(), [this, &client, id, start, request = std::move(request), then = std::move(then),
                               ticket = inflight_ticket{inflight}]() mutable {
      --queued;
      (client.*start)(id, std::move(request), std::move(then), std::move(ticket));
    });
    return id;
  }
};

namespace {
std::unique_ptr<io_loops> one_loop() { return std::make_unique<io_loops>(1); }
} // namespace

downstream_client::downstream_client() {
  auto own = one_loop();
  auto& loops = *own;
  impl_ = std::make_unique<impl>(std::move(own), loops, pool_bounds{});
}

downstream_client::downstream_client(io_loops& loops, pool_bounds bounds)
  : impl_(std::make_unique<impl>(nullptr, loops, bounds)) {}

downstream_client::~downstream_client() = default;

std::uint64_t downstream_client::submit(transfer_request&& request, completion&& done) {
  return impl_->launch(&loop_client::start, request, done);
}

std::uint64_t downstream_client::call(stream_request request, std::shared_ptr<stream_events> events) {
  return impl_->launch(&loop_client::call, request, events);
}

void downstream_client::cancel(std::uint64_t id) {
  auto& im = *impl_;
  auto& client = im.client_of(id);
  // Posted even from the transfer's own loop: a cancel is never urgent (its request is answered),
  // and an answer that comes before the loop takes it is still counted as a late reply
  // (docs/actors.md), which the tests rely on to see that path work.
  ++im.queued;
  asio::post(client.loop(), [im = impl_.get(), &client, id] {
    --im->queued;
    client.abandon(id);
  });
}

std::size_t downstream_client::inflight() const { return impl_->inflight->load(); }

std::size_t downstream_client::queued() const { return impl_->queued.load(); }

std::optional<std::string> url_origin(const std::string& url) {
  auto where = split_url(url);
  if (!where)
    return std::nullopt;
  return where->origin->key;
}

} // namespace gather
