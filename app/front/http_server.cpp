#include "gather/front/http_server.hpp"

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <unordered_set>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

#include "connection.hpp"
#include "h2_connection.hpp"
#include "protocol_select.hpp"
#include "proxy_intake.hpp"
#include "gather/front/tls_context.hpp"
#include "gather/ops/request_log.hpp"

namespace gather {

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

/// After accept() fails for want of descriptors (EMFILE, ENFILE), wait this long before the next
/// try instead of spinning on a full table.
constexpr std::chrono::milliseconds accept_retry{50};
/// And say so in the log at most this often.
constexpr std::chrono::seconds accept_log_interval{1};

} // namespace

struct http_server::impl {
  const serving_config_slot& serving;
  /// The generation in force at the last accept (refreshed per accept, on the acceptor's loop).
  std::shared_ptr<const serving_config> accepting;
  io_loops& loops;
  front_shared shared;
  std::unique_ptr<asio::ssl::context> tls;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::unique_ptr<asio::steady_timer> retry_timer;
  std::chrono::steady_clock::time_point last_accept_log{};
  /// The open connections of each loop, touched only on that loop's thread.
  std::vector<std::unordered_set<connection_base*>> open;

  std::mutex mutex;
  std::condition_variable all_closed;
  bool stopped = false;

  const listener_role role;

  impl(const serving_config_slot& s, gateway_stats& stats, io_loops& l, request_dispatch& dispatch,
       listener_role r)
    : serving(s), accepting(s.current()), loops(l), shared{s, dispatch, stats}, open(l.size()), role(r) {
  }

  std::size_t loop_index(asio::io_context& loop) const {
    for (std::size_t i = 0; i < loops.size(); ++i)
      if (&loops.loop(i) == &loop)
        return i;
    return 0;
  }

  void accept() {
    auto& target = loops.next();
    acceptor->async_accept(target, [this, &target](const boost::system::error_code& ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open())
        return;
      if (ec) {
        if (ec == asio::error::no_descriptors || ec.value() == ENFILE) {
          const auto now = std::chrono::steady_clock::now();
          if (now - last_accept_log >= accept_log_interval) { // one line a second, not twenty
            last_accept_log = now;
            write_log_line(R"({"event":"accept_failed","detail":"out of file descriptors"})");
          }
          retry_timer->expires_after(accept_retry);
          retry_timer->async_wait([this](const boost::system::error_code& wait_ec) {
            if (!wait_ec)
              accept();
          });
          return;
        }
        return accept();
      }
      admit(std::move(socket), target);
      accept();
    });
  }

  /// Runs on the acceptor's loop; the connection itself is started on its own loop.
  void admit(tcp::socket socket, asio::io_context& loop) {
    auto& stats = shared.stats;
    serving.refresh(accepting);
    if (stats.connections.load(std::memory_order_relaxed) >=
        static_cast<std::int64_t>(accepting->cfg.inbound.max_connections)) {
      stats.connections_refused.fetch_add(1, std::memory_order_relaxed);
      boost::system::error_code ignored;
      socket.close(ignored);
      return;
    }
    stats.connections.fetch_add(1, std::memory_order_relaxed);
    const std::size_t index = loop_index(loop);
    asio::post(loop, [this, index, gen = accepting, socket = std::move(socket)]() mutable {
      boost::system::error_code ec;
      const auto remote = socket.remote_endpoint(ec);
      if (ec) // gone already
        return closed(index, nullptr);
      const auto peer = peer_address(remote.address());
      if (!gen->cfg.listen_proxy_protocol || role != listener_role::main)
        return begin(index, std::move(gen), peer, std::move(socket));
      if (!gen->cfg.trusted_proxies.contains(peer)) { // only a balancer may say who the client is
        shared.stats.proxy_refused.fetch_add(1, std::memory_order_relaxed);
        socket.close(ec);
        return closed(index, nullptr);
      }
      intake(index, std::move(gen), peer, std::move(socket));
    });
  }

  static ip_address peer_address(const asio::ip::address& address) {
    if (address.is_v4())
      return ip_from_bytes(address.to_v4().to_bytes().data(), 4);
    return ip_from_bytes(address.to_v6().to_bytes().data(), 16);
  }

  /// Runs on the connection's loop: the protocol is chosen next (TLS or plain).
  void begin(std::size_t index, std::shared_ptr<const serving_config> gen, const ip_address& peer,
             tcp::socket socket) {
    const auto& limits = gen->cfg.inbound;
    if (tls)
      select<asio::ssl::stream<tcp::socket>>(index, gen, limits.request_timeout, peer, std::move(socket), *tls);
    else // the first bytes of a plain connection may take as long as an idle one's next request
      select<tcp::socket>(index, gen, limits.keep_alive_idle, peer, std::move(socket));
  }

  /// Runs on the connection's loop: the PROXY protocol header first (within the request-head
  /// time limit), then the connection begins as any other, its peer the client the header names.
  void intake(std::size_t index, std::shared_ptr<const serving_config> gen, const ip_address& peer,
              tcp::socket socket) {
    auto on_close = [this, index](connection_base* conn) { closed(index, conn); };
    auto on_read = [this, index, gen, peer](proxy_intake* reader, tcp::socket&& read,
                                            std::optional<ip_address> source) {
      open[index].erase(reader);
      begin(index, gen, source.value_or(peer), std::move(read)); // LOCAL, UNKNOWN: the TCP peer
    };
    const auto& limits = gen->cfg.inbound;
    auto reader = std::make_shared<proxy_intake>(limits.request_timeout, limits.max_header_bytes,
                                                 shared.stats.proxy_refused, on_close, std::move(on_read), std::move(socket));
    open[index].insert(reader.get());
    reader->start();
  }

  /// Runs on the connection's loop: learns the protocol (protocol_select), then hands the stream
  /// to an HTTP/2 or an HTTP/1.1 connection, which takes the selector's place among the open ones.
  template <class Stream, class... StreamArgs>
  void select(std::size_t index, std::shared_ptr<const serving_config> gen, millis wait,
              const ip_address& peer, StreamArgs&&... args) {
    auto on_close = [this, index](connection_base* conn) { closed(index, conn); };
    auto on_chosen = [this, index, gen, peer, on_close](protocol_select<Stream>* selector, Stream&& stream,
                                                        std::string already_read, bool h2) {
      open[index].erase(selector);
      if (h2) {
        auto c = std::make_shared<h2_connection<Stream>>(shared, gen, peer, on_close, std::move(stream),
                                                         std::move(already_read));
        open[index].insert(c.get());
        c->start();
      } else {
        auto c = std::make_shared<connection<Stream>>(shared, gen, peer, on_close, std::move(stream));
        open[index].insert(c.get());
        c->start(already_read, true);
      }
    };
    auto selector = std::make_shared<protocol_select<Stream>>(wait, on_close, std::move(on_chosen),
                                                              std::forward<StreamArgs>(args)...);
    open[index].insert(selector.get());
    selector->start();
  }

  /// A connection has closed (`conn` null: one closed before any stage held it).
  void closed(std::size_t index, connection_base* conn) {
    if (conn)
      open[index].erase(conn);
    if (shared.stats.connections.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mutex);
      all_closed.notify_all();
    }
  }

  /// Runs `what` on every open connection of every loop, on its loop; returns once done.
  template <class F>
  void each_connection(F what) {
    loops.run_on_each([this, &what](std::size_t i) {
      const std::vector<connection_base*> now(open[i].begin(), open[i].end());
      for (auto* conn : now)
        if (open[i].count(conn))
          what(*conn);
    });
  }

  /// The longest a request may take: the front gives up on every request by then (whichever
  /// generation it began on).
  millis longest_hard_limit() const { return serving.longest_deadline() + coordinator_grace; }
};

http_server::http_server(const serving_config_slot& serving, gateway_stats& stats, io_loops& loops,
                         request_dispatch& dispatch, listener_role role)
  : impl_(std::make_unique<impl>(serving, stats, loops, dispatch, role)) {
}

http_server::~http_server() {
  stop();
}

int http_server::start(const std::string& host, int port) {
  auto& im = *impl_;
  const auto& cfg = im.accepting->cfg; // tls is restart-only: every generation has the first's
  if (cfg.tls && im.role == listener_role::main)
    im.tls = make_tls_context(*cfg.tls);
  auto& loop = im.loops.loop(0);
  boost::system::error_code ec;
  tcp::resolver resolver{loop}; // start-up only: a host name in `listen` resolves once, here
  const auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || found.empty())
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                             (ec ? ec.message() : "no address"));
  const tcp::endpoint endpoint = found.begin()->endpoint();
  im.acceptor = std::make_unique<tcp::acceptor>(loop);
  im.retry_timer = std::make_unique<asio::steady_timer>(loop);
  im.acceptor->open(endpoint.protocol(), ec);
  if (!ec)
    im.acceptor->set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec)
    im.acceptor->bind(endpoint, ec);
  if (!ec)
    im.acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                             ec.message());
  const int bound = im.acceptor->local_endpoint().port();
  asio::post(loop, [&im] { im.accept(); });
  return bound;
}

void http_server::stop() {
  auto& im = *impl_;
  if (!im.acceptor || im.stopped)
    return;
  im.stopped = true;
  im.shared.draining.store(true);
  im.loops.run_on_each([&im](std::size_t i) {
    if (i != 0)
      return;
    boost::system::error_code ignored;
    im.acceptor->close(ignored);
    im.retry_timer->cancel();
  });
  im.each_connection([](connection_base& conn) { conn.drain(); });
  {
    std::unique_lock<std::mutex> lock(im.mutex);
    const auto limit = std::chrono::steady_clock::now() + im.longest_hard_limit() + linger_limit;
    im.all_closed.wait_until(lock, limit, [&im] { return im.shared.stats.connections.load() == 0; });
  }
  im.each_connection([](connection_base& conn) { conn.force_close(); });
  // The loops run on after the server is gone (the actors live on them): let every handler that
  // still names the server (the acceptor's last, connections just accepted) run first.
  im.loops.run_on_each([](std::size_t) {});
  im.loops.run_on_each([](std::size_t) {});
}

} // namespace gather
