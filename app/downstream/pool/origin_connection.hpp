// One connection to a downstream origin, plain or TLS, as both clients of a loop hold it
// (h1_client.hpp, h2_link.hpp): the one an `http2` transfer makes to an https origin with ALPN
// offering h2 moves to an HTTP/2 link when the server chose h2 (h1_alpn.cpp). As an HTTP/1.1 connection it is a link of capacity 1 (link_machine.hpp: connecting,
// ready while idle, busy with its one request, draining when it must not be reused, closed), so
// both protocols' connections live and age through the same states and the same transition
// function. Private to app/downstream/.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <ostream> // boost/core/detail/string_view.hpp (1.81) uses std::ostream without including it
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "gather/downstream/call/url_split.hpp"
#include "gather/downstream/pool/link_machine.hpp"

namespace gather::downstream_loop {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

/// The TLS context of https downstreams: the system's CAs, the peer and its name verified.
/// With `alpn_h2`, ALPN offers h2 then http/1.1 (HTTP/2 links); without, none (HTTP/1.1 pools).
std::unique_ptr<asio::ssl::context> make_client_tls(bool alpn_h2 = false);

/// One connection to a downstream origin, plain or TLS.
struct origin_connection {
  origin_connection(asio::io_context& loop, asio::ssl::context& tls_ctx, bool tls)
    : socket(loop) {
    if (tls)
      tls_stream.emplace(tcp::socket(loop), tls_ctx);
  }
  tcp::socket& lowest() { return tls_stream ? tls_stream->next_layer() : socket; }
  void close() {
    error_code ignored;
    lowest().close(ignored);
  }

  tcp::socket socket;                                      ///< plain http
  std::optional<asio::ssl::stream<tcp::socket>> tls_stream; ///< https
  boost::beast::flat_buffer buffer;
  std::string key; ///< its pool's: scheme://host:port, the host lower case (split_url)
  /// Its state as an HTTP/1.1 link (gather/downstream/h1/h1_link.hpp drives it); an HTTP/2 link has its own machine
  /// for its streams (h2_link.hpp), and this one is left unused when ALPN makes the connection one.
  link_machine link{link_bounds{}, link_machine::time_point{}};
  /// The upstream's endpoint it was made for (its bounds, whether it left); null for an origin.
  std::shared_ptr<const call_target> endpoint;
};

/// The TLS context a connection to `where` uses: its upstream's, else `fallback` (the system's CAs).
asio::ssl::context& tls_context_for(const origin_and_target& where, asio::ssl::context& fallback, bool http2);

/// The name TLS sends as SNI and checks in the certificate for `where`.
inline const std::string& tls_name_of(const origin_and_target& where) {
  return where.origin->tls_name.empty() ? where.origin->host : where.origin->tls_name;
}


/// Sets up a TLS client stream for `host`: SNI (for a name: RFC 6066 allows no IP address there)
/// and a certificate that must name the host (checked against the system's CAs).
void verify_host(asio::ssl::stream<tcp::socket>& stream, const std::string& host);

} // namespace gather::downstream_loop
