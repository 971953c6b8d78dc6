// One inbound connection on one event loop: read a request, hand it to request_dispatch, write
// the answer, and again (keep-alive, pipelining). It holds no thread: while a coordinator works,
// the connection is a few hundred bytes of state, a pending read (which notices a client that
// hangs up) and a timer.
//
//   reading --head--> [check; 100 Continue?] --body--> waiting --reply (posted by the sink)--> writing
//      ^                                                  |  read EOF/RST: 499, coordinator stopped
//      |                                                  +--open (a progressive answer)--> streaming
//      |                                                       each piece one chunk, at once; end --> writing
//      |                                                       read EOF/RST: coordinator stopped, closed
//      +------------------ keep-alive ------------------- writing --> closing (FIN, linger) --> closed
//
// Everything here runs on the connection's loop; the sink is the only way in from elsewhere.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/stream_traits.hpp>

#include "gather/front/answer_dress.hpp"
#include "gather/front/client_address.hpp"
#include "gather/front/read_buffer.hpp"
#include "gather/front/request_dispatch.hpp"
#include "gather/front/request_parser.hpp"
#include "gather/front/response_bytes.hpp"

#include "connection_sink.hpp"

namespace gather {

template <class Stream>
class connection final : public connection_base,
                         public std::enable_shared_from_this<connection<Stream>> {
public:
  using clock = std::chrono::steady_clock;
  using error_code = boost::system::error_code;

  /// `on_close` runs once, on the loop, when the connection has closed. `serving` is the
  /// generation in force when it was accepted (each request takes the one in force then).
  /// `peer`: the TCP peer's address, or the client a PROXY protocol header named.
  template <class... StreamArgs>
  connection(front_shared& shared, std::shared_ptr<const serving_config> serving, ip_address peer,
             std::function<void(connection_base*)> on_close, StreamArgs&&... args)
    : stream_(std::forward<StreamArgs>(args)...),
      peer_(peer),
      peer_text_(to_string(peer)),
      shared_(shared),
      serving_(std::move(serving)),
      on_close_(std::move(on_close)),
      timer_(stream_.get_executor()),
      buffer_(buffer_limit()) {
  }

  ~connection() override {
    if (!closed_ && on_close_)
      on_close_(this);
  }

  /// `already_read`: the first bytes, read while the protocol was chosen. `handshaken`: the TLS
  /// handshake is done.
  void start(std::string_view already_read = {}, bool handshaken = false) {
    error_code ignored;
    boost::beast::get_lowest_layer(stream_).set_option(boost::asio::ip::tcp::no_delay(true), ignored);
    if (!already_read.empty()) {
      buffer_.append(already_read.data(), already_read.size());
    }
    if constexpr (is_tls) {
      if (!handshaken) {
        set_deadline(clock::now() + limits().request_timeout, why::handshake);
        stream_.async_handshake(boost::asio::ssl::stream_base::server,
                                [self = this->shared_from_this()](const error_code& ec) {
                                  if (ec)
                                    return self->close();
                                  self->begin_request();
                                });
        return;
      }
    }
    begin_request();
  }

  void on_reply(std::int32_t, http_reply reply) override {
    auto hold = std::move(hold_);
    if (state_ != phase::waiting || closed_)
      return;
    started_.reset();
    sink_.reset();
    send_answer(std::move(reply));
  }

  void on_stream_open(std::int32_t, http_reply head) override {
    if (state_ != phase::waiting || closed_)
      return;
    state_ = phase::streaming;
    // HTTP/1.0 has no chunks: its progressive answer ends with the connection.
    keep_alive_ = keep_alive_ && version_ != 10 && !close_after_ &&
                  !shared_.draining.load(std::memory_order_relaxed);
    encoder_ = dress_.apply_to_stream(head);
    head.headers.emplace_back("Cache-Control", "no-cache");
    queue_write(stream_head_bytes(head, request_id_, {version_, keep_alive_, false}), false);
  }

  void on_stream_piece(std::int32_t, std::string piece, bool last) override {
    if (state_ != phase::streaming || closed_)
      return;
    if (encoder_) // compressed and flushed: the client decodes this piece as soon as it is read
      piece = last ? encoder_->finish(piece) : encoder_->flush(piece);
    if (!last)
      return queue_write(chunk_bytes(piece, version_, false), false);
    auto hold = std::move(hold_);
    started_.reset();
    sink_.reset();
    encoder_.reset();
    state_ = phase::writing;
    queue_write(chunk_bytes(piece, version_, true), true);
    version_ = 11;
  }

  void drain() override {
    if (state_ == phase::reading && !request_begun_)
      close();
  }

  void force_close() override {
    if (started_ && sink_ && sink_->claim())
      shared_.dispatch.give_up(*started_, sink_->record(), false);
    else if (state_ == phase::streaming)
      stop_stream();
    close();
  }

private:
  static constexpr bool is_tls = !std::is_same_v<Stream, boost::asio::ip::tcp::socket>;
  static constexpr std::size_t read_chunk = 16384;

  const inbound_limits& limits() const { return serving_->cfg.inbound; }
  /// Room for a whole head at the limits of the generation held, plus one read.
  std::size_t buffer_limit() const {
    return limits().max_request_line_bytes + limits().max_header_bytes + read_chunk + 4;
  }
  enum class phase { reading, waiting, streaming, writing, closing };
  enum class why { none, handshake, idle, request, deadline, hard_limit, linger };

  // ---- reading a request ---------------------------------------------------------------------

  void begin_request();
  void parse();

  /// The head is complete. True: read the body (a batch POST the head's checks admit).
  bool on_head();

  /// Serves on the head alone. A body that came with it is never read: the connection ends after
  /// the answer, so its bytes can never be taken for a next request (request smuggling).
  bool answer_without_body();
  void refuse_unparsed(const error_code& ec);

  /// An answer made without a coordinator, in the request's HTTP version.
  void answer_now(http_reply reply);
  void serve(std::string body);

  /// gather_connections_total{proto}: a connection counts once, by its first request.
  void count_proto(int version);

  // ---- reading bytes -------------------------------------------------------------------------

  void read();
  void read_now();
  void on_read(const error_code& ec);

  /// The client closed or reset its side.
  void on_read_end();

  // ---- writing -------------------------------------------------------------------------------

  /// A progressive answer that will not be finished (client gone, hard limit, server stopping):
  /// its coordinator is stopped; it finishes the request's record (a 499) and so gives back the
  /// request's admission.
  void stop_stream();
  void send_answer(http_reply reply);
  void queue_write(std::string bytes, bool is_answer);
  void write_front();
  void on_written(const error_code& ec);

  /// Sends FIN, drops what the client still sends until it closes or linger_limit passes.
  void linger();
  void close();

  // ---- one timer for every phase ---------------------------------------------------------------

  /// Arms the connection's one timer. A later deadline than the one pending only moves `deadline_`
  /// (the pending wait re-arms itself when it fires), so most phase changes cost no timer syscall.
  void set_deadline(clock::time_point at, why reason);

  /// Writes without a phase deadline of their own (a 100 Continue while reading keeps `request`).
  void set_deadline_if_none();
  void wait_timer();
  void on_timer(const error_code& ec);

  struct pending_write {
    std::string bytes;
    bool is_answer;
  };

  Stream stream_;
  ip_address peer_;       ///< whose connection it is (the request's client: client_address.hpp)
  std::string peer_text_; ///< as text, for the request heads
  front_shared& shared_;
  /// The generation of the request being read or served (of the last one, between requests).
  std::shared_ptr<const serving_config> serving_;
  std::function<void(connection_base*)> on_close_;
  boost::asio::steady_timer timer_;
  read_buffer buffer_;
  std::optional<request_parser> parser_;
  /// The request at admission, from its head (matched once) until it is served or refused.
  std::optional<admission_request> admitting_;
  std::deque<pending_write> writes_;
  phase state_ = phase::reading;
  bool read_pending_ = false;
  bool closed_ = false;
  bool head_handled_ = false;
  bool request_begun_ = false;
  bool keep_alive_ = true;
  bool close_after_ = false;
  bool head_only_ = false;
  bool proto_counted_ = false;
  int version_ = 11;
  std::string request_id_;
  clock::time_point arrived_;
  std::optional<started_request> started_;
  std::shared_ptr<connection_sink> sink_;
  answer_dress dress_;                     ///< CORS headers and content coding of this request's answer
  std::unique_ptr<body_encoder> encoder_;  ///< a compressed progressive answer's encoder
  std::shared_ptr<connection> hold_; ///< keeps a waiting connection alive: only a weak sink points here
  clock::time_point deadline_ = clock::time_point::max();
  why reason_ = why::none;
  bool timer_armed_ = false;
  int timer_waits_ = 0;
};

} // namespace gather

// The member functions, by job: reading a request and its bytes; writing the answer, and the
// connection's one timer.
#include "connection_reading.hpp"
#include "connection_writing.hpp"
