// The HTTP/1.1 client of one event loop (loop_client.hpp is the loop's face, h2_client.hpp its
// HTTP/2 side): its running transfers, each from a connection taken from the loop's pool
// (pool/loop_pool.hpp: the ready HTTP/1.1 links) or made, through its request and its answer, to
// its completion and the connection given back. Only the loop's thread touches any of it.
// Private to app/downstream/.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <ostream> // boost/core/detail/string_view.hpp (1.81) uses std::ostream without including it
#include <boost/asio/steady_timer.hpp>

#include "gather/downstream/call/downstream_client.hpp"
#include "gather/downstream/pool/name_lookups.hpp"
#include "gather/downstream/h1/response_reading.hpp"
#include "gather/downstream/call/url_split.hpp"

#include "gather/downstream/call/call_deadlines.hpp"
#include "call/inflight_ticket.hpp"
#include "pool/loop_pool.hpp"

namespace gather::downstream_loop {

namespace http = boost::beast::http;

/// An `http2` transfer to an https origin whose protocol its pool does not know yet: it waits as a
/// transfer (its timer, its ticket, its cancel) until the ALPN answer on the connection it made
/// (the probe), or on the one another such transfer made, says which protocol it goes on.
struct alpn_offer {
  transfer_request request;                     ///< for the HTTP/2 call it becomes if h2 is chosen
  std::chrono::steady_clock::time_point started; ///< what is left of its timeout then
  bool probing = false; ///< its connection is the probe (else it waits for another's)
};

/// Who is told by the HTTP/1.1 client that a probe's ALPN chose h2 (h1_alpn.cpp); an answer of
/// http/1.1 it files in the pool itself.
class alpn_choice {
public:
  /// A transfer that waited for the answer, going on as an HTTP/2 call: the rest of its timeout,
  /// its hedge if that has not come yet, its completion and its ticket.
  struct h2_bound {
    std::uint64_t id;
    transfer_request request;
    downstream_client::completion done;
    inflight_ticket ticket;
  };
  /// The server chose h2: the connection is an HTTP/2 link now, and the transfers are its calls.
  virtual void chose_h2(std::unique_ptr<origin_connection> conn, const origin_and_target& where,
                        std::vector<h2_bound> transfers) = 0;

protected:
  ~alpn_choice() = default;
};

/// One running transfer.
struct transfer {
  std::uint64_t id = 0;
  origin_and_target where;
  std::string request_bytes;
  std::size_t max_body_bytes = 0;
  downstream_client::completion done;
  inflight_ticket ticket; ///< let go by finish(), a cancel or the client's end
  call_due due;           ///< its place among the loop's deadlines (one bound: connect, send, body)
  std::unique_ptr<origin_connection> conn;
  std::optional<response_parser> parser;
  std::size_t head_bytes = 0; ///< taken by the parser until the head was whole
  bool reused = false;  ///< the connection came from the pool
  bool resent = false;  ///< already sent once more on a new connection
  bool connecting = false; ///< connect() returned before the handshake was known to be complete
  bool finished = false;
  std::unique_ptr<alpn_offer> offer; ///< while ALPN may still make it an HTTP/2 call
};

/// The running HTTP/1.1 transfers of one event loop.
class h1_client {
public:
  /// `tls_h2`: the TLS context whose ALPN offers h2 then http/1.1, for a transfer that offers h2;
  /// `choice`: who is told that ALPN chose h2.
  h1_client(asio::io_context& loop, name_lookups& lookups, asio::ssl::context& tls, asio::ssl::context& tls_h2,
            downstream_pool& pool, alpn_choice& choice)
    : loop_(loop), lookups_(lookups), tls_(tls), tls_h2_(tls_h2), pool_(pool), choice_(choice), sweep_(loop),
      deadlines_(loop, [this](std::uint64_t id, call_deadlines::step what) { came_due(id, what); }) {}

  /// The loop has stopped (or never ran): nothing runs any more.
  ~h1_client() {
    for (auto& [id, t] : running_) {
      t->finished = true;
      t->ticket.release(); // (a handler the loop never ran may hold the transfer a while longer)
      if (t->conn)
        t->conn->close();
    }
  }

  asio::io_context& loop() { return loop_; }

  /// `offer_h2` (an https origin): its new connection offers h2 by ALPN, and the answer decides
  /// whether it goes on here or as an HTTP/2 call (alpn_choice); one such connection per origin at
  /// a time, the other transfers that offer h2 wait for its answer.
  void start(std::uint64_t id, transfer_request&& request, downstream_client::completion&& done, inflight_ticket ticket,
             bool offer_h2 = false);

  void abandon(std::uint64_t id);

  /// A connection joins the ready list of its pool key after an answer (`reusable`: it allows
  /// keep-alive and nothing follows it). Its link machine decides (h1_link.hpp): closed now when
  /// it drains (not reusable, its endpoint left, older than max_connection_age_ms), or when the
  /// loop holds downstream_max_idle_connections, else after its idle bound.
  void give_back(std::unique_ptr<origin_connection> conn, bool reusable);

private:
  /// Some endpoint left its upstream since the last look (retire_epoch.hpp): its ready
  /// connections close now.
  void close_retired();
  /// The ready lists' one timer: at the earliest next check of a ready link's machine (its idle
  /// bound, its max age), every link then due is closed.
  void sweep_later(std::chrono::steady_clock::time_point at);
  void sweep();
  /// A running transfer's slow point or timeout (call_deadlines.hpp).
  void came_due(std::uint64_t id, call_deadlines::step what);
  /// An idle connection of its key, else a new one.
  void reuse_or_connect(const std::shared_ptr<transfer>& t);
  void connect(const std::shared_ptr<transfer>& t);

  // ---- offering h2 by ALPN (h1_alpn.cpp) -------------------------------------------------------
  /// The transfer's timer (its hedge shared with the HTTP/2 call it may become), then the probe:
  /// its own connection, or a wait for the one in flight to its origin.
  void start_offering(const std::shared_ptr<transfer>& t, transfer_request&& request, std::chrono::microseconds timeout);
  /// The probe's handshake is done: what its ALPN chose decides where it and the waiting go.
  void alpn_answered(const std::shared_ptr<transfer>& t);
  /// The probe ended without an answer (failed, timed out, cancelled): the next waiting transfer
  /// makes the next probe.
  void probe_lost(const std::string& key);
  /// A plain connection to an address: the request goes out right after the non-blocking connect.
  /// To a peer on this host the kernel completes the handshake inside connect(), and the send
  /// needs no wait; to another host the send finds the socket not yet writable, and Asio's write
  /// waits for it as its connect would have (the same number of system calls). Saved per new
  /// local connection: the connect operation's epoll_ctl for writability, its wake-up, its poll
  /// and getsockopt.
  void connect_and_send(const std::shared_ptr<transfer>& t, const tcp::endpoint& endpoint);
  void connected(const std::shared_ptr<transfer>& t, const error_code& ec);

  template <class F>
  void with_stream(origin_connection& conn, F f) {
    if (conn.tls_stream)
      f(*conn.tls_stream);
    else
      f(conn.socket);
  }

  void send(const std::shared_ptr<transfer>& t);

  /// Reads the answer with the socket's own reads and Beast's parser: the head first, held to its
  /// cap (head_within_cap), then the body, parsed as the bytes come. (Beast's async_read_header and
  /// async_read cost two composed operations and two posts per call, where one read usually
  /// brings the whole answer.)
  void receive(const std::shared_ptr<transfer>& t);
  void read_some(const std::shared_ptr<transfer>& t);
  /// Parses what the connection's buffer holds; then reads more, or ends the transfer.
  void parse(const std::shared_ptr<transfer>& t);

  /// Nothing of an answer arrived on a connection that came from the pool: the server closed it
  /// while idle. Sent once more on a new connection; any other failure is the transfer's.
  void lost_connection(const std::shared_ptr<transfer>& t, const error_code& ec);
  void read_failed(const std::shared_ptr<transfer>& t, const error_code& ec);
  void answered(const std::shared_ptr<transfer>& t);
  void fail(transfer& t, transfer_error error, std::string detail);

  /// The transfer leaves the running set; its completion is run by the caller, last.
  void finish(transfer& t);

  asio::io_context& loop_;
  name_lookups& lookups_;
  asio::ssl::context& tls_;
  asio::ssl::context& tls_h2_;
  downstream_pool& pool_; ///< the loop's: ready links, probes, what ALPN chose (a busy link is its transfer's)
  alpn_choice& choice_;
  std::unordered_map<std::uint64_t, std::shared_ptr<transfer>> running_;
  asio::steady_timer sweep_;
  std::optional<std::chrono::steady_clock::time_point> sweep_at_; ///< when the timer is armed for
  std::uint64_t retire_seen_ = 0; ///< the retire_epoch() this loop's pools last acted on
  call_deadlines deadlines_; ///< the running transfers' (its due function reads running_)
};

} // namespace gather::downstream_loop
