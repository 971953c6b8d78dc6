// Which protocol a new connection speaks, before a connection object for it exists: over TLS,
// the handshake's ALPN (`h2`, else HTTP/1.1); on plain TCP, whether its first bytes are the
// HTTP/2 connection preface (h2c by prior knowledge, RFC 9113 3.3), else HTTP/1.1. The bytes read
// to decide are handed on with the socket.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>

#include "connection.hpp"

namespace gather {

/// RFC 9113 3.4: the first bytes of every HTTP/2 connection from a client.
inline constexpr std::string_view h2_preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

template <class Stream>
class protocol_select final : public pre_request_stage,
                              public std::enable_shared_from_this<protocol_select<Stream>> {
public:
  using error_code = boost::system::error_code;
  /// Called once the protocol is known, with the stream and the bytes read so far.
  using chosen = std::function<void(protocol_select*, Stream&&, std::string already_read, bool h2)>;

  /// `wait`: how long the handshake, or the first bytes, may take; then the connection is closed.
  template <class... StreamArgs>
  protocol_select(std::chrono::milliseconds wait, std::function<void(connection_base*)> on_close,
                  chosen on_chosen, StreamArgs&&... args)
    : stream_(std::forward<StreamArgs>(args)...),
      timer_(stream_.get_executor()),
      wait_(wait),
      on_close_(std::move(on_close)),
      on_chosen_(std::move(on_chosen)) {
  }

  void start() {
    timer_.expires_after(wait_);
    timer_.async_wait([self = this->shared_from_this()](const error_code& ec) {
      if (!ec)
        self->close();
    });
    if constexpr (is_tls) {
      stream_.async_handshake(boost::asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](const error_code& ec) {
                                if (ec)
                                  return self->close();
                                const unsigned char* name = nullptr;
                                unsigned int size = 0;
                                SSL_get0_alpn_selected(self->stream_.native_handle(), &name, &size);
                                self->choose(std::string_view{reinterpret_cast<const char*>(name), size} == "h2");
                              });
    } else {
      // Wait for readability without a buffer: an idle connection holds none.
      stream_.async_wait(boost::asio::socket_base::wait_read,
                         [self = this->shared_from_this()](const error_code& ec) {
                           if (ec)
                             return self->close();
                           self->read();
                         });
    }
  }

  ~protocol_select() override {
    if (!done_ && on_close_)
      on_close_(this);
  }

private:
  static constexpr bool is_tls = !std::is_same_v<Stream, boost::asio::ip::tcp::socket>;
  static constexpr std::size_t read_chunk = 16384;

  void read() {
    if constexpr (!is_tls) {
      const auto had = read_.size();
      read_.resize(had + read_chunk);
      stream_.async_read_some(boost::asio::buffer(read_.data() + had, read_chunk),
                              [self = this->shared_from_this(), had](const error_code& ec, std::size_t n) {
                                self->read_.resize(had + n);
                                if (ec)
                                  return self->close();
                                self->decide();
                              });
    }
  }

  void decide() {
    const auto compared = std::min(read_.size(), h2_preface.size());
    if (std::string_view{read_}.substr(0, compared) != h2_preface.substr(0, compared))
      return choose(false);
    if (read_.size() >= h2_preface.size())
      return choose(true);
    read(); // a strict prefix of the preface so far
  }

  void choose(bool h2) {
    if (done_)
      return;
    done_ = true;
    timer_.cancel();
    on_chosen_(this, std::move(stream_), std::move(read_), h2);
  }

  void close() override {
    if (done_)
      return;
    done_ = true;
    timer_.cancel();
    error_code ignored;
    boost::beast::get_lowest_layer(stream_).close(ignored);
    on_close_(this);
  }

  Stream stream_;
  boost::asio::steady_timer timer_;
  std::chrono::milliseconds wait_;
  std::function<void(connection_base*)> on_close_;
  chosen on_chosen_;
  std::string read_;
  bool done_ = false;
};

} // namespace gather
