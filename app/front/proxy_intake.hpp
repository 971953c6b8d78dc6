// The first stage of a connection under `listen_proxy_protocol` (docs/gateway.md, "Behind a load
// balancer"): reads the PROXY protocol header off the TCP socket, before TLS or the choice of
// protocol, and hands the socket on with the client's address. It reads no byte past the header
// (gather/front/proxy_header.hpp says how many it may; a peek finds a v1 line's end), so a TLS
// ClientHello or an h2c preface behind it stays in the socket for the next stage.
//
//   reading --header (PROXY or LOCAL)--> handed_on
//      \--not a header / EOF / the request-head time limit--> closed (no answer)
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gather/front/proxy_header.hpp"

#include "connection_sink.hpp"

namespace gather {

class proxy_intake final : public pre_request_stage, public std::enable_shared_from_this<proxy_intake> {
public:
  using tcp = boost::asio::ip::tcp;
  using error_code = boost::system::error_code;
  /// The header is read: the socket, and the client it names (nullopt: LOCAL or UNKNOWN).
  using read = std::function<void(proxy_intake*, tcp::socket&&, std::optional<ip_address> source)>;

  /// `wait`: the request-head time limit; `max_length`: the longest v2 header accepted.
  /// `refused` counts the connections closed here.
  proxy_intake(std::chrono::milliseconds wait, std::size_t max_length, std::atomic<std::uint64_t>& refused,
               std::function<void(connection_base*)> on_close, read on_read, tcp::socket socket)
    : socket_(std::move(socket)),
      refused_(refused),
      timer_(socket_.get_executor()),
      wait_(wait),
      max_length_(max_length),
      on_close_(std::move(on_close)),
      on_read_(std::move(on_read)) {}

  ~proxy_intake() override {
    if (state_ == phase::reading && on_close_)
      on_close_(this);
  }

  void start() {
    timer_.expires_after(wait_);
    timer_.async_wait([self = shared_from_this()](const error_code& ec) {
      if (!ec)
        self->close();
    });
    step();
  }

private:
  enum class phase { reading, handed_on, closed };

  void step() {
    const auto parsed = proxy_protocol::parse(header_, max_length_);
    if (const auto* named = std::get_if<proxy_protocol::proxied>(&parsed))
      return hand_on(named->source);
    if (std::holds_alternative<proxy_protocol::local>(parsed))
      return hand_on(std::nullopt);
    if (std::holds_alternative<proxy_protocol::invalid>(parsed))
      return close(); // as soon as the bytes show it; no answer: the peer speaks no HTTP yet
    read_some(more_to_read(std::get<proxy_protocol::need_more>(parsed).at_least));
  }

  /// How many bytes the next read may take without passing the header's end: the parser's lower
  /// bound, or, for a v1 line, up to its CRLF when a peek finds it already arrived.
  std::size_t more_to_read(std::size_t at_least) {
    if (header_.empty() || header_[0] != 'P')
      return at_least; // v2 says its length; the first read is the shortest header
    char peeked[proxy_protocol::v1_max_length];
    const auto room = proxy_protocol::v1_max_length - std::min(header_.size(), proxy_protocol::v1_max_length);
    const auto n = ::recv(socket_.native_handle(), peeked, room, MSG_PEEK | MSG_DONTWAIT);
    if (n <= 0)
      return at_least;
    const std::string_view ahead{peeked, static_cast<std::size_t>(n)};
    const auto lf = ahead.find('\n');
    return lf == std::string_view::npos ? ahead.size() : lf + 1;
  }

  void read_some(std::size_t want) {
    const auto had = header_.size();
    header_.resize(had + want);
    socket_.async_read_some(boost::asio::buffer(header_.data() + had, want),
                            [self = shared_from_this(), had](const error_code& ec, std::size_t n) {
                              self->header_.resize(had + (ec ? 0 : n));
                              if (ec || self->state_ != phase::reading)
                                return self->close();
                              self->step();
                            });
  }

  void hand_on(std::optional<ip_address> source) {
    state_ = phase::handed_on;
    timer_.cancel();
    on_read_(this, std::move(socket_), source);
  }

  void close() override {
    if (state_ != phase::reading)
      return;
    state_ = phase::closed;
    refused_.fetch_add(1, std::memory_order_relaxed);
    timer_.cancel();
    error_code ignored;
    socket_.close(ignored);
    on_close_(this);
  }

  tcp::socket socket_;
  std::atomic<std::uint64_t>& refused_;
  boost::asio::steady_timer timer_;
  std::chrono::milliseconds wait_;
  std::size_t max_length_;
  std::function<void(connection_base*)> on_close_;
  read on_read_;
  std::string header_; ///< the header's bytes so far, never one past it
  phase state_ = phase::reading;
};

} // namespace gather
