// The downstream HTTP/1.1 client: over Boost.Beast on the Asio event loops, its keep-alive links
// in each loop's pool (origin_pool.hpp), per scheme://host:port. Other threads only post to a loop (submit, cancel);
// everything else belongs to the loop's thread, so the pools, the running transfers and their
// sockets need no lock.
//
// One transfer: take an idle connection for its origin or connect a new one (a host name looked up
// on that name's own thread, name_lookups.hpp; TLS with SNI and certificate and host name
// verification for https), write the request, read the response with Beast's parser bounded by
// max_body_bytes (response_reading.hpp: the status and the body kept, no header map), hand the
// connection back to the pool when the response allows keep-alive. One timer bounds the whole
// transfer (connect, send, a trickling body). A reused connection that the server closed while idle
// fails before any byte of the answer: then, and only then, the request is sent once more on a new one.
#include "h1/h1_client.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cerrno>
#include <deque>
#include <stdexcept>
#include <utility>

#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/http/error.hpp>

#include "gather/config/port.hpp"
#include "gather/downstream/h1/h1_link.hpp"

#include "gather/downstream/call/call_deadlines.hpp"
#include "pool/retire_epoch.hpp"

namespace gather::downstream_loop {

using namespace std::string_view_literals; // appends of literals without a strlen each

namespace {

/// The request's bytes, head and body, written in place at their final size: an append per
/// piece (a call into libstdc++ each, ~50 instructions) was ~420 instructions a call for S1's
/// requests (bench/callgrind.sh 4 200).
void write_request(std::string& bytes, const transfer_request& request, const origin_and_target& where) {
  const bool with_length = !request.body.empty() || request.method != "GET"sv;
  std::array<char, 24> length{};
  std::size_t length_size = 0;
  if (with_length)
    length_size = static_cast<std::size_t>(
        std::to_chars(length.data(), length.data() + length.size(), request.body.size()).ptr - length.data());
  const std::string_view pieces[] = {request.method,
                                     " "sv,
                                     where.target,
                                     " HTTP/1.1\r\nHost: "sv,
                                     where.origin->host_header,
                                     "\r\n"sv,
                                     request.header_lines,
                                     with_length ? "Content-Length: "sv : ""sv,
                                     {length.data(), length_size},
                                     with_length ? "\r\n"sv : ""sv,
                                     "\r\n"sv,
                                     request.body};
  std::size_t size = 0;
  for (const auto piece : pieces)
    size += piece.size();
  bytes.resize(size);
  char* at = bytes.data();
  for (const auto piece : pieces)
    at += piece.copy(at, piece.size());
}

} // namespace

void h1_client::start(std::uint64_t id, transfer_request&& request, downstream_client::completion&& done,
                      inflight_ticket ticket, bool offer_h2) {
  if (retire_epoch().load(std::memory_order_relaxed) != retire_seen_)
    close_retired();
  auto t = std::make_shared<transfer>();
  t->id = id;
  t->done = std::move(done);
  t->max_body_bytes = request.max_body_bytes;
  auto where = split_url(request.url, request.target, request.origin.get());
  const auto& lines = request.header_lines;
  const bool lines_ended = lines.empty() || (lines.size() >= 2 && std::string_view{lines}.substr(lines.size() - 2) == "\r\n"sv);
  const bool nowhere = request.target && request.target->address.empty();
  if (!where || !lines_ended || nowhere) {
    ticket.release(); // out of flight now: its completion only waits for submit() to return
    transfer_result result;
    result.error = nowhere ? transfer_error::connect : transfer_error::protocol;
    // (A block without its last CRLF would end the request's head inside it: never sent.)
    result.detail = nowhere ? request.target->detail
                    : !where ? "not an http or https URL" : "header lines not ended by CRLF";
    // Posted: start() may run inside submit(), and `done` never runs before submit() returns.
    return asio::post(loop_, [t, result = std::move(result)]() mutable { t->done(std::move(result)); });
  }
  t->where = std::move(*where);
  write_request(t->request_bytes, request, t->where);
  t->ticket = std::move(ticket);
  running_.emplace(id, t);
  // At least 1 ms; the one timer bounds connect, send and a trickling body together.
  const auto timeout = std::chrono::microseconds{std::max(request.timeout, std::chrono::milliseconds{1})};
  if (offer_h2 && t->where.origin->tls)
    return start_offering(t, std::move(request), timeout);
  arm_call(deadlines_, *t, timeout, request.slow_after, std::move(request.slow));
  reuse_or_connect(t);
}

void h1_client::came_due(std::uint64_t id, call_deadlines::step what) {
  const auto it = running_.find(id);
  if (it == running_.end())
    return;
  const auto t = it->second; // held: its failure takes it out of running_
  downstream_loop::came_due(deadlines_, *t, what,
                            [&] { fail(*t, transfer_error::timeout, "the transfer's timeout passed"); });
}

void h1_client::reuse_or_connect(const std::shared_ptr<transfer>& t) {
  if (auto idle = pool_.take_h1(t->where.origin->key)) {
    t->conn = std::move(idle);
    t->reused = true;
    return send(t);
  }
  connect(t);
}

void h1_client::abandon(std::uint64_t id) {
  auto it = running_.find(id);
  if (it == running_.end())
    return;
  auto t = it->second;
  running_.erase(it);
  t->ticket.release();
  t->finished = true;
  disarm_call(deadlines_, *t);
  if (t->conn)
    t->conn->close(); // the downstream sees the connection close
  if (t->offer && t->offer->probing)
    probe_lost(t->where.origin->key);
}

void h1_client::connect(const std::shared_ptr<transfer>& t) {
  const bool probe = t->offer != nullptr; // (only a probing transfer connects with an offer)
  t->conn = std::make_unique<origin_connection>(loop_, tls_context_for(t->where, probe ? tls_h2_ : tls_, probe),
                                                t->where.origin->tls);
  t->conn->key = t->where.origin->key;
  t->conn->endpoint = t->where.origin->endpoint;
  h1_link::made(t->conn->link, h1_link::bounds_of(t->where.origin->endpoint, pool_.bounds().links), link_machine::clock::now());
  t->reused = false;
  error_code ec;
  const auto address = asio::ip::make_address(t->where.origin->host, ec);
  if (!ec) { // an IP address: no lookup
    const tcp::endpoint endpoint{address, static_cast<unsigned short>(*parse_port(t->where.origin->port))};
    if (!t->where.origin->tls)
      return connect_and_send(t, endpoint);
    return t->conn->lowest().async_connect(endpoint, [this, t](const error_code& cec) {
      connected(t, cec);
    });
  }
  // On the name's own thread (name_lookups.hpp): a name that never resolves delays no other.
  lookups_.resolve(t->where.origin->host, t->where.origin->port, loop_, [this, t](const error_code& rec, name_lookups::endpoints found) {
    if (t->finished)
      return;
    if (rec)
      return fail(*t, transfer_error::connect, "could not resolve " + t->where.origin->host + ": " + rec.message());
    asio::async_connect(t->conn->lowest(), found, [this, t](const error_code& cec, const tcp::endpoint&) {
      connected(t, cec);
    });
  });
}

void h1_client::connect_and_send(const std::shared_ptr<transfer>& t, const tcp::endpoint& endpoint) {
  auto& socket = t->conn->socket;
  error_code ec;
  socket.open(endpoint.protocol(), ec);
  if (!ec)
    socket.non_blocking(true, ec); // Asio's own operations then set nothing more
  if (!ec)
    socket.set_option(tcp::no_delay(true), ec);
  if (!ec && ::connect(socket.native_handle(), endpoint.data(), endpoint.size()) != 0 && errno != EINPROGRESS)
    ec = error_code(errno, asio::error::get_system_category());
  if (ec)
    return connected(t, ec);
  t->connecting = true; // until the request has left: a failure before is the connect's
  send(t);
}

void h1_client::connected(const std::shared_ptr<transfer>& t, const error_code& ec) {
  if (t->finished)
    return;
  if (ec)
    return fail(*t, transfer_error::connect, "could not connect to " + t->where.origin->key + ": " + ec.message());
  error_code ignored;
  t->conn->lowest().set_option(tcp::no_delay(true), ignored);
  if (!t->conn->tls_stream)
    return send(t);
  auto& stream = *t->conn->tls_stream;
  verify_host(stream, tls_name_of(t->where));
  stream.async_handshake(asio::ssl::stream_base::client, [this, t](const error_code& hec) {
    if (t->finished)
      return;
    if (hec)
      return fail(*t, transfer_error::connect, "TLS handshake with " + t->where.origin->key + " failed: " + hec.message());
    if (t->offer)
      return alpn_answered(t);
    send(t);
  });
}

void h1_client::send(const std::shared_ptr<transfer>& t) {
  h1_link::sending(t->conn->link);
  std::size_t sent = 0;
  if (!t->conn->tls_stream) {
    // One non-blocking send first: a request nearly always fits the socket's buffer whole, and
    // then the answer's read starts in this turn of the loop, not in an async_write's posted
    // completion (one handler, often one epoll_wait, fewer per call). What did not fit goes on
    // as before.
    const auto& bytes = t->request_bytes;
    const auto n = ::send(t->conn->socket.native_handle(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(bytes.size())) {
      t->connecting = false;
      return receive(t);
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return lost_connection(t, error_code(errno, asio::error::get_system_category()));
    sent = n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  with_stream(*t->conn, [&](auto& stream) {
    asio::async_write(stream, asio::buffer(t->request_bytes) + sent, [this, t](const error_code& ec, std::size_t) {
      if (t->finished)
        return;
      if (ec)
        return lost_connection(t, ec);
      t->connecting = false;
      receive(t);
    });
  });
}

void h1_client::receive(const std::shared_ptr<transfer>& t) {
  t->parser.emplace(body_slack_bytes);
  limit_response(*t->parser, t->max_body_bytes);
  t->head_bytes = 0;
  // A pooled connection's buffer is empty (give_back); a new one's too: the answer is read first.
  read_some(t);
}

void h1_client::read_some(const std::shared_ptr<transfer>& t) {
  auto& buffer = t->conn->buffer;
  // As Beast's own reads size them: what the buffer has spare, at least 512, at most 64 KiB.
  const auto room = boost::beast::read_size(buffer, 65536);
  if (room == 0)
    return fail(*t, transfer_error::protocol, "malformed response from " + t->where.origin->key + ": buffer full");
  with_stream(*t->conn, [&](auto& stream) {
    stream.async_read_some(buffer.prepare(room), [this, t](error_code ec, std::size_t n) {
      if (t->finished)
        return;
      auto& parser = *t->parser;
      t->conn->buffer.commit(n);
      if (ec == asio::error::eof) { // the server closed: the end of an answer read to its close?
        if (!parser.got_some())
          return read_failed(t, boost::beast::http::error::end_of_stream);
        ec = {};
        parser.put_eof(ec);
        if (ec)
          return read_failed(t, ec);
        return answered(t);
      }
      if (ec)
        return read_failed(t, ec);
      parse(t);
    });
  });
}

void h1_client::parse(const std::shared_ptr<transfer>& t) {
  auto& parser = *t->parser;
  auto& buffer = t->conn->buffer;
  while (buffer.size() > 0 && !parser.is_done()) {
    error_code ec;
    const bool in_head = !parser.is_header_done();
    const auto used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (in_head) {
      t->head_bytes += used;
      if (parser.is_header_done()) {
        if (!head_within_cap(t->head_bytes))
          return fail(*t, transfer_error::protocol,
                      "malformed response from " + t->where.origin->key + ": header limit exceeded");
        parser.eager(true); // the head is checked: the body is parsed as far as it has come
      }
    }
    if (ec == boost::beast::http::error::need_more)
      break;
    if (ec)
      return read_failed(t, ec);
  }
  if (parser.is_done())
    return answered(t);
  read_some(t);
}

void h1_client::lost_connection(const std::shared_ptr<transfer>& t, const error_code& ec) {
  if (t->connecting)
    return connected(t, ec);
  if (t->reused && !t->resent) {
    t->resent = true;
    t->conn->close();
    return connect(t);
  }
  fail(*t, transfer_error::connect, "connection to " + t->where.origin->key + " lost: " + ec.message());
}

void h1_client::read_failed(const std::shared_ptr<transfer>& t, const error_code& ec) {
  switch (classify_read_failure(*t->parser, ec)) {
  case read_failure::too_large:
    return fail(*t, transfer_error::too_large, "the body exceeded max_response_bytes");
  case read_failure::lost_before_answer:
    return lost_connection(t, ec);
  case read_failure::malformed:
    return fail(*t, transfer_error::protocol, "malformed response from " + t->where.origin->key + ": " + ec.message());
  case read_failure::ended:
    break;
  }
  fail(*t, transfer_error::connect, "connection to " + t->where.origin->key + " ended: " + ec.message());
}

void h1_client::answered(const std::shared_ptr<transfer>& t) {
  auto& parser = *t->parser;
  const bool keep = parser.keep_alive();
  transfer_result result;
  result.http_status = static_cast<long>(parser.status());
  result.body = std::move(parser.body());
  auto conn = std::move(t->conn);
  finish(*t);
  const bool reusable = keep && conn->buffer.size() == 0;
  give_back(std::move(conn), reusable);
  auto done = std::move(t->done);
  done(std::move(result));
}

void h1_client::fail(transfer& t, transfer_error error, std::string detail) {
  // Closed, not destroyed: an operation still pending on it (a read cut by the timer) completes
  // into its buffer; the transfer, which its handlers hold, keeps the connection until then.
  if (t.conn)
    t.conn->close();
  finish(t);
  transfer_result result;
  result.error = error;
  result.detail = std::move(detail);
  if (t.parser && t.parser->is_header_done()) // the status line had arrived (logged as such)
    result.http_status = static_cast<long>(t.parser->status());
  auto done = std::move(t.done);
  done(std::move(result));
}

void h1_client::finish(transfer& t) {
  t.finished = true;
  disarm_call(deadlines_, t);
  t.ticket.release();
  running_.erase(t.id);
  if (t.offer && t.offer->probing)
    probe_lost(t.where.origin->key);
}

} // namespace gather::downstream_loop
