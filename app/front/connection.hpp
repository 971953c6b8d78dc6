// One inbound connection on one event loop: read a request, hand it to request_dispatch, write
// the answer, and again (keep-alive, pipelining). It holds no thread: while a coordinator works,
// the connection is a few hundred bytes of state, a pending read (which notices a client that
// hangs up) and a timer.
//
//   reading --head--> [check; 100 Continue?] --body--> waiting --reply (posted by the sink)--> writing
//      ^                                                  |  read EOF/RST: 499, coordinator stopped
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
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/stream_traits.hpp>

#include "gather/front/request_dispatch.hpp"
#include "gather/front/request_parser.hpp"
#include "gather/front/response_bytes.hpp"

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
  /// The server stops: close when idle, else after the answer in progress.
  virtual void drain() = 0;
  virtual void force_close() = 0;
};

/// The front's side of reply_sink: posts the answer to the connection's loop (for the request on
/// `stream`, an HTTP/2 stream id or 0).
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

private:
  boost::asio::any_io_executor loop_;
  std::weak_ptr<connection_base> conn_;
  std::int32_t stream_;
};

template <class Stream>
class connection final : public connection_base,
                         public std::enable_shared_from_this<connection<Stream>> {
public:
  using clock = std::chrono::steady_clock;
  using error_code = boost::system::error_code;

  /// `on_close` runs once, on the loop, when the connection has closed. `serving` is the
  /// generation in force when it was accepted (each request takes the one in force then).
  template <class... StreamArgs>
  connection(front_shared& shared, std::shared_ptr<const serving_config> serving,
             std::function<void(connection_base*)> on_close, StreamArgs&&... args)
    : stream_(std::forward<StreamArgs>(args)...),
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
    const auto remote = boost::beast::get_lowest_layer(stream_).remote_endpoint(ignored);
    peer_ = ignored ? std::string{} : remote.address().to_string();
    ignored = {};
    boost::beast::get_lowest_layer(stream_).set_option(boost::asio::ip::tcp::no_delay(true), ignored);
    if (!already_read.empty()) {
      const auto n = boost::asio::buffer_copy(buffer_.prepare(already_read.size()),
                                              boost::asio::buffer(already_read));
      buffer_.commit(n);
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
    send_answer(reply);
  }

  void drain() override {
    if (state_ == phase::reading && !request_begun_)
      close();
  }

  void force_close() override {
    if (started_ && sink_ && sink_->claim())
      shared_.dispatch.give_up(*started_, sink_->record(), false);
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
  enum class phase { reading, waiting, writing, closing };
  enum class why { none, handshake, idle, request, deadline, hard_limit, linger };

  // ---- reading a request ---------------------------------------------------------------------

  void begin_request() {
    if (closed_)
      return;
    if (shared_.draining.load(std::memory_order_relaxed) && buffer_.size() == 0)
      return close();
    state_ = phase::reading;
    admitting_.reset(); // it points into the parser's head
    parser_.reset();    // made when the first byte of the next request arrives
    head_handled_ = false;
    close_after_ = false;
    request_begun_ = false;
    shared_.serving.refresh(serving_); // no parser holds the old generation's limits any more
    set_deadline(clock::now() + limits().keep_alive_idle, why::idle);
    parse();
  }

  void parse() {
    while (state_ == phase::reading && !closed_) {
      if (buffer_.size() == 0)
        return read();
      if (!request_begun_) { // the first byte of a request: the slowloris clock starts
        request_begun_ = true;
        // The request's generation: every check, limit and route of this request is taken from
        // it, however long it takes and whatever is reloaded meanwhile.
        shared_.serving.refresh(serving_);
        buffer_.max_size(std::max(buffer_.size(), buffer_limit()));
        parser_.emplace(limits(), serving_->cfg.max_body_bytes);
        set_deadline(clock::now() + limits().request_timeout, why::request);
      }
      error_code ec;
      const auto used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == boost::beast::http::error::need_more)
        return read();
      if (ec)
        return refuse_unparsed(ec);
      if (parser_->is_header_done() && !head_handled_) {
        head_handled_ = true;
        if (!on_head())
          return; // answered on the head alone
      }
      if (parser_->is_done())
        return serve(std::move(parser_->body()));
      if (used == 0)
        return read();
    }
  }

  /// The head is complete. True: read the body (a batch POST the head's checks admit).
  bool on_head() {
    auto& head = parser_->head();
    head.peer = peer_;
    count_proto(head.version);
    request_id_ = request_id_for(head);
    keep_alive_ = parser_->keep_alive();
    const bool body_follows = !parser_->is_done();
    if (body_follows && shared_.dispatch.may_read_body(*serving_, head)) {
      admitting_.emplace(*serving_, head, request_id_, shared_.stats);
      if (auto refused = shared_.dispatch.admit_head(*admitting_, clock::now())) {
        close_after_ = true; // refused on the head: the body stays unread
        admitting_.reset();
        answer_now(*refused);
        return false;
      }
      if (boost::beast::iequals(head.header("expect"), "100-continue"))
        queue_write(continue_bytes, false);
      return true;
    }
    return answer_without_body();
  }

  /// Serves on the head alone. A body that came with it is never read: the connection ends after
  /// the answer, so its bytes can never be taken for a next request (request smuggling).
  bool answer_without_body() {
    close_after_ = !parser_->is_done();
    serve({});
    return false;
  }

  void refuse_unparsed(const error_code& ec) {
    admitting_.reset();
    const auto why = parser_->refusal_for(ec);
    auto& head = parser_->head();
    count_proto(head.target.empty() ? 11 : head.version);
    request_id_ = head.target.empty() ? request_id_for(request_head{}) : request_id_for(head);
    keep_alive_ = false;
    close_after_ = true;
    answer_now(shared_.dispatch.refuse_unparsed(*serving_, why, head, request_id_, clock::now()));
  }

  /// An answer made without a coordinator, in the request's HTTP version.
  void answer_now(const http_reply& reply) {
    arrived_ = clock::now();
    state_ = phase::waiting;
    version_ = parser_->head().target.empty() ? 11 : parser_->head().version;
    send_answer(reply);
  }

  void serve(std::string body) {
    arrived_ = clock::now();
    state_ = phase::waiting;
    head_only_ = parser_->head().method == "HEAD";
    version_ = parser_->head().version;
    auto sink = std::make_shared<connection_sink>(stream_.get_executor(), this->weak_from_this());
    if (!admitting_) // else admitted on its head already: the route stays matched
      admitting_.emplace(*serving_, parser_->head(), request_id_, shared_.stats);
    auto result = shared_.dispatch.serve(serving_, *admitting_, std::move(body), arrived_, sink);
    admitting_.reset();
    if (auto* reply = std::get_if<http_reply>(&result))
      return send_answer(*reply);
    started_ = std::move(std::get<started_request>(result));
    sink_ = std::move(sink);
    hold_ = this->shared_from_this(); // until the answer comes or the connection closes
    set_deadline(started_->deadline, why::deadline);
    read(); // watches for a client that hangs up; reads ahead a pipelined request
  }

  /// gather_connections_total{proto}: a connection counts once, by its first request.
  void count_proto(int version) {
    if (proto_counted_)
      return;
    proto_counted_ = true;
    shared_.stats.count_connection(version == 10 ? inbound_proto::http10 : inbound_proto::http11);
  }

  // ---- reading bytes -------------------------------------------------------------------------

  void read() {
    if (read_pending_ || closed_)
      return;
    if constexpr (!is_tls) {
      // An idle keep-alive connection waits for readability with no buffer at all, and gives
      // its buffer back: 10,000 idle connections then cost no read buffers. (Not over TLS: a
      // record already decrypted inside OpenSSL would never make the socket readable.)
      if (state_ == phase::reading && !request_begun_ && buffer_.size() == 0) {
        buffer_.shrink_to_fit();
        read_pending_ = true;
        stream_.async_wait(boost::asio::socket_base::wait_read,
                           [self = this->shared_from_this()](const error_code& ec) {
                             self->read_pending_ = false;
                             if (ec)
                               return self->on_read_end();
                             self->read_now();
                           });
        return;
      }
    }
    read_now();
  }

  void read_now() {
    if (read_pending_ || closed_)
      return;
    const auto room = buffer_.max_size() - buffer_.size();
    if (room == 0)
      return; // read ahead no further while a request is in flight (parse() drains it later)
    read_pending_ = true;
    stream_.async_read_some(buffer_.prepare(std::min(room, read_chunk)),
                            [self = this->shared_from_this()](const error_code& ec, std::size_t n) {
                              self->read_pending_ = false;
                              self->on_read(ec, n);
                            });
  }

  void on_read(const error_code& ec, std::size_t n) {
    if (closed_)
      return;
    if (ec)
      return on_read_end();
    buffer_.commit(n);
    switch (state_) {
      case phase::reading: return parse();
      case phase::closing: buffer_.consume(buffer_.size()); return read();
      default: return read();
    }
  }

  /// The client closed or reset its side.
  void on_read_end() {
    if (state_ == phase::waiting && started_ && sink_ && sink_->claim()) {
      shared_.dispatch.give_up(*started_, sink_->record(), true);
      started_.reset();
      return close();
    }
    if (state_ == phase::writing) {
      keep_alive_ = false; // the answer still goes out; then the connection ends
      return;
    }
    if (state_ != phase::waiting)
      close();
    // waiting, claimed by the coordinator a moment ago: its answer is on its way; it will find
    // the peer gone when it writes.
    keep_alive_ = false;
  }

  // ---- writing -------------------------------------------------------------------------------

  void send_answer(const http_reply& reply) {
    state_ = phase::writing;
    const bool keep = keep_alive_ && !close_after_ && !shared_.draining.load(std::memory_order_relaxed);
    keep_alive_ = keep;
    queue_write(response_bytes(reply, request_id_, {version_, keep, head_only_}), true);
    head_only_ = false;
    version_ = 11;
  }

  void queue_write(std::string bytes, bool is_answer) {
    writes_.push_back({std::move(bytes), is_answer});
    if (writes_.size() == 1)
      write_front();
  }

  void write_front() {
    set_deadline_if_none();
    boost::asio::async_write(stream_, boost::asio::buffer(writes_.front().bytes),
                             [self = this->shared_from_this()](const error_code& ec, std::size_t) {
                               self->on_written(ec);
                             });
  }

  void on_written(const error_code& ec) {
    if (closed_)
      return;
    if (ec)
      return close();
    const bool was_answer = writes_.front().is_answer;
    writes_.pop_front();
    if (!writes_.empty())
      return write_front();
    if (!was_answer)
      return;
    if (keep_alive_)
      return begin_request();
    linger();
  }

  /// Sends FIN, drops what the client still sends until it closes or linger_limit passes.
  void linger() {
    state_ = phase::closing;
    error_code ignored;
    boost::beast::get_lowest_layer(stream_).shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
    buffer_.consume(buffer_.size());
    set_deadline(clock::now() + linger_limit, why::linger);
    read();
  }

  void close() {
    if (closed_)
      return;
    closed_ = true;
    auto hold = std::move(hold_);
    error_code ignored;
    boost::beast::get_lowest_layer(stream_).close(ignored);
    timer_.cancel();
    if (on_close_)
      on_close_(this);
  }

  // ---- one timer for every phase ---------------------------------------------------------------

  /// Arms the connection's one timer. A later deadline than the one pending only moves `deadline_`
  /// (the pending wait re-arms itself when it fires), so most phase changes cost no timer syscall.
  void set_deadline(clock::time_point at, why reason) {
    deadline_ = at;
    reason_ = reason;
    if (timer_armed_ && timer_.expiry() <= at)
      return;
    timer_.expires_at(at);
    wait_timer();
  }

  /// Writes without a phase deadline of their own (a 100 Continue while reading keeps `request`).
  void set_deadline_if_none() {
    if (reason_ == why::deadline || reason_ == why::hard_limit || reason_ == why::none)
      set_deadline(clock::now() + limits().request_timeout, why::request);
  }

  void wait_timer() {
    timer_armed_ = true;
    ++timer_waits_;
    timer_.async_wait([self = this->shared_from_this()](const error_code& ec) { self->on_timer(ec); });
  }

  void on_timer(const error_code& ec) {
    if (--timer_waits_ == 0)
      timer_armed_ = false;
    if (ec || closed_ || timer_armed_)
      return; // cancelled, or a newer wait is pending
    const auto now = clock::now();
    if (now < deadline_) {
      timer_.expires_at(deadline_);
      return wait_timer();
    }
    switch (reason_) {
      case why::deadline: // the request's clock: the coordinator answers with what has arrived
        if (started_)
          shared_.dispatch.deadline_passed(*started_);
        return set_deadline(started_ ? started_->hard_limit : clock::time_point::max(), why::hard_limit);
      case why::hard_limit:
        if (started_ && sink_ && sink_->claim()) {
          const auto reply = shared_.dispatch.give_up(*started_, sink_->record(), false);
          started_.reset();
          sink_.reset();
          keep_alive_ = false;
          reason_ = why::none;
          return send_answer(reply);
        }
        return; // the coordinator's answer is on its way
      case why::none:
        return;
      default: // idle, slowloris, handshake, linger, a write that never drains
        return close();
    }
  }

  struct pending_write {
    std::string bytes;
    bool is_answer;
  };

  Stream stream_;
  std::string peer_; ///< the client's address, for rate limits per ip
  front_shared& shared_;
  /// The generation of the request being read or served (of the last one, between requests).
  std::shared_ptr<const serving_config> serving_;
  std::function<void(connection_base*)> on_close_;
  boost::asio::steady_timer timer_;
  boost::beast::flat_buffer buffer_;
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
  std::shared_ptr<connection> hold_; ///< keeps a waiting connection alive: only a weak sink points here
  clock::time_point deadline_ = clock::time_point::max();
  why reason_ = why::none;
  bool timer_armed_ = false;
  int timer_waits_ = 0;
};

} // namespace gather
