// One HTTP/2 connection on one event loop (h2 over TLS, or h2c by prior knowledge): bytes read go
// to the h2_session, what it has to send is written with one write in flight, and every stream is
// one request through the same request_dispatch, coordinators and reply_sink as HTTP/1.1. Streams
// run concurrently, each with its own deadline; a stream the client resets gives its request up
// (its coordinator stops, its calls are cancelled), as a client hang-up does in HTTP/1.1.
//
//   stream: head --END_STREAM--> ready --(after the read that completed it)--> serving --reply--> answering --> closed
//             \--body (batch POST)--/                                  RST_STREAM from the client: given up
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
#include <boost/beast/core/string.hpp>

#include "connection.hpp"
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
  h2_connection(front_shared& shared, std::shared_ptr<const serving_config> serving,
                std::function<void(connection_base*)> on_close, Stream stream,
                std::string already_read)
    : stream_(std::move(stream)),
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
    ignored = {};
    const auto remote = boost::beast::get_lowest_layer(stream_).remote_endpoint(ignored);
    peer_ = ignored ? std::string{} : remote.address().to_string(); // a rate limit's `ip`
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
      if (s->started && s->sink && s->sink->claim())
        shared_.dispatch.give_up(*s->started, s->sink->record(), false);
    close();
  }

private:
  static constexpr std::size_t read_chunk = 16384;
  /// Bytes handed to one write: enough for a few full DATA frames, small enough to stay in cache.
  static constexpr std::size_t write_batch = 65536;

  std::string peer_; // the client's address, the same for every stream of the connection
  enum class stage { head, body, ready, serving, answering };
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
    std::string answer;
    std::size_t answer_sent = 0;
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

  void stream_opened(std::int32_t id) override {
    auto s = std::make_unique<h2_stream>(stream_.get_executor());
    shared_.serving.refresh(serving_); // each request takes the generation in force as it begins
    s->serving = serving_;
    s->head.version = 20;
    s->head.peer = peer_;
    arm(id, *s, clock::now() + limits().request_timeout, why::incomplete);
    streams_[id] = std::move(s);
    shared_.stats.h2_streams.fetch_add(1, std::memory_order_relaxed);
  }

  void header(std::int32_t id, std::string_view name, std::string_view value) override {
    auto* s = find(id);
    if (!s || s->refusal != parse_refusal::none)
      return;
    if (!name.empty() && name.front() == ':') {
      if (name == ":method")
        s->head.method = value;
      else if (name == ":path")
        s->head.target = value;
      else if (name == ":authority")
        s->authority = value;
      if (s->head.target.size() > limits().max_request_line_bytes)
        s->refusal = parse_refusal::uri_too_long;
      return;
    }
    if (++s->fields > limits().max_headers) {
      s->refusal = parse_refusal::headers_too_large;
      return;
    }
    if (name == "cookie") // RFC 9113 8.2.3: split cookies are one header again
      for (auto& [have, joined] : s->head.headers)
        if (have == "cookie") {
          joined.append("; ").append(value);
          return;
        }
    s->head.headers.emplace_back(name, value);
  }

  void header_list_too_large(std::int32_t id) override {
    if (auto* s = find(id))
      s->refusal = parse_refusal::headers_too_large;
  }

  void head_done(std::int32_t id, bool ends_stream) override {
    auto* s = find(id);
    if (!s || s->at != stage::head)
      return;
    if (!s->authority.empty() && !s->head.has_header("host"))
      s->head.headers.emplace_back("host", s->authority);
    s->request_id = request_id_for(s->head);
    if (s->refusal != parse_refusal::none)
      return refuse(id, *s);
    if (!ends_stream && shared_.dispatch.may_read_body(*s->serving, s->head)) {
      s->admitting.emplace(*s->serving, s->head, s->request_id, shared_.stats);
      if (auto refused = shared_.dispatch.admit_head(*s->admitting, clock::now())) {
        s->admitting.reset(); // refused on the head: the body stays unread
        return answer(id, *s, std::move(*refused));
      }
      s->at = stage::body;
      return;
    }
    // No body, or one that is never read (dropped as it comes): served on the head.
    s->at = stage::ready;
    ready_.push_back(id);
  }

  void body(std::int32_t id, std::string_view bytes) override {
    auto* s = find(id);
    if (!s || s->at != stage::body)
      return;
    if (s->body.size() + bytes.size() > s->serving->cfg.max_body_bytes) {
      s->refusal = parse_refusal::payload_too_large;
      return refuse(id, *s);
    }
    s->body.append(bytes);
  }

  void body_done(std::int32_t id) override {
    auto* s = find(id);
    if (!s || s->at != stage::body)
      return;
    s->at = stage::ready;
    ready_.push_back(id);
  }

  void stream_closed(std::int32_t id, std::uint32_t) override {
    const auto it = streams_.find(id);
    if (it == streams_.end())
      return;
    auto& s = *it->second;
    // Reset by the client (or the connection is ending) before its answer: as a hang-up in
    // HTTP/1.1, the request is given up and its coordinator stopped.
    if (s.started && s.sink && s.sink->claim())
      shared_.dispatch.give_up(*s.started, s.sink->record(), true);
    s.timer.cancel();
    streams_.erase(it);
    shared_.stats.h2_streams.fetch_sub(1, std::memory_order_relaxed);
    if (streams_.empty()) {
      last_activity_ = clock::now();
      arm_connection_timer();
    }
  }

  long answer_bytes(std::int32_t id, std::uint8_t* out, std::size_t room, bool& last) override {
    auto* s = find(id);
    if (!s) {
      last = true;
      return 0;
    }
    const auto n = std::min(room, s->answer.size() - s->answer_sent);
    std::memcpy(out, s->answer.data() + s->answer_sent, n);
    s->answer_sent += n;
    last = s->answer_sent == s->answer.size();
    return static_cast<long>(n);
  }

  // ---- a stream's request ------------------------------------------------------------------------

  void serve(std::int32_t id, h2_stream& s) {
    s.at = stage::serving;
    s.arrived = clock::now();
    auto sink = std::make_shared<connection_sink>(stream_.get_executor(), this->weak_from_this(), id);
    if (!s.admitting) // else admitted on its head already: the route stays matched
      s.admitting.emplace(*s.serving, s.head, s.request_id, shared_.stats);
    auto result = shared_.dispatch.serve(s.serving, *s.admitting, std::move(s.body), s.arrived, sink);
    s.admitting.reset();
    if (auto* reply = std::get_if<http_reply>(&result))
      return answer(id, s, std::move(*reply));
    s.started = std::move(std::get<started_request>(result));
    s.sink = std::move(sink);
    arm(id, s, s.started->deadline, why::deadline);
  }

  /// A request refused before it was served (414, 431, 413): counted and logged as HTTP/1.1's.
  void refuse(std::int32_t id, h2_stream& s) {
    s.admitting.reset();
    answer(id, s, shared_.dispatch.refuse_unparsed(*s.serving, s.refusal, s.head, s.request_id, clock::now()));
  }

  void answer(std::int32_t id, h2_stream& s, http_reply reply) {
    s.at = stage::answering;
    s.started.reset();
    s.sink.reset();
    std::vector<std::pair<std::string, std::string>> fields;
    fields.reserve(4 + reply.headers.size());
    fields.emplace_back(":status", std::to_string(reply.status));
    fields.emplace_back("content-type", reply.content_type);
    fields.emplace_back("content-length", std::to_string(reply.body.size()));
    fields.emplace_back("x-request-id", s.request_id);
    for (auto& [name, value] : reply.headers) {
      std::string lower = name;
      for (auto& c : lower)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      // RFC 9113 8.2.2: connection-specific fields have no place in HTTP/2.
      if (lower == "connection" || lower == "keep-alive" || lower == "transfer-encoding" ||
          lower == "upgrade" || lower == "proxy-connection")
        continue;
      fields.emplace_back(std::move(lower), std::move(value));
    }
    if (s.head.method != "HEAD")
      s.answer = std::move(reply.body);
    session_->respond(id, fields, !s.answer.empty());
    arm(id, s, clock::now() + limits().request_timeout, why::sending);
    flush();
  }

  // ---- a stream's timer --------------------------------------------------------------------------

  void arm(std::int32_t id, h2_stream& s, clock::time_point at, why reason) {
    s.timer_why = reason;
    const bool sooner = at < s.timer_at;
    s.timer_at = at;
    if (!sooner && s.timer_armed)
      return; // the pending wait fires earlier and re-arms itself
    s.timer_armed = true;
    s.timer.expires_at(at);
    s.timer.async_wait([self = this->shared_from_this(), id](const error_code& ec) {
      if (!ec)
        self->on_stream_timer(id);
    });
  }

  void on_stream_timer(std::int32_t id) {
    auto* s = find(id);
    if (closed_ || !s)
      return;
    s->timer_armed = false;
    if (clock::now() < s->timer_at)
      return arm(id, *s, s->timer_at, s->timer_why);
    switch (s->timer_why) {
      case why::incomplete: // a request begun and never finished: a slow stream
        if (s->at == stage::head || s->at == stage::body)
          return end_for(h2_abuse::incomplete_stream);
        return;
      case why::deadline:
        if (s->started)
          shared_.dispatch.deadline_passed(*s->started);
        if (s->started)
          arm(id, *s, s->started->hard_limit, why::hard_limit);
        return;
      case why::hard_limit:
        if (s->started && s->sink && s->sink->claim()) {
          auto reply = shared_.dispatch.give_up(*s->started, s->sink->record(), false);
          return answer(id, *s, std::move(reply));
        }
        return;
      case why::sending: // the answer was not taken: the client does not read its window
        return end_for(h2_abuse::stalled);
      case why::none:
        return;
    }
  }

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

  clock::time_point connection_due() const {
    if (ending_)
      return ending_at_;
    auto at = clock::time_point::max();
    if (writing_)
      at = write_began_ + limits().request_timeout;
    if (streams_.empty())
      at = std::min(at, last_activity_ + limits().keep_alive_idle);
    return at;
  }

  void arm_connection_timer() {
    const auto at = connection_due();
    if (at == clock::time_point::max() || (timer_armed_ && timer_at_ <= at))
      return;
    timer_armed_ = true;
    timer_at_ = at;
    timer_.expires_at(at);
    timer_.async_wait([self = this->shared_from_this()](const error_code& ec) {
      if (!ec)
        self->on_connection_timer();
    });
  }

  void on_connection_timer() {
    timer_armed_ = false;
    if (closed_)
      return;
    const auto now = clock::now();
    if (now < connection_due())
      return arm_connection_timer();
    if (ending_)
      return close();
    if (writing_ && now >= write_began_ + limits().request_timeout) {
      shared_.stats.h2_abuse[static_cast<int>(h2_abuse::stalled)].fetch_add(1, std::memory_order_relaxed);
      return close(); // the socket takes nothing: no GOAWAY could reach the client either
    }
    drain(); // idle: GOAWAY, then closed
    arm_connection_timer();
  }

  void close() {
    if (closed_)
      return;
    closed_ = true;
    for (auto& [id, s] : streams_) {
      if (s->started && s->sink && s->sink->claim())
        shared_.dispatch.give_up(*s->started, s->sink->record(), true);
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
