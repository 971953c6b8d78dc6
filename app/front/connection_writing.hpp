// An HTTP/1.1 connection (connection.hpp), writing: the answer (whole, or a progressive answer's
// chunks), keep-alive or the linger that ends it, and the connection's one timer for every phase
// (handshake, idle, slow request, the request's deadline and hard limit, a write that never drains).
#pragma once

#include "connection.hpp"

namespace gather {

template <class Stream>
inline void connection<Stream>::stop_stream() {
  if (started_)
    shared_.dispatch.cancel(*started_);
  started_.reset();
  sink_.reset();
  encoder_.reset();
}

template <class Stream>
inline void connection<Stream>::send_answer(http_reply reply) {
  dress_.apply(reply);
  state_ = phase::writing;
  const bool keep = keep_alive_ && !close_after_ && !shared_.draining.load(std::memory_order_relaxed);
  keep_alive_ = keep;
  queue_write(response_bytes(reply, request_id_, {version_, keep, head_only_}), true);
  head_only_ = false;
  version_ = 11;
}

template <class Stream>
inline void connection<Stream>::queue_write(std::string bytes, bool is_answer) {
  writes_.push_back({std::move(bytes), is_answer});
  if (writes_.size() == 1)
    write_front();
}

template <class Stream>
inline void connection<Stream>::write_front() {
  if (state_ != phase::streaming) // a stream's pieces leave under the request's own deadline
    set_deadline_if_none();
  boost::asio::async_write(stream_, boost::asio::buffer(writes_.front().bytes),
                           [self = this->shared_from_this()](const error_code& ec, std::size_t) {
                             self->on_written(ec);
                           });
}

template <class Stream>
inline void connection<Stream>::on_written(const error_code& ec) {
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

template <class Stream>
inline void connection<Stream>::linger() {
  state_ = phase::closing;
  error_code ignored;
  boost::beast::get_lowest_layer(stream_).shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
  buffer_.consume(buffer_.size());
  set_deadline(clock::now() + linger_limit, why::linger);
  read();
}

template <class Stream>
inline void connection<Stream>::close() {
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

template <class Stream>
inline void connection<Stream>::set_deadline(clock::time_point at, why reason) {
  deadline_ = at;
  reason_ = reason;
  if (timer_armed_ && timer_.expiry() <= at)
    return;
  timer_.expires_at(at);
  wait_timer();
}

template <class Stream>
inline void connection<Stream>::set_deadline_if_none() {
  if (reason_ == why::deadline || reason_ == why::hard_limit || reason_ == why::none)
    set_deadline(clock::now() + limits().request_timeout, why::request);
}

template <class Stream>
inline void connection<Stream>::wait_timer() {
  timer_armed_ = true;
  ++timer_waits_;
  timer_.async_wait([self = this->shared_from_this()](const error_code& ec) { self->on_timer(ec); });
}

template <class Stream>
inline void connection<Stream>::on_timer(const error_code& ec) {
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
      if (state_ == phase::streaming) // a progressive answer that never ended: cut it off
        return stop_stream(), close();
      if (started_ && sink_ && sink_->claim()) {
        auto reply = shared_.dispatch.give_up(*started_, sink_->record(), false);
        started_.reset();
        sink_.reset();
        keep_alive_ = false;
        reason_ = why::none;
        return send_answer(std::move(reply));
      }
      return; // the coordinator's answer is on its way
    case why::none:
      return;
    default: // idle, slowloris, handshake, linger, a write that never drains
      return close();
  }
}

} // namespace gather
