// An HTTP/1.1 connection (connection.hpp), reading: a request's head and body through the
// parser, its admission and start (request_dispatch), and the bytes from the socket (an idle
// connection waits without a buffer; a client that hangs up is noticed while its request runs).
#pragma once

#include "connection.hpp"

namespace gather {

template <class Stream>
inline void connection<Stream>::begin_request() {
  if (closed_)
    return;
  if (shared_.draining.load(std::memory_order_relaxed) && buffer_.size() == 0)
    return close();
  state_ = phase::reading;
  admitting_.reset(); // it points into the parser's head
  parser_.reset();    // made when the first byte of the next request arrives
  head_handled_ = false;
  close_after_ = false;
  dress_ = {};
  request_begun_ = false;
  shared_.serving.refresh(serving_); // no parser holds the old generation's limits any more
  set_deadline(clock::now() + limits().keep_alive_idle, why::idle);
  parse();
}

template <class Stream>
inline void connection<Stream>::parse() {
  while (state_ == phase::reading && !closed_) {
    if (buffer_.size() == 0)
      return read();
    if (!request_begun_) { // the first byte of a request: the slowloris clock starts
      request_begun_ = true;
      // The request's generation: every check, limit and route of this request is taken from
      // it, however long it takes and whatever is reloaded meanwhile.
      shared_.serving.refresh(serving_);
      buffer_.set_limit(buffer_limit());
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

template <class Stream>
inline bool connection<Stream>::on_head() {
  auto& head = parser_->head();
  name_client(head, peer_, peer_text_, serving_->cfg.trusted_proxies);
  count_proto(head.version);
  request_id_ = request_id_for(head);
  dress_ = answer_dress(serving_->cfg, head.header("origin"), head.header_list("accept-encoding"));
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

template <class Stream>
inline bool connection<Stream>::answer_without_body() {
  close_after_ = !parser_->is_done();
  serve({});
  return false;
}

template <class Stream>
inline void connection<Stream>::refuse_unparsed(const error_code& ec) {
  admitting_.reset();
  const auto why = parser_->refusal_for(ec);
  auto& head = parser_->head();
  head.peer = head.client = peer_text_; // its headers, if any, are not the request's
  count_proto(head.target.empty() ? 11 : head.version);
  request_id_ = head.target.empty() ? request_id_for(request_head{}) : request_id_for(head);
  keep_alive_ = false;
  close_after_ = true;
  answer_now(shared_.dispatch.refuse_unparsed(*serving_, why, head, request_id_, clock::now()));
}

template <class Stream>
inline void connection<Stream>::answer_now(http_reply reply) {
  arrived_ = clock::now();
  state_ = phase::waiting;
  version_ = parser_->head().target.empty() ? 11 : parser_->head().version;
  send_answer(std::move(reply));
}

template <class Stream>
inline void connection<Stream>::serve(std::string body) {
  arrived_ = clock::now();
  state_ = phase::waiting;
  head_only_ = parser_->head().method == "HEAD";
  version_ = parser_->head().version;
  auto sink = std::make_shared<connection_sink>(stream_.get_executor(), this->weak_from_this());
  if (!admitting_) // else admitted on its head already: the route stays matched
    admitting_.emplace(*serving_, parser_->head(), request_id_, shared_.stats);
  auto result = shared_.dispatch.serve(serving_, *admitting_, std::move(body), arrived_, sink);
  admitting_.reset();
  // What the request needs is copied out: its head goes now, while its memory is in the cache,
  // not after the answer, when hundreds of other requests have pushed it out.
  parser_.reset();
  if (auto* reply = std::get_if<http_reply>(&result))
    return send_answer(std::move(*reply));
  started_ = std::move(std::get<started_request>(result));
  sink_ = std::move(sink);
  hold_ = this->shared_from_this(); // until the answer comes or the connection closes
  set_deadline(started_->deadline, why::deadline);
  read(); // watches for a client that hangs up; reads ahead a pipelined request
}

template <class Stream>
inline void connection<Stream>::count_proto(int version) {
  if (proto_counted_)
    return;
  proto_counted_ = true;
  shared_.stats.count_connection(version == 10 ? inbound_proto::http10 : inbound_proto::http11);
}

template <class Stream>
inline void connection<Stream>::read() {
  if (read_pending_ || closed_)
    return;
  if constexpr (!is_tls) {
    // An idle keep-alive connection waits for readability with no buffer at all, and gives
    // its buffer back: 10,000 idle connections then cost no read buffers. (Not over TLS: a
    // record already decrypted inside OpenSSL would never make the socket readable.)
    if (state_ == phase::reading && !request_begun_ && buffer_.size() == 0) {
      buffer_.release();
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

template <class Stream>
inline void connection<Stream>::read_now() {
  if (read_pending_ || closed_)
    return;
  if (buffer_.room() == 0)
    return; // read ahead no further while a request is in flight (parse() drains it later)
  read_pending_ = true;
  stream_.async_read_some(buffer_.begin_read(read_chunk),
                          [self = this->shared_from_this()](const error_code& ec, std::size_t n) {
                            self->read_pending_ = false;
                            self->buffer_.end_read(ec ? 0 : n);
                            self->on_read(ec);
                          });
}

template <class Stream>
inline void connection<Stream>::on_read(const error_code& ec) {
  if (closed_)
    return;
  if (ec)
    return on_read_end();
  switch (state_) {
    case phase::reading: return parse();
    case phase::closing: buffer_.consume(buffer_.size()); return read();
    default: return read();
  }
}

template <class Stream>
inline void connection<Stream>::on_read_end() {
  if (state_ == phase::streaming) // mid-answer: what still runs is cancelled
    return stop_stream(), close();
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

} // namespace gather
