// One HTTP/2 connection on one event loop (h2 over TLS, or h2c by prior knowledge): bytes read go
// to the h2_session, what it has to send is written with one write in flight, and every stream is
// one request through the same request_dispatch, coordinators and reply_sink as HTTP/1.1. A
// stream's record (h2_stream) is owned by streams_ and rides on the codec's stream data, so what
// the session reads reaches it without a lookup; the sinks and timers, which know only the id,
// find it in streams_. Streams
// run concurrently, each with its own deadline; a stream the client resets gives its request up
// (its coordinator stops, its calls are cancelled), as a client hang-up does in HTTP/1.1.
//
//   stream: head --END_STREAM--> ready --(after the read that completed it)--> serving --reply--> answering --> closed
//             \--body (batch POST)--/                                  |  RST_STREAM from the client: given up
//                                                                       +--open--> streaming --end--> answering
//
// A progressive answer (docs/api.md) is HEADERS, then DATA frames as its pieces come, under the
// stream's flow control: nghttp2 asks for bytes while the client's window is open; with nothing
// waiting the stream is deferred and the next piece resumes it. While the window is closed the
// pieces wait in the stream's own buffer, at most http2.max_stream_buffer_bytes: a client that does
// not read costs its own stream that much and holds up no other stream or connection.
//
// A request starts only once the bytes read with it have all been taken in: a HEADERS and its
// RST_STREAM that arrive together never start a coordinator (rapid reset costs no downstream call).
// Everything here runs on the connection's loop; the sinks post to it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/string.hpp>

#include "gather/front/answer_dress.hpp"
#include "gather/front/client_address.hpp"
#include "gather/front/request_dispatch.hpp"
#include "gather/front/request_parser.hpp"

#include "connection_sink.hpp"
#include "h2_session.hpp"

namespace gather {

template <class Stream>
class h2_connection final : public connection_base,
                            public h2_events,
                            public std::enable_shared_from_this<h2_connection<Stream>> {
public:
  using clock = std::chrono::steady_clock;
  using error_code = boost::system::error_code;

  /// `already_read`: the bytes read while the protocol was chosen (the preface, for h2c).
  /// `peer`: the TCP peer's address, or the client a PROXY protocol header named.
  h2_connection(front_shared& shared, std::shared_ptr<const serving_config> serving, ip_address peer,
                std::function<void(connection_base*)> on_close, Stream stream,
                std::string already_read)
    : peer_(peer),
      peer_text_(to_string(peer)),
      stream_(std::move(stream)),
      shared_(shared),
      serving_(std::move(serving)),
      on_close_(std::move(on_close)),
      timer_(stream_.get_executor()),
      already_read_(std::move(already_read)) {
  }

  ~h2_connection() override {
    if (!closed_ && on_close_)
      on_close_(this);
  }

  void start() {
    error_code ignored;
    boost::beast::get_lowest_layer(stream_).set_option(boost::asio::ip::tcp::no_delay(true), ignored);
    shared_.stats.count_connection(inbound_proto::h2);
    shared_.stats.h2_connections.fetch_add(1, std::memory_order_relaxed);
    session_.emplace(serving_->cfg.http2, *this);
    last_activity_ = clock::now();
    const auto first = std::move(already_read_);
    if (!first.empty())
      take_in(reinterpret_cast<const std::uint8_t*>(first.data()), first.size());
    read();
    flush();
  }

  void on_reply(std::int32_t id, http_reply reply) override {
    auto* s = find(id);
    if (closed_ || !s || s->at != stage::serving)
      return;
    answer(id, *s, std::move(reply));
  }

  /// The server stops: GOAWAY; the streams begun finish, then the connection closes.
  void drain() override {
    if (closed_ || shutting_down_)
      return;
    shutting_down_ = true;
    session_->shut_down();
    flush();
  }

  void force_close() override {
    for (auto& [id, s] : streams_)
      give_up(*s, false);
    close();
  }

  void on_stream_open(std::int32_t id, http_reply head) override {
    auto* s = find(id);
    if (closed_ || !s || s->at != stage::serving)
      return;
    s->at = stage::streaming;
    s->encoder = s->dress.apply_to_stream(head);
    head.headers.emplace_back("cache-control", "no-cache");
    session_->respond(id, fields_of(*s, std::move(head), false), true);
    flush();
  }

  void on_stream_piece(std::int32_t id, std::string piece, bool last) override {
    auto* s = find(id);
    if (closed_ || !s || s->at != stage::streaming)
      return;
    if (!last && s->answer.size() - s->answer_sent > s->serving->cfg.http2.max_stream_buffer_bytes) {
      // The client leaves its window closed: its stream ends here, the others go on.
      shared_.stats.h2_abuse[static_cast<int>(h2_abuse::stalled)].fetch_add(1, std::memory_order_relaxed);
      stop_stream(*s);
      session_->reset(id, h2_code::enhance_your_calm);
      return flush();
    }
    if (s->encoder) // compressed and flushed: the client decodes this piece as soon as it is read
      piece = last ? s->encoder->finish(piece) : s->encoder->flush(piece);
    s->answer.append(piece);
    if (last) {
      s->at = stage::answering; // the coordinator has finished the request's record
      s->started.reset();
      s->sink.reset();
      s->encoder.reset();
      arm(id, *s, clock::now() + limits().request_timeout, why::sending);
    }
    session_->resume(id);
    flush();
  }

private:
  static constexpr std::size_t read_chunk = 16384;
  /// Bytes handed to one write: enough for a few full DATA frames, small enough to stay in cache.
  static constexpr std::size_t write_batch = 65536;

  ip_address peer_;       // whose connection it is, the same for every stream of it
  std::string peer_text_; // as text, for the request heads
  enum class stage { head, body, ready, serving, streaming, answering };
  enum class why { none, incomplete, deadline, hard_limit, sending };

  struct h2_stream {
    explicit h2_stream(const boost::asio::any_io_executor& loop) : timer(loop) {}
    stage at = stage::head;
    std::shared_ptr<const serving_config> serving; ///< the generation in force when it opened
    request_head head;
    std::string authority;
    std::size_t fields = 0;
    parse_refusal refusal = parse_refusal::none;
    std::optional<admission_request> admitting; ///< admitted on its head: its body is read
    std::string body;
    std::string request_id;
    clock::time_point arrived;
    std::optional<started_request> started;
    std::shared_ptr<connection_sink> sink;
    answer_dress dress; ///< CORS headers and content coding of its answer
    std::unique_ptr<body_encoder> encoder; ///< a compressed progressive answer's
    std::string answer; ///< the answer's body, or a progressive answer's pieces not yet sent
    std::size_t answer_sent = 0;
    bool cut = false; ///< a progressive answer stopped before its end: RST_STREAM, never END_STREAM
    boost::asio::steady_timer timer;
    clock::time_point timer_at = clock::time_point::max();
    why timer_why = why::none;
    bool timer_armed = false;
  };

  const inbound_limits& limits() const { return serving_->cfg.inbound; }

  h2_stream* find(std::int32_t id) {
    const auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.get();
  }

  // ---- bytes in ----------------------------------------------------------------------------------

  void read() {
    if (read_pending_ || closed_)
      return;
    read_pending_ = true;
    stream_.async_read_some(boost::asio::buffer(in_),
                            [self = this->shared_from_this()](const error_code& ec, std::size_t n) {
                              self->read_pending_ = false;
                              if (self->closed_)
                                return;
                              if (ec)
                                return self->close(); // the client left: its requests are given up
                              self->last_activity_ = clock::now();
                              if (!self->ending_) // once ending, what still comes is dropped
                                self->take_in(self->in_.data(), n);
                              self->read();
                              self->flush();
                            });
  }

  void take_in(const std::uint8_t* data, std::size_t size) {
    in_session_ = true; // nghttp2 may not be asked for output from inside its own callbacks
    const bool ok = session_->receive(data, size);
    in_session_ = false;
    std::vector<std::int32_t> ready;
    ready.swap(ready_);
    for (const auto id : ready)
      if (auto* s = find(id); s && s->at == stage::ready && !ending_)
        serve(id, *s);
    if (!ok)
      end_for(session_->abuse());
  }

  // ---- h2_events: what the session read ----------------------------------------------------------

  // `record` is the stream's h2_stream (what stream_opened returned), or null for one opened once
  // the connection was ending.
  void* stream_opened(std::int32_t id) override;
  void header(std::int32_t id, void* record, std::string_view name, std::string_view value) override;
  void header_list_too_large(std::int32_t id, void* record) override;
  void head_done(std::int32_t id, void* record, bool ends_stream) override;
  void body(std::int32_t id, void* record, std::string_view bytes) override;
  void body_done(std::int32_t id, void* record) override;
  void stream_closed(std::int32_t id, void* record, std::uint32_t) override;
  long answer_bytes(std::int32_t id, void* record, std::uint8_t* out, std::size_t room, bool& last) override;
  static h2_stream* stream_of(void* record) { return static_cast<h2_stream*>(record); }

  // ---- a stream's request ------------------------------------------------------------------------

  void serve(std::int32_t id, h2_stream& s);

  /// A request refused before it was served (414, 431, 413): counted and logged as HTTP/1.1's.
  void refuse(std::int32_t id, h2_stream& s);
  void answer(std::int32_t id, h2_stream& s, http_reply reply);

  /// An answer's HEADERS: with its length when whole (none for a 204, RFC 9110 8.6), without when
  /// progressive (the DATA frames end it; no chunks in HTTP/2).
  std::vector<std::pair<std::string, std::string>> fields_of(const h2_stream& s, http_reply reply,
                                                             bool whole) const;

  /// The request will not be answered (client reset or gone, server stopping): a request still
  /// waiting is given up (499, or 504 when `client_left` is false); a progressive answer's
  /// coordinator is stopped, and finishes the record itself.
  void give_up(h2_stream& s, bool client_left);
  void stop_stream(h2_stream& s);

  // ---- a stream's timer --------------------------------------------------------------------------

  void arm(std::int32_t id, h2_stream& s, clock::time_point at, why reason);
  void on_stream_timer(std::int32_t id);

  // ---- bytes out ---------------------------------------------------------------------------------

  void flush() {
    if (writing_ || closed_ || in_session_)
      return;
    out_.clear();
    if (!session_->produce(out_, write_batch))
      return close();
    if (out_.empty()) {
      if (ending_ || !session_->alive())
        linger();
      return;
    }
    writing_ = true;
    write_began_ = clock::now();
    arm_connection_timer();
    boost::asio::async_write(stream_, boost::asio::buffer(out_),
                             [self = this->shared_from_this()](const error_code& ec, std::size_t) {
                               self->writing_ = false;
                               if (self->closed_)
                                 return;
                               if (ec)
                                 return self->close();
                               self->flush();
                             });
  }

  /// Ends the connection for the client's behaviour: GOAWAY (made by the session), counted, then
  /// closed once it is written (linger()).
  void end_for(h2_abuse reason) {
    if (ending_ || closed_)
      return;
    ending_ = true;
    if (reason == h2_abuse::none)
      reason = h2_abuse::protocol_error;
    session_->refuse(reason);
    shared_.stats.h2_abuse[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed);
    ending_at_ = clock::now() + limits().request_timeout; // the GOAWAY's write, then linger()
    arm_connection_timer();
    flush();
  }

  /// Everything is written: FIN, then what the client still sends is dropped until it closes or
  /// linger_limit passes (closing with unread bytes would reset the connection, and the client
  /// could lose the GOAWAY).
  void linger() {
    if (fin_sent_)
      return;
    fin_sent_ = true;
    ending_ = true;
    error_code ignored;
    boost::beast::get_lowest_layer(stream_).shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
    ending_at_ = clock::now() + linger_limit;
    timer_armed_ = false; // a sooner time than any pending wait: arm anew
    arm_connection_timer();
  }

  // ---- the connection's timer: idle, a write that never drains, the end's linger ----------------

  clock::time_point connection_due() const;
  void arm_connection_timer();
  void on_connection_timer();
  void close() {
    if (closed_)
      return;
    closed_ = true;
    for (auto& [id, s] : streams_) {
      give_up(*s, true);
      s->timer.cancel();
    }
    shared_.stats.h2_streams.fetch_sub(static_cast<std::int64_t>(streams_.size()), std::memory_order_relaxed);
    streams_.clear();
    shared_.stats.h2_connections.fetch_sub(1, std::memory_order_relaxed);
    error_code ignored;
    boost::beast::get_lowest_layer(stream_).close(ignored);
    timer_.cancel();
    if (on_close_)
      on_close_(this);
  }

  Stream stream_;
  front_shared& shared_;
  /// The generation in force when the last stream opened (each stream keeps its own).
  std::shared_ptr<const serving_config> serving_;
  std::function<void(connection_base*)> on_close_;
  boost::asio::steady_timer timer_;
  std::string already_read_;
  std::array<std::uint8_t, read_chunk> in_{};
  std::string out_;
  std::unordered_map<std::int32_t, std::unique_ptr<h2_stream>> streams_;
  std::vector<std::int32_t> ready_; ///< complete requests to serve once the read is taken in
  bool read_pending_ = false;
  bool writing_ = false;
  bool closed_ = false;
  bool ending_ = false;        ///< ending (abuse, or all done): what is read is dropped
  bool fin_sent_ = false;
  bool in_session_ = false;    ///< inside h2_session::receive
  bool shutting_down_ = false; ///< GOAWAY sent: the streams begun finish
  bool timer_armed_ = false;
  clock::time_point timer_at_ = clock::time_point::max();
  clock::time_point last_activity_;
  clock::time_point write_began_;
  clock::time_point ending_at_;
  /// Last: destroyed first, so no callback of nghttp2's can reach a member already gone.
  std::optional<h2_session> session_;
};

} // namespace gather

// The member functions, by job: the streams' requests (what the session read, each stream's
// request and answer); the timers (each stream's, and the connection's).
#include "h2_connection_streams.hpp"
#include "h2_connection_timers.hpp"
