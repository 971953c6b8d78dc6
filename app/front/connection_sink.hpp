// What the front's connections share, whichever protocol they speak: the interface an answer is
// posted to (connection_base), the front's side of reply_sink (connection_sink, which posts to the
// connection's loop), what one server's connections share, and how long an ending one lingers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>

#include "gather/actors/reply_sink.hpp"
#include "gather/actors/serving_config.hpp"
#include "gather/front/request_dispatch.hpp"
#include "gather/values/gateway_stats.hpp"
#include "gather/values/http_reply.hpp"

namespace gather {

/// How long a connection being ended may still send what it had in flight: the answer's FIN is
/// sent at once, what the client still sends is read and dropped (closing with unread data would
/// reset the connection and could destroy the answer in flight).
constexpr std::chrono::milliseconds linger_limit{1000};

/// What the connections of one server share.
struct front_shared {
  const serving_config_slot& serving; ///< the configuration generation in force
  request_dispatch& dispatch;
  gateway_stats& stats;
  std::atomic<bool> draining{false};
};

class connection_base {
public:
  virtual ~connection_base() = default;
  /// The answer to the request on `stream` (HTTP/2's stream id; 0 in HTTP/1.1).
  virtual void on_reply(std::int32_t stream, http_reply reply) = 0;
  /// A progressive answer (docs/api.md) on `stream`: its head, each piece, and the last piece.
  virtual void on_stream_open(std::int32_t stream, http_reply head) = 0;
  virtual void on_stream_piece(std::int32_t stream, std::string piece, bool last) = 0;
  /// The server stops: close when idle, else after the answer in progress.
  virtual void drain() = 0;
  virtual void force_close() = 0;
};

/// A connection's stage before it has a request (the PROXY header, the choice of protocol): no
/// answer can be asked of it, and a stopping server closes it.
class pre_request_stage : public connection_base {
public:
  void on_reply(std::int32_t, http_reply) override {}
  void on_stream_open(std::int32_t, http_reply) override {}
  void on_stream_piece(std::int32_t, std::string, bool) override {}
  void drain() override { close(); } // nothing has been asked yet
  void force_close() override { close(); }

protected:
  /// Closes the socket (once) and tells the server.
  virtual void close() = 0;
};

/// The front's side of reply_sink: posts the answer to the connection's loop, for the request on
/// `stream` (an HTTP/2 stream id, or 0), in the order the coordinator hands its pieces over (one
/// loop, one queue).
class connection_sink final : public reply_sink {
public:
  connection_sink(boost::asio::any_io_executor loop, std::weak_ptr<connection_base> conn,
                  std::int32_t stream = 0)
    : loop_(loop), conn_(std::move(conn)), stream_(stream) {}

  void deliver(http_reply reply) override {
    boost::asio::post(loop_, [conn = conn_, stream = stream_, reply = std::move(reply)]() mutable {
      if (auto live = conn.lock())
        live->on_reply(stream, std::move(reply));
    });
  }

  void open(http_reply head) override {
    boost::asio::post(loop_, [conn = conn_, stream = stream_, head = std::move(head)]() mutable {
      if (auto live = conn.lock())
        live->on_stream_open(stream, std::move(head));
    });
  }

  void write(std::string piece) override { post_piece(std::move(piece), false); }

  void end(std::string last) override { post_piece(std::move(last), true); }

private:
  void post_piece(std::string piece, bool last) {
    boost::asio::post(loop_, [conn = conn_, stream = stream_, piece = std::move(piece), last]() mutable {
      if (auto live = conn.lock())
        live->on_stream_piece(stream, std::move(piece), last);
    });
  }

  boost::asio::any_io_executor loop_;
  std::weak_ptr<connection_base> conn_;
  std::int32_t stream_;
};

} // namespace gather
