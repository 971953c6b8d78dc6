// One HTTP/2 connection to a downstream (h2_link.hpp): the transport under its session
// (h2_link_session.cpp): connect, TLS and ALPN, one read and one write at a time, the link's one
// timer, and the end of the connection, which ends or sends again the calls still on it.
#include "h2/h2_link.hpp"

#include <algorithm>
#include <cstring>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>

#include "gather/config/port.hpp"
#include "gather/values/h2_codes.hpp"

#include "h2/h2_client.hpp"

namespace gather::downstream_loop {

namespace {

/// One socket read; one write gathers at most about this much of the session's output.
constexpr std::size_t read_bytes = 16 * 1024;
constexpr std::size_t write_bytes = 64 * 1024;

} // namespace

h2_link::h2_link(h2_client& owner, asio::io_context& loop, asio::ssl::context& tls, const origin_and_target& where,
                 const link_bounds& bounds)
  : owner_(owner), loop_(loop), where_(where),
    conn_(std::make_unique<origin_connection>(loop, tls_context_for(where, tls, true), where.origin->tls)),
    in_(read_bytes), machine_(where.origin->endpoint ? where.origin->endpoint->bounds : bounds, link_machine::clock::now()), timer_(loop) {
  conn_->key = where.origin->key;
  conn_->endpoint = where.origin->endpoint;
  codec_ = new_codec();
  machine_.watch([this](link_state from, link_state to) { owner_.moved(*this, from, to); });
}

h2_link::~h2_link() {
  codec_.reset(); // no event of its can reach a call from here on
  carried_.clear();
  waiting_.clear();
  if (conn_)
    conn_->close();
}

void h2_link::open(name_lookups& lookups) {
  auto self = shared_from_this();
  error_code ec;
  const auto address = asio::ip::make_address(where_.origin->host, ec);
  if (!ec)
    return connect_to({address, static_cast<unsigned short>(*parse_port(where_.origin->port))});
  lookups.resolve(where_.origin->host, where_.origin->port, loop_, [self](const error_code& rec, name_lookups::endpoints found) {
    if (self->closed())
      return;
    if (rec)
      return self->broken(stream_ending::connection, "could not resolve " + self->where_.origin->host + ": " + rec.message());
    asio::async_connect(self->conn_->lowest(), found, [self](const error_code& cec, const tcp::endpoint&) {
      self->connected(cec);
    });
  });
}

void h2_link::connect_to(const tcp::endpoint& endpoint) {
  auto self = shared_from_this();
  conn_->lowest().async_connect(endpoint, [self](const error_code& ec) { self->connected(ec); });
}

void h2_link::connected(const error_code& ec) {
  if (closed())
    return;
  if (ec)
    return broken(stream_ending::connection, "could not connect to " + where_.origin->key + ": " + ec.message());
  error_code ignored;
  conn_->lowest().set_option(tcp::no_delay(true), ignored);
  if (!conn_->tls_stream)
    return ready();
  auto& stream = *conn_->tls_stream;
  verify_host(stream, tls_name_of(where_));
  auto self = shared_from_this();
  stream.async_handshake(asio::ssl::stream_base::client, [self](const error_code& hec) {
    if (self->closed())
      return;
    if (hec)
      return self->broken(stream_ending::connection, "TLS handshake with " + self->where_.origin->key + " failed: " + hec.message());
    const unsigned char* chosen = nullptr;
    unsigned int size = 0;
    SSL_get0_alpn_selected(self->conn_->tls_stream->native_handle(), &chosen, &size);
    if (size == 2 && std::memcmp(chosen, "h2", 2) == 0)
      return self->ready();
    // HTTP/1.1 (or no ALPN) on a link's own connection: only a call (a gRPC one, which needs h2)
    // opens an https link itself; a transfer's new connection is made by the pool's probe
    // (h1_alpn.cpp). Either way the answer is the pool's to remember.
    self->owner_.chose_h1(self->where_.origin->key);
    self->broken(stream_ending::connection, self->where_.origin->key + " did not choose h2 by ALPN");
  });
}

void h2_link::adopt(std::unique_ptr<origin_connection> conn) {
  conn_ = std::move(conn);
  ready();
}

void h2_link::ready() {
  transport_ = transport::up;
  read();
  flush();
}

void h2_link::shut(std::string why) {
  if (closed())
    return;
  machine_.drain(link_machine::clock::now());
  if (load() == 0 && transport_ == transport::up && !pump_.writing && !codec_->inside()) {
    codec_->terminate(h2_code::no_error);
    flush(); // the GOAWAY leaves; the connection closes when the session wants nothing more
    if (pump_.writing)
      return;
  }
  broken(stream_ending::connection, std::move(why));
}

void h2_link::retire(std::string why) {
  if (closed())
    return;
  if (load() == 0)
    return shut(std::move(why));
  machine_.drain(link_machine::clock::now());
  rearm(); // drained: shut when the last stream ends (check())
}

void h2_link::flush() {
  if (closed() || transport_ != transport::up || pump_.writing)
    return;
  if (codec_->inside()) {
    pump_.flush_wanted = true;
    return;
  }
  pump_.flush_wanted = false;
  out_.clear();
  if (!codec_->produce(out_, write_bytes))
    return broken(stream_ending::protocol, "HTTP/2 session failed: " + codec_->failure().text);
  if (closed())
    return;
  if (out_.empty()) {
    if (pump_.flush_wanted)
      return flush();
    if (!codec_->alive()) {
      // The codec ended the connection: the server broke the protocol (its GOAWAY said why), or
      // the session has nothing more to do.
      const auto& failure = codec_->failure();
      if (failure.kind != http2::h2_failure::none)
        return broken(stream_ending::protocol, "HTTP/2 connection error from " + where_.origin->key + ": " + failure.text);
      broken(stream_ending::connection, "the HTTP/2 session ended");
    }
    return;
  }
  pump_.writing = true;
  auto self = shared_from_this();
  with_stream([&](auto& stream) {
    asio::async_write(stream, asio::buffer(out_), [self](const error_code& ec, std::size_t) {
      self->pump_.writing = false;
      if (self->closed())
        return;
      if (ec)
        return self->broken(stream_ending::connection, "connection to " + self->where_.origin->key + " lost: " + ec.message());
      self->flush();
    });
  });
}

void h2_link::read() {
  auto self = shared_from_this();
  with_stream([&](auto& stream) {
    stream.async_read_some(asio::buffer(in_), [self](const error_code& ec, std::size_t n) {
      if (self->closed())
        return;
      if (ec)
        return self->broken(stream_ending::connection,
                            "connection to " + self->where_.origin->key +
                                (ec == asio::error::eof ? " closed by the server" : " lost: " + ec.message()));
      const bool ok = self->codec_->receive(reinterpret_cast<const std::uint8_t*>(self->in_.data()), n);
      if (self->closed())
        return;
      if (!ok) {
        // A fatal connection error (bad frames, a flood the codec refuses): its GOAWAY goes out,
        // then the connection closes.
        self->machine_.drain(link_machine::clock::now());
        self->flush();
        return self->broken(stream_ending::protocol, "HTTP/2 connection error from " + self->where_.origin->key + ": " +
                                                         self->codec_->failure().text);
      }
      self->flush();
      if (self->closed())
        return;
      self->rearm();
      self->read();
    });
  });
}

void h2_link::broken(stream_ending how, std::string detail) {
  if (closed())
    return;
  auto self = shared_from_this();
  const bool was_up = transport_ == transport::up;
  timer_.cancel();
  machine_.lost(); // the pool forgets it (h2_client::moved)
  auto calls = std::move(carried_);
  carried_.clear();
  auto waiting = std::move(waiting_);
  waiting_.clear();
  if (conn_)
    conn_->close();
  // In stream order: lower ids were sent first.
  std::sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a->stream_id < b->stream_id; });
  for (auto& call : calls) {
    const auto id = call->stream_id;
    codec_->detach(id);
    call->link = nullptr;
    call->stream_id = 0;
    if (call->finished)
      continue;
    if (!was_up)
      owner_.end(call, {how, 0, detail});
    else if (!call->got_head && !codec_->has_stream(id))
      owner_.refused(call, this, detail); // still held by the session: the server never saw it
    else
      owner_.end(call, {how, goaway_code_, detail});
  }
  for (auto& call : waiting) { // never sent: the server's SETTINGS had not come
    if (call->finished || call->link != this)
      continue;
    call->link = nullptr;
    if (!was_up)
      owner_.end(call, {how, 0, detail});
    else
      owner_.refused(call, this, detail);
  }
}

void h2_link::rearm() {
  const auto next = machine_.next_check();
  // One wait at a time: a later check than the one armed is found when that one fires.
  if (!next || (timer_at_ && *timer_at_ <= *next))
    return;
  timer_at_ = next;
  timer_.expires_at(*next);
  auto self = shared_from_this();
  timer_.async_wait([self](const error_code& ec) {
    if (ec || self->closed())
      return;
    self->timer_at_.reset();
    self->check();
  });
}

void h2_link::check() {
  switch (machine_.due(link_machine::clock::now())) {
    case link_due::nothing:
      break;
    case link_due::idle:
      return shut("no call for downstream_idle_timeout_ms");
    case link_due::drained:
      return shut("no stream left on a draining connection");
    case link_due::quiet:
      return broken(stream_ending::connection,
                    "no frame from " + where_.origin->key + " for downstream_drain_quiet_ms on a connection going away");
  }
  maybe_idle();
  if (!closed())
    rearm();
}

void h2_link::maybe_idle() {
  if (machine_.in_use() == 0 && !closed())
    owner_.idle(*this);
}

} // namespace gather::downstream_loop
