// One event loop's side of the downstream client (downstream_client.cpp is the side other threads
// call): the face a transfer or a call meets on its loop, and the owner of the loop's one pool
// (pool/loop_pool.hpp: per origin both protocols' links, the ALPN probe, what ALPN chose), which
// both clients work on. A transfer goes to the HTTP/1.1 client (h1_client.hpp), or with `http2`
// to the HTTP/2 client (h2_client.hpp) through a collector that turns the call's events into the
// transfer's result. An `http2` transfer to an https origin whose HTTP/2 links have no room (or
// that has none) makes its new connection through the HTTP/1.1 client with ALPN offering h2:
// h2, the connection becomes a link of the HTTP/2 client and the transfers that waited for it its
// calls (alpn_choice, here); http/1.1, the pool remembers it a while (downstream_alpn_memory_ms)
// and the transfers stay HTTP/1.1 ones. Only the loop's thread touches any of it. Private to
// app/downstream/.
#pragma once

#include "call/inflight_ticket.hpp"
#include "h1/h1_client.hpp"
#include "h2/h2_client.hpp"
#include "pool/loop_pool.hpp"

namespace gather::downstream_loop {

class loop_client final : private alpn_choice {
public:
  loop_client(asio::io_context& loop, name_lookups& lookups, asio::ssl::context& tls, asio::ssl::context& tls_h2,
              const pool_bounds& bounds);

  asio::io_context& loop() { return loop_; }

  /// A transfer, counted in flight by its ticket: HTTP/1.1, or HTTP/2 with request.http2.
  void start(std::uint64_t id, transfer_request&& request, downstream_client::completion&& done,
             inflight_ticket ticket);
  /// A call whose answer arrives as events, counted in flight by its ticket.
  void call(std::uint64_t id, stream_request request, std::shared_ptr<stream_events> events, inflight_ticket ticket) {
    h2_.start(id, std::move(request), std::move(events), std::move(ticket));
  }
  /// A cancel of either kind (ids are unique across both).
  void abandon(std::uint64_t id) {
    h1_.abandon(id);
    h2_.abandon(id);
  }

private:
  /// The transfer as an HTTP/2 call, its ticket in the collector (it is the transfer's).
  void start_h2(std::uint64_t id, transfer_request&& request, downstream_client::completion&& done,
                inflight_ticket ticket);
  void chose_h2(std::unique_ptr<origin_connection> conn, const origin_and_target& where,
                std::vector<h2_bound> transfers) override;

  asio::io_context& loop_;
  downstream_pool pool_; ///< before the clients: they go first
  h1_client h1_;
  h2_client h2_;
};

} // namespace gather::downstream_loop
